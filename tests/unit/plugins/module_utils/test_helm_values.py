"""helm_values: rendering Kueue values the chart understands, and catching the ones it ignores."""

import os

import pytest
import yaml

from ansible_collections.kueueops.aks.plugins.module_utils.helm import helm_values as hv
from ansible_collections.kueueops.aks.plugins.module_utils.kueue import manager_config as mc
from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import KueueOpsError
from tests.prerequisites import kueue_module, kueue_module_reason, require

SEED_GATES = {"TopologyAwareScheduling": True, "LocalQueueMetrics": True}
SEED_FRAMEWORKS = [
    "batch/job", "kubeflow.org/mpijob", "ray.io/rayjob", "ray.io/raycluster", "jobset.x-k8s.io/jobset",
    "kubeflow.org/paddlejob", "kubeflow.org/pytorchjob", "kubeflow.org/tfjob", "kubeflow.org/xgboostjob",
    "kubeflow.org/jaxjob",
]

# The seed document's values.yaml, verbatim shape: managerConfig nested under controllerManager.
SEED_VALUES_YAML = """
controllerManager:
  featureGates:
    - name: TopologyAwareScheduling
      enabled: true
    - name: LocalQueueMetrics
      enabled: true
  managerConfig:
    controllerManagerConfigYaml: |
      apiVersion: config.kueue.x-k8s.io/v1beta1
      kind: Configuration
      integrations:
        frameworks:
          - batch/job
          - kubeflow.org/mpijob
          - ray.io/rayjob
"""

# Trimmed copies of charts/kueue/values.yaml managerConfig.controllerManagerConfigYaml.
DEFAULT_019 = """apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
health:
  healthProbeBindAddress: :8081
metrics:
  bindAddress: :8443
webhook:
  port: 9443
leaderElection:
  leaderElect: true
  resourceName: c1f6bfd2.kueue.x-k8s.io
controller:
  groupKindConcurrency:
    Job.batch: 5
integrations:
  frameworks:
  - "batch/job"
  - "pod"
#  externalFrameworks:
#  - "Foo.v1.example.com"
"""
DEFAULT_014 = DEFAULT_019.replace("v1beta2", "v1beta1")


def _cfg(values):
    return yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])


@pytest.mark.parametrize("version,default,api", [
    ("0.19.2", DEFAULT_019, "config.kueue.x-k8s.io/v1beta2"),
    ("0.14.8", DEFAULT_014, "config.kueue.x-k8s.io/v1beta1"),
    # the module always writes the version's apiVersion, whatever the default said
    ("0.19.2", DEFAULT_014, "config.kueue.x-k8s.io/v1beta2"),
])
def test_render_seed_gates_and_frameworks(version, default, api):
    values = hv.render_values(version, SEED_GATES, SEED_FRAMEWORKS, {}, default)
    assert values["controllerManager"]["featureGates"] == [
        {"name": "LocalQueueMetrics", "enabled": True},
        {"name": "TopologyAwareScheduling", "enabled": True},
    ]
    assert isinstance(values["managerConfig"]["controllerManagerConfigYaml"], str)
    cfg = _cfg(values)
    assert cfg["apiVersion"] == api
    assert cfg["kind"] == "Configuration"
    assert cfg["integrations"]["frameworks"] == SEED_FRAMEWORKS
    # the rest of the chart default is kept
    assert cfg["leaderElection"]["resourceName"] == "c1f6bfd2.kueue.x-k8s.io"
    assert cfg["controller"]["groupKindConcurrency"] == {"Job.batch": 5}
    assert hv.detect_misnested_values(values) == []


def test_render_is_deterministic():
    a = hv.render_values("0.19.2", SEED_GATES, SEED_FRAMEWORKS, {}, DEFAULT_019)
    b = hv.render_values("0.19.2", dict(reversed(list(SEED_GATES.items()))), SEED_FRAMEWORKS, {}, DEFAULT_019)
    assert a == b


def test_no_options_leaves_user_values_alone():
    user = {"controllerManager": {"replicas": 2}}
    assert hv.render_values("0.19.2", None, None, user, DEFAULT_019) == user


def test_user_values_merged_underneath():
    user = {"controllerManager": {"replicas": 2, "manager": {"logLevel": 4}}, "enablePrometheus": True}
    values = hv.render_values("0.19.2", SEED_GATES, None, user, DEFAULT_019)
    assert values["controllerManager"]["replicas"] == 2
    assert values["controllerManager"]["manager"] == {"logLevel": 4}
    assert values["enablePrometheus"] is True
    assert len(values["controllerManager"]["featureGates"]) == 2
    assert user == {"controllerManager": {"replicas": 2, "manager": {"logLevel": 4}}, "enablePrometheus": True}


