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
import json
import os

from ansible_collections.kueueops.aks.plugins.module_utils.common.yaml_docs import HAS_YAML, yaml

from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import KueueOpsError, is_dns_subdomain
from ansible_collections.kueueops.aks.plugins.module_utils.kueue import kueue_catalog
from ansible_collections.kueueops.aks.plugins.module_utils.kueue.manager_config import MISSING, get_path, require_yaml

CONFIG_PATH = "managerConfig.controllerManagerConfigYaml"
GATES_PATH = "controllerManager.featureGates"

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


def render_values(version, feature_gates, integrations, user_values, default_manager_config_yaml, notes=None,
                  option_params=None):
    """The values dict to hand to helm.

    * ``feature_gates`` -> ``controllerManager.featureGates`` (sorted list of {name, enabled}).
    * ``integrations`` -> ``integrations.frameworks`` in the top-level
      ``managerConfig.controllerManagerConfigYaml``: the chart's default
      Configuration (``default_manager_config_yaml``) with frameworks replaced,
      apiVersion set to the Kueue version's Configuration apiVersion, the rest
      kept. When the user's values already carry a Configuration string without
      ``integrations.frameworks``, that Configuration is the base instead.
    * ``user_values`` are deep-merged underneath.
    * The chart-value options of ``option_params`` (``CHART_VALUE_OPTIONS``) are laid over the rest.

    * A Configuration of the user's in an apiVersion the Kueue version no longer
      decodes (the AKS document's config.kueue.x-k8s.io/v1beta1 for Kueue
      0.20+) is converted as Kueue converts it (``config_for_release``), a line
      added to ``notes``; what the conversion would drop is refused.

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
            version, integrations, user_values, default_manager_config_yaml, notes)}
    else:
        _convert_user_config(version, user_values, notes)

    final = deep_merge(deep_merge(user_values, rendered), chart_option_values(option_params or {}, user_values))
    conflict = detect_feature_gate_conflict(final, default_manager_config_yaml)
    if conflict:
        raise KueueOpsError(conflict[0], field="feature_gates",
                            fix="remove featureGates from the Configuration (controllerManagerConfigYaml) and keep "
                                "the feature_gates option")
    return final


def _render_config(version, integrations, user_values, default_yaml, notes=None):
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
        if not from_user or not cfg.get("apiVersion"):
            cfg["apiVersion"] = rel.config_api_version
        else:
            cfg = config_for_release(rel, cfg, notes)
    cfg.setdefault("kind", "Configuration")
    ints = cfg.get("integrations")
    if not isinstance(ints, dict):
        ints = {}
    ints["frameworks"] = list(integrations)
    cfg["integrations"] = ints
    return yaml.safe_dump(cfg, default_flow_style=False, sort_keys=False)


CONFIG_GROUP = "config.kueue.x-k8s.io"
# What Kueue's own conversion of a Configuration from v1beta1 to v1beta2 drops (sigs.k8s.io/kueue v0.19.2,
# apis/config/v1beta1/zz_generated.conversion.go "requires manual conversion: does not exist in peer-type", and
# configuration_conversion.go, which converts nothing for them): the key, and what replaces it (the deprecation
# notes of apis/config/v1beta1/configuration_types.go).
CONFIG_V1BETA1_DROPPED = (
    ("queueVisibility", "the visibility API (feature gate VisibilityOnDemand), which replaced it"),
    ("integrations.podOptions", "managedJobsNamespaceSelector, which replaced it"),
)
# configuration_conversion.go: fairSharing and waitForPodsReady lose `enable` (absent or false drops the section),
# with these defaults filled in when the section is enabled.
_FAIR_SHARING_STRATEGIES = ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]
_PODS_READY_TIMEOUT = "5m0s"  # apis/config/v1beta1/defaults.go defaultPodsReadyTimeout


def config_v1beta1_to_v1beta2(cfg):
    """A v1beta1 Configuration (a dict) as Kueue's conversion writes it in v1beta2; a KueueOpsError naming the
    first key the conversion would drop."""
    for key, instead in CONFIG_V1BETA1_DROPPED:
        if get_path(cfg, key, MISSING) is not MISSING:
            raise KueueOpsError(
                "values.managerConfig.controllerManagerConfigYaml sets %s, which the config.kueue.x-k8s.io/v1beta2 "
                "Configuration no longer has (Kueue's own conversion drops it)" % key, field="values",
                fix="remove %s from the Configuration and use %s" % (key, instead))
    out = copy.deepcopy(cfg)
    out["apiVersion"] = CONFIG_GROUP + "/v1beta2"
    for key in ("fairSharing", "waitForPodsReady"):
        section = out.get(key)
        if not isinstance(section, dict) or not section.get("enable"):
            out.pop(key, None)
            continue
        section.pop("enable")
        if key == "fairSharing" and not section.get("preemptionStrategies"):
            section["preemptionStrategies"] = list(_FAIR_SHARING_STRATEGIES)
        if key == "waitForPodsReady":
            section.setdefault("timeout", _PODS_READY_TIMEOUT)
            section.setdefault("blockAdmission", True)
    return out


def config_for_release(rel, cfg, notes=None):
    """The user's Configuration ``cfg`` for Kueue minor ``rel`` (a catalog record): as it is when the manager decodes
    its apiVersion; a v1beta1 one converted to v1beta2 (a line added to ``notes``) when only v1beta2 is decoded;
    refused otherwise."""
    api = str(cfg.get("apiVersion"))
    compiled = rel.config_api_versions_compiled
    if api.rsplit("/", 1)[-1] in compiled and api.startswith(CONFIG_GROUP + "/"):
        return cfg
    if api == CONFIG_GROUP + "/v1beta1" and "v1beta2" in compiled:
        converted = config_v1beta1_to_v1beta2(cfg)
        if notes is not None:
            notes.append("values.managerConfig.controllerManagerConfigYaml is a config.kueue.x-k8s.io/v1beta1 "
                         "Configuration, which the Kueue %s manager no longer decodes: it was converted to v1beta2 as "
                         "Kueue converts it (apiVersion; fairSharing and waitForPodsReady without enable); write it "
                         "as v1beta2 to silence this" % rel.minor)
        return converted
    raise KueueOpsError(
        "values.managerConfig.controllerManagerConfigYaml has apiVersion %s, which Kueue %s does not understand (it "
        "knows %s)" % (api, rel.minor, ", ".join(CONFIG_GROUP + "/" + v for v in compiled)),
        field="values", fix="use apiVersion %s" % rel.config_api_version)


def _convert_user_config(version, user_values, notes):
    """The user's own Configuration string (no integrations option) checked and converted in place."""
    text = get_path(user_values, CONFIG_PATH)
    rel = kueue_catalog.catalog_for(version)
    if rel is None or not isinstance(text, str) or not text.strip():
        return
    cfg = yaml.safe_load(text)
    if not isinstance(cfg, dict) or not cfg.get("apiVersion"):
        return
    converted = config_for_release(rel, cfg, notes)
    if converted is not cfg:
        user_values["managerConfig"]["controllerManagerConfigYaml"] = yaml.safe_dump(
            converted, default_flow_style=False, sort_keys=False)


