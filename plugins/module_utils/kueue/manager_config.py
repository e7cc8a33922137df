# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The configuration a running Kueue manager uses, read back from its Deployment's container args and its
ConfigMap's ``controller_manager_config.yaml``: the feature gates and the integrations in effect.

Its own file, apart from helm_values.py (which renders the chart's values from the Kueue catalog), so that
kueue_verify and the other readers do not carry the Helm values and the 76 KB catalog in their payload: ansible-core
parses every file a module imports once per module per run, and Python compiles it in every module process
(docs/dev/ci-time.md).
"""

from ansible_collections.kueueops.aks.plugins.module_utils.common.yaml_docs import HAS_YAML, yaml

from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import KueueOpsError
from ansible_collections.kueueops.aks.plugins.module_utils.kube.kueue_cluster import MANAGER_DEPLOYMENT, manager_container, path

CONFIG_KEY = "controller_manager_config.yaml"

# pkg/controller/jobs/job FrameworkName, the default Kueue applies when
# integrations.frameworks is empty (apis/config/<ver>/defaults.go).
DEFAULT_FRAMEWORKS = ["batch/job"]


def require_yaml():
    if not HAS_YAML:
        raise KueueOpsError("the Python library PyYAML is required to render and read Kueue's configuration",
                            fix="pip install PyYAML (or: install the collection's requirements.txt)")


MISSING = object()


def get_path(d, path, default=None):
    """The value at the dotted ``path`` of nested mappings, or ``default`` where a key is missing."""
    cur = d
    for key in path.split("."):
        if not isinstance(cur, dict) or key not in cur:
            return default
        cur = cur[key]
    return cur


_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_FALSE = ("0", "f", "F", "FALSE", "false", "False")


def parse_feature_gates_flag(value):
    """'A=true,B=false' -> {'A': True, 'B': False} (Go strconv.ParseBool spellings)."""
    gates = {}
    for part in (value or "").split(","):
        part = part.strip()
        if not part:
            continue
        if "=" not in part:
            raise ValueError("missing bool value for %s" % part)
        name, raw = part.split("=", 1)
        raw = raw.strip()
        if raw in _TRUE:
            gates[name.strip()] = True
        elif raw in _FALSE:
            gates[name.strip()] = False
        else:
            raise ValueError("invalid value of %s=%s" % (name.strip(), raw))
    return gates


def read_manager(cluster, namespace):
    """(container args, ``controller_manager_config.yaml``, image) of the running manager: its Deployment's manager
    container and the ConfigMap its Pods mount, read through ``cluster`` (kueue_cluster.Cluster). What kueue_verify,
    kueue_drift_info and kueue_upgrade_plan compare; a missing Deployment is the ApiException (404) the caller
    reports (``request``, not ``get``)."""
    dep = cluster.request("GET", path("apps/v1", "deployments", namespace, MANAGER_DEPLOYMENT))
    container = manager_container(dep)
    cm_name = None
    for vol in dep["spec"]["template"]["spec"].get("volumes") or []:
        if vol.get("configMap") is not None:
            cm_name = vol["configMap"].get("name")
    config_yaml = ""
    if cm_name:
        cm = cluster.request("GET", path("v1", "configmaps", namespace, cm_name))
        config_yaml = (cm.get("data") or {}).get(CONFIG_KEY, "")
    return container.get("args") or [], config_yaml, container.get("image")


def effective_from_deployment(args, config_yaml):
    """(gates, frameworks) the running manager uses.

    ``args``: the manager container's args (``--feature-gates=A=true,B=false``
    or ``--feature-gates A=true``); ``config_yaml``: the manager ConfigMap's
    ``controller_manager_config.yaml``. Gates: the flag when present, else the
    Configuration's ``featureGates`` (only explicitly set gates; defaults are
    in kueue_catalog). Frameworks: ``integrations.frameworks``, or Kueue's
    default ``['batch/job']`` when the list is empty or absent.
    """
    require_yaml()
    flag = None
    args = list(args or [])
    for i, arg in enumerate(args):
        if arg.startswith("--feature-gates="):
            flag = arg.split("=", 1)[1]
        elif arg == "--feature-gates" and i + 1 < len(args):
            flag = args[i + 1]
    cfg = {}
    if config_yaml:
        loaded = yaml.safe_load(config_yaml)
        cfg = loaded if isinstance(loaded, dict) else {}
    if flag:
        gates = parse_feature_gates_flag(flag)
    else:
        gates = dict((str(k), bool(v)) for k, v in (cfg.get("featureGates") or {}).items())
    frameworks = list(get_path(cfg, "integrations.frameworks") or []) or list(DEFAULT_FRAMEWORKS)
    return gates, frameworks