def test_unknown_version_still_renders_with_chart_api_version():
    values = hv.render_values("0.99.0", None, ["batch/job"], {}, DEFAULT_019)
    assert _cfg(values)["apiVersion"] == "config.kueue.x-k8s.io/v1beta2"


def test_seed_misnested_values_detected():
    seed = yaml.safe_load(SEED_VALUES_YAML)
    problems = hv.detect_misnested_values(seed)
    assert len(problems) == 1
    msg = problems[0]
    assert "controllerManager.managerConfig" in msg
    assert "TOP-LEVEL" in msg and "managerConfig.controllerManagerConfigYaml" in msg
    assert "integrations option" in msg
    with pytest.raises(KueueOpsError) as err:
        hv.render_values("0.19.2", None, None, seed, DEFAULT_019)
    assert err.value.field == "values"
    assert "managerConfig" in str(err.value) and "Fix:" in str(err.value)


@pytest.mark.parametrize("values,needle", [
    ({"featureGates": [{"name": "A", "enabled": True}]}, "featureGates is ignored"),
    ({"controllerManager": {"manager": {"featureGates": []}}}, "controllerManager.manager.featureGates"),
    ({"controllerManagerConfigYaml": "kind: Configuration"}, "controllerManagerConfigYaml is ignored"),
    ({"managerConfig": {"integrations": {"frameworks": ["batch/job"]}}}, "managerConfig.integrations"),
    ({"managerConfig": {"controllerManagerConfigYaml": {"kind": "Configuration"}}}, "expects a string"),
    ({"controllerManager": {"featureGates": {"TopologyAwareScheduling": True}}}, "is a mapping"),
    ({"controllerManager": {"featureGates": [{"name": "A", "enabled": "true"}]}}, "must be a boolean"),
    ({"managerConfig": {"controllerManagerConfigYaml": "a: [b"}}, "not valid YAML"),
])
def test_other_silently_ignored_shapes(values, needle):
    problems = hv.detect_misnested_values(values)
    assert problems, values
    assert any(needle in p for p in problems), problems


def test_well_shaped_values_pass():
    values = {"controllerManager": {"featureGates": [{"name": "A", "enabled": False}]},
              "managerConfig": {"controllerManagerConfigYaml": "kind: Configuration\n"}}
    assert hv.detect_misnested_values(values) == []


def test_option_and_user_gates_conflict_names_both():
    user = {"controllerManager": {"featureGates": [{"name": "PartialAdmission", "enabled": True}]}}
    with pytest.raises(KueueOpsError) as err:
        hv.render_values("0.19.2", SEED_GATES, None, user, DEFAULT_019)
    msg = str(err.value)
    assert "feature_gates option" in msg and "values.controllerManager.featureGates" in msg


def test_option_and_user_frameworks_conflict_names_both():
    user = {"managerConfig": {"controllerManagerConfigYaml": DEFAULT_019}}
    with pytest.raises(KueueOpsError) as err:
        hv.render_values("0.19.2", None, ["batch/job"], user, DEFAULT_019)
    msg = str(err.value)
    assert "integrations option" in msg and "values.managerConfig.controllerManagerConfigYaml" in msg


def test_user_config_without_frameworks_is_the_base():
    user_cfg = "apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\nmanageJobsWithoutQueueName: true\n"
    values = hv.render_values("0.19.2", None, ["batch/job"], {"managerConfig": {"controllerManagerConfigYaml": user_cfg}},
                              DEFAULT_019)
    cfg = _cfg(values)
    assert cfg["manageJobsWithoutQueueName"] is True
    assert cfg["apiVersion"] == "config.kueue.x-k8s.io/v1beta1"  # still compiled into 0.19: kept
    assert cfg["integrations"]["frameworks"] == ["batch/job"]
    bad = user_cfg.replace("v1beta1", "v1alpha9")
    with pytest.raises(KueueOpsError):
        hv.render_values("0.19.2", None, ["batch/job"], {"managerConfig": {"controllerManagerConfigYaml": bad}},
                         DEFAULT_019)