# The module options that set one chart value each: kueue_helm renders them into the release's values and
# kueue_drift_info into the values it declares. A row: the option, its argument spec, the chart path it sets (read by
# every chart of the catalog's minors, 0.13 through 0.19), and the cluster object its value must name, if any
# (api_path(group_version, plural) + the value; refused before any write when missing). A new option is its row, its
# documentation in the chart_values doc fragment, and its tests: hack/gen_role_specs.py gives it a role variable
# (kueue_helm_<option>) in the role specs, in every kueue_helm task of the roles and playbooks, in the Helm-only
# options the extension path refuses and in the role's failure hints.
CHART_VALUE_OPTIONS = (
    ("manager_priority_class", dict(type="str"), "controllerManager.manager.priorityClassName",
     ("scheduling.k8s.io/v1", "priorityclasses", "PriorityClass")),
)


def chart_value_argspec():
    """A copy of the chart-value options' argument spec (kueue_helm, kueue_drift_info)."""
    return dict((name, dict(spec)) for name, spec, _path, _names in CHART_VALUE_OPTIONS)


def chart_option_values(params, user_values):
    """The chart values the chart-value options of ``params`` set, as a nested mapping to lay over the rest.
    Refused: a value that is not a Kubernetes object name where it names one, and a path ``user_values`` (values,
    values_files) sets as well."""
    rendered = {}
    for name, _spec, path, names in CHART_VALUE_OPTIONS:
        value = params.get(name)
        if value is None:
            continue
        if names and not is_dns_subdomain(value):
            raise KueueOpsError("%r is not a %s name (lowercase letters, digits, '-' and '.', at most 253)"
                                % (value, names[2]), field=name, fix="give the name of an existing %s, as "
                                "kubectl get %s lists them" % (names[2], names[1]))
        if get_path(user_values, path) is not None:
            raise KueueOpsError("%s is given twice: by the %s option and by values (or values_files) %s"
                                % (path, name, path), field=name,
                                fix="set it in one place only, preferably the %s option" % name)
        for key in reversed(path.split(".")):
            value = {key: value}
        rendered = deep_merge(rendered, value)
    return rendered


def chart_option_objects(params):
    """``[(option, group_version, plural, kind, name)]``: the cluster objects the options of ``params`` name."""
    return [(name, names[0], names[1], names[2], params[name]) for name, _spec, _path, names in CHART_VALUE_OPTIONS
            if names and params.get(name) is not None]


def normalize(values):
    """``values`` as helm records them: JSON types, keys sorted (None: {})."""
    return json.loads(json.dumps(values or {}, sort_keys=True))


def load_values_files(paths):
    """The values files, deep-merged in order; a missing, unreadable or non-mapping file is refused."""
    merged = {}
    for path in paths:
        if not os.path.isfile(path):
            raise KueueOpsError("values file %s does not exist" % path, field="values_files",
                                fix="give a path on the controller")
        try:
            with open(path) as handle:
                data = yaml.safe_load(handle) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise KueueOpsError("cannot read values file %s: %s" % (path, exc), field="values_files",
                                fix="correct the file: it must be readable YAML, a mapping of chart values")
        if not isinstance(data, dict):
            raise KueueOpsError("values file %s is not a mapping (it holds a %s)" % (path, type(data).__name__),
                                field="values_files",
                                fix="write the chart values as a YAML mapping, as in the chart's values.yaml")
        merged = deep_merge(merged, data)
    return merged


def check_catalog(version, feature_gates, integrations):
    """Refuse gates and frameworks that Kueue ``version`` does not know (when the catalog knows the version)."""
    problems = []
    if feature_gates:
        problems += kueue_catalog.validate_feature_gates(version, feature_gates)
    if integrations is not None:
        problems += kueue_catalog.validate_integrations(version, integrations)
    if problems and kueue_catalog.catalog_for(version) is not None:
        raise KueueOpsError(" ".join(problems), field="feature_gates" if feature_gates and any(
            "gate" in x for x in problems) else "integrations",
            fix=kueue_catalog.problems_fix(version, problems))
