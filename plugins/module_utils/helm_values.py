# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kueue-aware Helm values for kueue_helm: render, check, read back.

What the upstream chart (charts/kueue, 0.13 through 0.19) actually reads:

* ``.Values.controllerManager.featureGates``: a list of ``{name, enabled}``;
  ``_helpers.tpl`` ``kueue.featureGates`` renders it as ONE container arg
  ``--feature-gates=<name>=<enabled>,...`` (``printf "%s=%t,"``, so ``enabled``
  must be a real boolean; an empty list renders no arg at all).
* ``.Values.managerConfig.controllerManagerConfigYaml``: a *string* holding the
  Kueue Configuration, parsed with ``fromYaml`` into the
  ``<fullname>-manager-config`` ConfigMap (key ``controller_manager_config.yaml``)
  and by the webhook templates.

No template reads any other ``featureGates``, ``managerConfig`` or
``controllerManagerConfigYaml`` path, so values placed anywhere else are
silently ignored; ``detect_misnested_values`` finds them.

The Kueue manager (cmd/kueue/main.go, ``LoadAndValidateFeatureGates``) exits
with "feature gates for CLI and configuration cannot both specified" when
``--feature-gates`` is set and the Configuration has a non-null
``featureGates`` key; ``detect_feature_gate_conflict`` refuses that.
"""

import copy

try:
    import yaml
    HAS_YAML = True
except ImportError:  # pragma: no cover - exercised only without PyYAML
    yaml = None
    HAS_YAML = False

from ansible_collections.kueueops.aks.plugins.module_utils.errors import KueueOpsError
from ansible_collections.kueueops.aks.plugins.module_utils import kueue_catalog
from ansible_collections.kueueops.aks.plugins.module_utils.manager_config import MISSING, get_path, require_yaml

CONFIG_PATH = "managerConfig.controllerManagerConfigYaml"
GATES_PATH = "controllerManager.featureGates"
CONFIGMAP_KEY = "controller_manager_config.yaml"

_RIGHT_SHAPE = (
    "The chart reads exactly two Kueue-specific paths: controllerManager.featureGates (a list of "
    "{name: <Gate>, enabled: true|false}) and the TOP-LEVEL managerConfig.controllerManagerConfigYaml "
    "(a string holding the whole Kueue Configuration). Better: drop them from values and use the module's "
    "feature_gates option (a dict) and integrations option (a list of framework names), which render "
    "both for the chosen Kueue version and keep the rest of the chart's default configuration")


def deep_merge(base, override):
    """A new dict: override merged recursively over base (dicts merge, the rest replaces)."""
    out = copy.deepcopy(base) if isinstance(base, dict) else {}
    for key, value in (override or {}).items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


# ---------------------------------------------------------------- mis-nesting

_WATCHED_KEYS = ("managerConfig", "controllerManagerConfigYaml", "featureGates", "integrations")
_VALID_PATHS = {
    "managerConfig": ("managerConfig",),
    "controllerManagerConfigYaml": ("managerConfig.controllerManagerConfigYaml",),
    "featureGates": ("controllerManager.featureGates",),
    # the chart has no values key named integrations at all
    "integrations": (),
}


def _walk(node, prefix, out):
    if not isinstance(node, dict):
        return
    for key, value in node.items():
        path = "%s.%s" % (prefix, key) if prefix else str(key)
        if key in _WATCHED_KEYS and path not in _VALID_PATHS[key]:
            out.append(path)
            continue  # one problem per mistake, not one per nested key
        _walk(value, path, out)


def detect_misnested_values(values):
    """Problems (strings) for Kueue settings the chart would silently ignore.

    Returns [] for well-shaped values. Every problem names the wrong path, says
    the chart ignores it, and gives the right shape.
    """
    problems = []
    if not values:
        return problems
    if not isinstance(values, dict):
        return ["values must be a mapping, got %s." % type(values).__name__]
    wrong = []
    _walk(values, "", wrong)
    for path in wrong:
        leaf = path.rsplit(".", 1)[-1]
        if leaf == "managerConfig":
            what = ("%s is ignored by the Kueue chart: managerConfig must be a TOP-LEVEL key, not nested under "
                    "%s, so the Configuration in it (integrations, featureGates, ...) never takes effect. "
                    "Move it to managerConfig.controllerManagerConfigYaml at the top level"
                    % (path, path.rsplit(".", 1)[0]))
        elif leaf == "controllerManagerConfigYaml":
            what = ("%s is ignored by the Kueue chart; the Configuration string belongs at "
                    "managerConfig.controllerManagerConfigYaml (top-level managerConfig)" % path)
        elif leaf == "featureGates":
            what = ("%s is ignored by the Kueue chart; feature gates on the command line belong at "
                    "controllerManager.featureGates as a list of {name, enabled}" % path)
        else:
            what = ("%s is ignored by the Kueue chart; integration frameworks are part of the Configuration "
                    "string managerConfig.controllerManagerConfigYaml (integrations.frameworks)" % path)
        problems.append("%s. %s." % (what, _RIGHT_SHAPE))
    problems.extend(_shape_problems(values))
    return problems


def _shape_problems(values):
    problems = []
    cfg = get_path(values, CONFIG_PATH)
    if cfg is not None and not isinstance(cfg, str):
        problems.append(
            "managerConfig.controllerManagerConfigYaml is a %s, but the chart expects a string (it runs "
            "fromYaml on it, so a mapping fails to render). Write it as a YAML block string "
            "(controllerManagerConfigYaml: |) or use the module's integrations option. %s."
            % (type(cfg).__name__, _RIGHT_SHAPE))
    elif isinstance(cfg, str) and HAS_YAML:
        try:
            parsed = yaml.safe_load(cfg)
        except yaml.YAMLError as exc:
            problems.append("managerConfig.controllerManagerConfigYaml is not valid YAML: %s." % _yaml_err(exc))
        else:
            if parsed is not None and not isinstance(parsed, dict):
                problems.append("managerConfig.controllerManagerConfigYaml must hold a Kueue Configuration "
                                "mapping, got %s." % type(parsed).__name__)
    gates = get_path(values, GATES_PATH)
    if gates is not None:
        if isinstance(gates, dict):
            problems.append(
                "controllerManager.featureGates is a mapping, but the chart expects a list of {name, enabled} "
                "(e.g. - name: TopologyAwareScheduling / enabled: true). Or pass the mapping as the module's "
                "feature_gates option, which converts it.")
        elif not isinstance(gates, list):
            problems.append("controllerManager.featureGates must be a list of {name, enabled}, got %s."
                            % type(gates).__name__)
        else:
            for i, item in enumerate(gates):
                if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                    problems.append("controllerManager.featureGates[%d] must be a mapping with a string name "
                                    "and a boolean enabled, got %r." % (i, item))
                elif not isinstance(item.get("enabled"), bool):
                    problems.append(
                        "controllerManager.featureGates[%d] (%s): enabled must be a boolean true/false, got %r; "
                        "the chart renders it with %%t, so anything else becomes a malformed --feature-gates "
                        "flag and the manager exits." % (i, item["name"], item.get("enabled")))
    return problems


def _yaml_err(exc):
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    if mark is not None:
        return "%s (line %d, column %d)" % (problem, mark.line + 1, mark.column + 1)
    return problem


# ------------------------------------------------------------ gate conflicts

def yaml_mapping(text):
    """``text`` parsed as a YAML mapping (a manager Configuration), or None when it is not one."""
    if not isinstance(text, str) or not text.strip() or not HAS_YAML:
        return None
    try:
        parsed = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    return parsed if isinstance(parsed, dict) else None


def _config_dict(values):
    return yaml_mapping(get_path(values, CONFIG_PATH))


def detect_feature_gate_conflict(values, config_yaml_source=None):
    """Problems when gates are set both as --feature-gates and in the Configuration.

    ``values`` are the final values; the Configuration is
    ``managerConfig.controllerManagerConfigYaml`` in them, else
    ``config_yaml_source`` (the chart default). Mirrors Kueue's check: the flag
    is rendered for a non-empty list, and the Configuration counts when its
    ``featureGates`` key is present and not null (even ``{}``).
    """
    gates = get_path(values, GATES_PATH)
    if not (isinstance(gates, list) and gates):
        return []
    cfg = _config_dict(values)
    where = "values.managerConfig.controllerManagerConfigYaml"
    if cfg is None and config_yaml_source and HAS_YAML:
        try:
            cfg = yaml.safe_load(config_yaml_source)
        except yaml.YAMLError:
            cfg = None
        where = "the chart's default managerConfig.controllerManagerConfigYaml"
    if not isinstance(cfg, dict) or cfg.get("featureGates") is None:
        return []
    return [
        "feature gates are set in two places: on the command line (controllerManager.featureGates -> "
        "--feature-gates %s) and inside the Configuration (featureGates: in %s). The Kueue manager exits on "
        "startup with 'feature gates for CLI and configuration cannot both specified'. Keep one: remove the "
        "featureGates key from the Configuration and use the module's feature_gates option."
        % (",".join(sorted(str(g.get("name")) for g in gates if isinstance(g, dict))), where)]


# ------------------------------------------------------------------- render

def _as_bool(name, value):
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "yes", "on", "1"):
        return True
    if isinstance(value, str) and value.strip().lower() in ("false", "no", "off", "0"):
        return False
    raise KueueOpsError("feature gate %r must be true or false, got %r" % (name, value), field="feature_gates")


def render_feature_gates(feature_gates):
    """{'B': True, 'A': False} -> [{'name': 'A', 'enabled': False}, {'name': 'B', 'enabled': True}]."""
    return [{"name": str(n), "enabled": _as_bool(n, feature_gates[n])} for n in sorted(feature_gates, key=str)]


def chart_default_config_yaml(chart_values_text):
    """managerConfig.controllerManagerConfigYaml out of ``helm show values`` output."""
    require_yaml()
    try:
        vals = yaml.safe_load(chart_values_text) or {}
    except yaml.YAMLError as exc:
        raise KueueOpsError("cannot parse the chart's default values: %s" % _yaml_err(exc), field="chart_ref")
    cfg = get_path(vals, CONFIG_PATH)
    if not isinstance(cfg, str):
        raise KueueOpsError("the chart's default values have no string managerConfig.controllerManagerConfigYaml; "
                            "is chart_ref a Kueue chart?", field="chart_ref")
    return cfg


def render_values(version, feature_gates, integrations, user_values, default_manager_config_yaml):
    """The values dict to hand to helm.

    * ``feature_gates`` -> ``controllerManager.featureGates`` (sorted list of {name, enabled}).
    * ``integrations`` -> ``integrations.frameworks`` in the top-level
      ``managerConfig.controllerManagerConfigYaml``: the chart's default
      Configuration (``default_manager_config_yaml``) with frameworks replaced,
      apiVersion set to the Kueue version's Configuration apiVersion, the rest
      kept. When the user's values already carry a Configuration string without
      ``integrations.frameworks``, that Configuration is the base instead.
    * ``user_values`` are deep-merged underneath.

    Raises KueueOpsError for mis-nested values, a user value that the module's
    own option also sets, and gates set both on the command line and in the
    Configuration. Name validation against the catalog is the caller's job
    (kueue_catalog.validate_*), so an unknown Kueue version still renders.
    """
    require_yaml()
    user_values = copy.deepcopy(user_values or {})
    if not isinstance(user_values, dict):
        raise KueueOpsError("values must be a mapping, got %s" % type(user_values).__name__, field="values")
    problems = detect_misnested_values(user_values)
    if problems:
        raise KueueOpsError(" ".join(problems), field="values",
                            fix="use the top-level managerConfig.controllerManagerConfigYaml string and "
                                "controllerManager.featureGates list, or the module's integrations and "
                                "feature_gates options")

    rendered = {}
    if feature_gates:
        if not isinstance(feature_gates, dict):
            raise KueueOpsError("feature_gates must be a mapping of gate name to true/false", field="feature_gates")
        if get_path(user_values, GATES_PATH) not in (None, []):
            raise KueueOpsError(
                "feature gates are given twice: by the feature_gates option and by values.controllerManager."
                "featureGates", field="feature_gates",
                fix="set feature gates in one place only, preferably the feature_gates option")
        rendered["controllerManager"] = {"featureGates": render_feature_gates(feature_gates)}

    if integrations is not None:
        rendered["managerConfig"] = {"controllerManagerConfigYaml": _render_config(
            version, integrations, user_values, default_manager_config_yaml)}

    final = deep_merge(user_values, rendered)
    conflict = detect_feature_gate_conflict(final, default_manager_config_yaml)
    if conflict:
        raise KueueOpsError(conflict[0], field="feature_gates",
                            fix="remove featureGates from the Configuration (controllerManagerConfigYaml) and keep "
                                "the feature_gates option")
    return final


def _render_config(version, integrations, user_values, default_yaml):
    if not isinstance(integrations, (list, tuple)) or not all(isinstance(n, str) for n in integrations):
        raise KueueOpsError("integrations must be a list of framework names", field="integrations")
    user_cfg_text = get_path(user_values, CONFIG_PATH)
    from_user = isinstance(user_cfg_text, str) and user_cfg_text.strip() != ""
    if from_user:
        cfg = yaml.safe_load(user_cfg_text) or {}
        if get_path(cfg, "integrations.frameworks", MISSING) is not MISSING:  # present, even as null
            raise KueueOpsError(
                "integration frameworks are given twice: by the integrations option and by integrations.frameworks "
                "in values.managerConfig.controllerManagerConfigYaml", field="integrations",
                fix="list the frameworks in one place only, preferably the integrations option")
        source = "values.managerConfig.controllerManagerConfigYaml"
    else:
        if not isinstance(default_yaml, str) or not default_yaml.strip():
            raise KueueOpsError("the chart's default managerConfig.controllerManagerConfigYaml is needed to render "
                                "integrations and was not found", field="integrations")
        try:
            cfg = yaml.safe_load(default_yaml) or {}
        except yaml.YAMLError as exc:
            raise KueueOpsError("the chart's default controllerManagerConfigYaml is not valid YAML: %s"
                                % _yaml_err(exc), field="chart_ref")
        source = "chart default"
    if not isinstance(cfg, dict):
        raise KueueOpsError("the Configuration in %s is not a mapping" % source, field="integrations")

    rel = kueue_catalog.catalog_for(version)
    if rel is not None:
        api = cfg.get("apiVersion")
        if not from_user or not api:
            cfg["apiVersion"] = rel.config_api_version
        elif str(api).rsplit("/", 1)[-1] not in rel.config_api_versions_compiled:
            raise KueueOpsError(
                "values.managerConfig.controllerManagerConfigYaml has apiVersion %s, which Kueue %s does not "
                "understand (it knows %s)" % (api, rel.minor, ", ".join(
                    "config.kueue.x-k8s.io/" + v for v in rel.config_api_versions_compiled)),
                field="values", fix="use apiVersion %s" % rel.config_api_version)
    cfg.setdefault("kind", "Configuration")
    ints = cfg.get("integrations")
    if not isinstance(ints, dict):
        ints = {}
    ints["frameworks"] = list(integrations)
    cfg["integrations"] = ints
    return yaml.safe_dump(cfg, default_flow_style=False, sort_keys=False)