@pytest.mark.parametrize("config_gates", ["featureGates:\n  PartialAdmission: true\n", "featureGates: {}\n"])
def test_gates_in_both_places_refused(config_gates):
    user = {"managerConfig": {"controllerManagerConfigYaml": "kind: Configuration\n" + config_gates}}
    with pytest.raises(KueueOpsError) as err:
        hv.render_values("0.19.2", SEED_GATES, None, user, DEFAULT_019)
    msg = str(err.value)
    assert "--feature-gates" in msg and "controllerManager.featureGates" in msg
    assert "featureGates: in values.managerConfig.controllerManagerConfigYaml" in msg


def test_gates_in_both_places_detected_in_plain_values():
    values = {"controllerManager": {"featureGates": [{"name": "A", "enabled": True}]},
              "managerConfig": {"controllerManagerConfigYaml": "kind: Configuration\nfeatureGates:\n  B: true\n"}}
    assert hv.detect_feature_gate_conflict(values)
    # null featureGates is nil in Go: no conflict; an empty CLI list renders no flag: no conflict
    values["managerConfig"]["controllerManagerConfigYaml"] = "kind: Configuration\nfeatureGates:\n"
    assert hv.detect_feature_gate_conflict(values) == []
    values["controllerManager"]["featureGates"] = []
    values["managerConfig"]["controllerManagerConfigYaml"] = "featureGates: {A: true}\n"
    assert hv.detect_feature_gate_conflict(values) == []


def test_gates_in_config_only_is_fine():
    user = {"managerConfig": {"controllerManagerConfigYaml": "kind: Configuration\nfeatureGates:\n  A: true\n"}}
    assert hv.render_values("0.19.2", None, None, user, DEFAULT_019) == user


def test_string_gate_values_coerced_and_garbage_refused():
    values = hv.render_values("0.19.2", {"A": "false"}, None, {}, DEFAULT_019)
    assert values["controllerManager"]["featureGates"] == [{"name": "A", "enabled": False}]
    with pytest.raises(KueueOpsError):
        hv.render_values("0.19.2", {"A": "maybe"}, None, {}, DEFAULT_019)


def test_chart_default_config_yaml():
    text = yaml.safe_dump({"managerConfig": {"controllerManagerConfigYaml": DEFAULT_019}})
    assert hv.chart_default_config_yaml(text) == DEFAULT_019
    with pytest.raises(KueueOpsError):
        hv.chart_default_config_yaml("foo: bar\n")


def test_roundtrip_render_then_read_back():
    values = hv.render_values("0.19.2", SEED_GATES, SEED_FRAMEWORKS, {}, DEFAULT_019)
    flag = "--feature-gates=" + ",".join(
        "%s=%s" % (g["name"], str(g["enabled"]).lower()) for g in values["controllerManager"]["featureGates"])
    gates, frameworks = mc.effective_from_deployment([flag], values["managerConfig"]["controllerManagerConfigYaml"])
    assert gates == SEED_GATES and frameworks == SEED_FRAMEWORKS


# ----------------------------------------------------------------- the AKS document's v1beta1 Configuration (issue 39)
AKS_DOC_CONFIG = """apiVersion: config.kueue.x-k8s.io/v1beta1
kind: Configuration
integrations:
  frameworks:
    - batch/job
    - ray.io/rayjob
"""


def test_the_aks_documents_v1beta1_configuration_is_converted_for_a_release_that_decodes_only_v1beta2():
    notes = []
    aks_doc_values = {"managerConfig": {"controllerManagerConfigYaml": AKS_DOC_CONFIG}}
    out = hv.render_values("0.20.6", None, None, aks_doc_values, None, notes=notes)
    cfg = yaml.safe_load(out["managerConfig"]["controllerManagerConfigYaml"])
    assert cfg == {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
                   "integrations": {"frameworks": ["batch/job", "ray.io/rayjob"]}}
    assert len(notes) == 1 and "converted to v1beta2" in notes[0] and "Kueue 0.20" in notes[0]
    # 0.19 still decodes v1beta1: left as it is, nothing said
    notes = []
    out = hv.render_values("0.19.2", None, None, aks_doc_values, None, notes=notes)
    assert out["managerConfig"]["controllerManagerConfigYaml"] == AKS_DOC_CONFIG and notes == []
    # with the integrations option, the user's Configuration is the base: converted the same way
    notes = []
    bare = "apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\n"
    out = hv.render_values("0.20.6", None, ["batch/job"], {"managerConfig": {"controllerManagerConfigYaml": bare}},
                           None, notes=notes)
    assert yaml.safe_load(out["managerConfig"]["controllerManagerConfigYaml"])["apiVersion"] == (
        "config.kueue.x-k8s.io/v1beta2") and notes


def test_the_conversion_follows_kueues_own():
    cfg = {"apiVersion": "config.kueue.x-k8s.io/v1beta1", "fairSharing": {"enable": True},
           "waitForPodsReady": {"enable": False, "timeout": "10m"}, "manageJobsWithoutQueueName": True}
    assert hv.config_v1beta1_to_v1beta2(cfg) == {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2", "manageJobsWithoutQueueName": True,
        "fairSharing": {"preemptionStrategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]}}
    assert hv.config_v1beta1_to_v1beta2({"waitForPodsReady": {"enable": True}})["waitForPodsReady"] == {
        "timeout": "5m0s", "blockAdmission": True}
    assert cfg["fairSharing"] == {"enable": True}  # the input is not changed


@pytest.mark.parametrize("key, yaml_text, replacement", [
    ("queueVisibility", "queueVisibility:\n  updateIntervalSeconds: 5\n", "VisibilityOnDemand"),
    ("integrations.podOptions", "integrations:\n  podOptions:\n    namespaceSelector: {}\n",
     "managedJobsNamespaceSelector"),
])
def test_what_the_conversion_drops_is_refused_naming_the_key(key, yaml_text, replacement):
    text = "apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\n" + yaml_text
    with pytest.raises(KueueOpsError) as err:
        hv.render_values("0.20.6", None, None, {"managerConfig": {"controllerManagerConfigYaml": text}}, None)
    assert err.value.field == "values" and key in err.value.problem and replacement in err.value.fix
    with pytest.raises(KueueOpsError) as err:
        alpha = "apiVersion: config.kueue.x-k8s.io/v1alpha9\n"
        hv.render_values("0.20.6", None, None, {"managerConfig": {"controllerManagerConfigYaml": alpha}}, None)
    assert "does not understand" in err.value.problem


# ---- the chart-value options (CHART_VALUE_OPTIONS; issue 42, item 4)

def test_a_chart_value_option_sets_its_chart_path_over_the_rest():
    values = hv.render_values("0.19.2", None, None, {"controllerManager": {"replicas": 2}}, None,
                              option_params={"manager_priority_class": "system-cluster-critical"})
    assert values == {"controllerManager": {"replicas": 2, "manager": {"priorityClassName": "system-cluster-critical"}}}


def test_an_unset_chart_value_option_renders_nothing():
    assert hv.render_values("0.19.2", None, None, {}, None, option_params={"manager_priority_class": None}) == {}
    assert hv.render_values("0.19.2", None, None, {}, None) == {}


def test_a_chart_value_given_twice_is_refused_naming_the_option():
    user = {"controllerManager": {"manager": {"priorityClassName": "high"}}}
    with pytest.raises(KueueOpsError) as err:
        hv.render_values("0.19.2", None, None, user, None, option_params={"manager_priority_class": "low"})
    assert err.value.field == "manager_priority_class"
    assert "controllerManager.manager.priorityClassName is given twice" in err.value.message()


@pytest.mark.parametrize("name", ["High", "-high", "high_prio", "a" * 254, ""])
def test_a_chart_value_option_naming_an_object_refuses_a_name_kubernetes_refuses(name):
    with pytest.raises(KueueOpsError) as err:
        hv.chart_option_values({"manager_priority_class": name}, {})
    assert err.value.field == "manager_priority_class" and "PriorityClass name" in err.value.message()


def test_the_objects_the_options_name_and_the_argument_spec():
    assert hv.chart_option_objects({"manager_priority_class": "system-cluster-critical"}) == [
        ("manager_priority_class", "scheduling.k8s.io/v1", "priorityclasses", "PriorityClass",
         "system-cluster-critical")]
    assert hv.chart_option_objects({}) == []
    assert hv.chart_value_argspec() == {"manager_priority_class": {"type": "str"}}


@pytest.mark.parametrize("version", ["0.19.2", "0.18.4", "0.17.0", "0.15.0"])
def test_every_chart_value_option_is_a_path_the_chart_reads(version):
    """The chart path of each row is in the values.yaml of every Kueue chart of the toolchain (hack/versions.env)."""
    module = require(kueue_module(version), kueue_module_reason(version))
    with open(os.path.join(module, "charts", "kueue", "values.yaml")) as handle:
        chart = yaml.safe_load(handle)
    for name, _spec, dotted, _names in hv.CHART_VALUE_OPTIONS:
        parent, _dot, key = dotted.rpartition(".")
        assert key in (mc.get_path(chart, parent) or {}), (version, name)
