"""kueue_catalog: facts per Kueue minor and name validation."""

import os
import subprocess
import sys

import pytest

from ansible_collections.kueueops.aks.plugins.module_utils.kueue import kueue_catalog as cat
from tests.prerequisites import kueue_module, kueue_module_reason, require
from tests.unit.plugins.module_utils.test_helm_values import SEED_FRAMEWORKS, SEED_GATES

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
GEN = os.path.join(ROOT, "hack", "gen_kueue_catalog.py")


@pytest.mark.parametrize("text,minor", [
    ("v0.19.2", "0.19"), ("0.19.2", "0.19"), ("0.14", "0.14"), (" v0.13.10 ", "0.13"),
    ("0.20.0-rc.1", "0.20"), ("latest", None), ("", None), (None, None), ("v1", None),
])
def test_minor_of(text, minor):
    assert cat.minor_of(text) == minor


def test_all_minors_present():
    assert cat.known_minors() == ["0.13", "0.14", "0.15", "0.16", "0.17", "0.18", "0.19", "0.20", "0.21"]


def test_020_is_the_019_record_with_what_its_changelog_says():
    """0.20 is not served by the Go module proxy: hack/kueue_changelog.yml derives it from 0.19."""
    old, new = cat.catalog_for("0.19"), cat.catalog_for("0.20.0")
    assert "CHANGELOG-0.20.md" in new.source and new.newest_patch == "0.20.6"
    assert new.kueue_api_served == ["v1beta2"] and new.kueue_api_storage == "v1beta2"
    assert all(c == {"served": ["v1beta2"], "storage": "v1beta2"} for c in new.crds.values())
    assert new.crd_names == old.crd_names
    assert "HierarchicalCohorts" in old.feature_gates and "HierarchicalCohorts" not in new.feature_gates
    tls = new.feature_gates["TLSOptions"]
    assert (tls.default, tls.stage, tls.locked) == (True, "GA", True)
    assert new.feature_gates["TopologyAwareScheduling"].since == old.feature_gates["TopologyAwareScheduling"].since
    assert new.gate_dependencies["AdmissionFairSharingAnchorAtQuotaReservation"] == ["AdmissionFairSharing"]
    assert new.config_api_versions_compiled == ["v1beta2"]
    assert [f["kind"] for f in new.changelog][0] == "config_refused"
    assert cat.catalog_for("0.19").changelog[0]["name"] == "waitForPodsReady"
    assert cat.validate_feature_gates("0.20.0", {"HierarchicalCohorts": True})


def test_020_release_train_from_its_release_notes():
    """Issue 39: what only 0.20's release notes give, each unconfirmed fact listed in the record."""
    rel = cat.catalog_for("0.20")
    assert rel.release_notes_only and not rel.prerelease_only
    assert rel.published_patches == ["0.20.%d" % n for n in range(7)] and rel.newest_patch == "0.20.6"
    assert rel.prereleases == ["0.20.0-rc.0", "0.20.0-rc.1"]
    assert sorted(rel.broken_patches) == ["0.20.%d" % n for n in range(6)]
    for version, why in rel.broken_patches.items():
        assert why["fixed_in"] == "0.20.6" and "kubernetes-sigs/kueue#18411" in why["reason"], version
        assert "not confirmed" in why["source"], version
    assert rel.crd_listed == ["v1beta1", "v1beta2"] and rel.kueue_api_served == ["v1beta2"]
    removed = cat.GENERATED["0.20"]["gates_removed"]
    assert sorted(removed) == sorted([
        "HierarchicalCohorts", "ObjectRetentionPolicies", "MultiKueueAllowInsecureKubeconfigs",
        "PropagateBatchJobLabelsToWorkload", "MultiKueueWaitForWorkloadAdmitted", "SchedulerLongRequeueInterval",
        "SchedulerTimestampPreemptionBuffer", "MultiKueueRedoAdmissionOnEvictionInWorker",
        "SkipFinalizersForPodsSuspendedByParent"])
    assert all(r["removed_in"] == "0.20" and r["source"].startswith("#") for r in removed.values())
    assert not set(removed) & set(rel.feature_gates)
    # Corrected from the earlier entry: beta and on in kube_features.go of kueue main (#13863); named by the
    # CHANGELOG, so a valid name.
    gate = rel.feature_gates["RecomputeAssignmentUponPreemptionTargetsOverlap"]
    assert (gate.default, gate.stage) == (True, "beta")
    assert cat.validate_feature_gates("0.20.6", {"SkipChildJobSuspension": True,
                                                 "KueueDRAIntegrationDeviceTaints": True}) == []
    assert rel.gate_dependencies["FlavorFungibilityPreserveScanProgress"] == ["FlavorFungibility"]
    assert cat.validate_feature_gates("0.20.6", {"FlavorFungibility": False})
    assert {"enableAlphaAPIs", "controllerManager.affinity"} <= {v["key"] for v in rel.chart_values}
    facts = dict((f["name"], f) for f in rel.changelog)
    assert facts["clientConnection.qps"]["kind"] == "config_default" and facts["clientConnection.qps"]["new_default"] == 1000
    assert facts["WorkloadPriorityClassDefaulting"]["severity"] == "action"
    assert any("published_patches" in u for u in rel.unconfirmed)
    assert any("broken_patches" in u for u in rel.unconfirmed)


def test_021_is_the_020_record_known_only_from_release_notes():
    old, new = cat.catalog_for("0.20"), cat.catalog_for("0.21")
    assert new.release_notes_only and new.prerelease_only and new.newest_patch == "0.21.0"
    assert new.published_patches == [] and new.prereleases == [] and new.broken_patches == {}
    assert new.crd_listed == ["v1beta2"] and new.kueue_api_served == ["v1beta2"] and new.kueue_api_storage == "v1beta2"
    assert all(c == {"served": ["v1beta2"], "storage": "v1beta2"} for c in new.crds.values())
    assert new.gate_names() == old.gate_names() and new.gate_dependencies == old.gate_dependencies
    assert new.frameworks == old.frameworks and new.config_api_version == old.config_api_version
    assert cat.GENERATED["0.21"]["gates_removed"] == {}
    assert [f["name"] for f in new.changelog] == ["v1beta1-removed", "values-schema"]
    keys = dict((v["key"], v) for v in new.chart_values)
    assert keys["managerConfig.structuredOverrides"]["unconfirmed"] is True
    assert keys["managerConfig.config"]["change"] == "added"
    assert "no CHANGELOG-0.21.md" in new.source
    assert new.unconfirmed and "#13957" in new.source


@pytest.mark.parametrize("minor", ["0.13", "0.16", "0.19"])
def test_generated_minors_read_the_release_fields_as_their_defaults(minor):
    rel = cat.catalog_for(minor)
    assert not rel.release_notes_only and not rel.prerelease_only
    assert rel.published_patches == rel.patches_scanned and rel.newest_patch in rel.published_patches
    assert rel.broken_patches == {} and rel.prereleases == [] and rel.chart_values == [] and rel.unconfirmed == []
    assert rel.crd_listed == rel.kueue_api_served


@pytest.mark.parametrize("minor,api", [
    ("0.13", "config.kueue.x-k8s.io/v1beta1"), ("0.14", "config.kueue.x-k8s.io/v1beta1"),
    ("0.15", "config.kueue.x-k8s.io/v1beta2"), ("0.19", "config.kueue.x-k8s.io/v1beta2"),
])
def test_config_api_version(minor, api):
    assert cat.catalog_for(minor).config_api_version == api


def test_framework_history():
    trainjob, rayservice = "trainer.kubeflow.org/trainjob", "ray.io/rayservice"
    assert trainjob not in cat.catalog_for("0.13.4").frameworks
    assert trainjob in cat.catalog_for("0.14.0").frameworks
    assert rayservice not in cat.catalog_for("0.16").frameworks
    assert rayservice in cat.catalog_for("0.17").frameworks


def test_local_queue_metrics_stage():
    old = cat.catalog_for("0.16").feature_gates["LocalQueueMetrics"]
    new = cat.catalog_for("0.17").feature_gates["LocalQueueMetrics"]
    assert (old.stage, old.default) == ("alpha", False)
    assert (new.stage, new.default) == ("beta", True)


def test_crds_match_seed_list():
    expected = sorted(n + ".kueue.x-k8s.io" for n in (
        "admissionchecks", "clusterqueues", "cohorts", "localqueues", "multikueueclusters", "multikueueconfigs",
        "provisioningrequestconfigs", "resourceflavors", "topologies", "workloadpriorityclasses", "workloads"))
    for minor in cat.known_minors():
        assert cat.catalog_for(minor).crd_names == expected
    assert cat.catalog_for("0.19").kueue_api_storage == "v1beta2"
    assert cat.catalog_for("0.14").kueue_api_served == ["v1beta1"]


def test_seed_names_valid_for_019_and_014():
    for version in ("v0.19.2", "0.14.8"):
        assert cat.validate_feature_gates(version, SEED_GATES) == []
        assert cat.validate_integrations(version, SEED_FRAMEWORKS) == []


def test_unknown_gate_lists_valid_names_sorted():
    problems = cat.validate_feature_gates("0.19.2", {"TopologyAwareSchedulng": True})
    assert len(problems) == 1
    msg = problems[0]
    assert "TopologyAwareSchedulng" in msg and "Did you mean 'TopologyAwareScheduling'" in msg
    listed = msg.split("Valid feature gates: ", 1)[1].rstrip(".").split(", ")
    assert listed == sorted(cat.catalog_for("0.19").feature_gates)
    assert "LocalQueueMetrics" in listed


def test_unknown_framework_lists_valid_names():
    problems = cat.validate_integrations("0.16.2", ["ray.io/rayservice", "batch/job", "batch/job"])
    assert any("listed twice" in p for p in problems)
    bad = [p for p in problems if "ray.io/rayservice" in p][0]
    listed = bad.split("Valid frameworks: ", 1)[1].rstrip(".").split(", ")
    assert listed == sorted(listed) and "ray.io/raycluster" in listed and "ray.io/rayservice" not in listed


def test_unknown_version_warns_and_does_not_validate():
    assert cat.catalog_for("0.99.0") is None
    assert cat.validate_feature_gates("0.99.0", {"Whatever": True}) == []
    assert cat.validate_integrations("0.99.0", ["x/y"]) == []
    warning = cat.version_warning("0.99.0")
    assert "0.99" in warning and "0.19" in warning and "not validated" in warning
    assert cat.version_warning("0.19.2") is None
    assert "not a version" in cat.version_warning("garbage")


def test_non_bool_gate_value():
    assert "true or false" in cat.validate_feature_gates("0.19", {"TopologyAwareScheduling": "yes"})[0]


def test_gate_backported_in_later_patch():
    rel = cat.catalog_for("0.18")
    assert rel.gate_min_patch["PodIntegrationValidateGroupOwner"] == "0.18.6"
    problems = cat.validate_feature_gates("0.18.4", {"PodIntegrationValidateGroupOwner": True})
    assert problems and "0.18.6" in problems[0]
    assert cat.validate_feature_gates("0.18.6", {"PodIntegrationValidateGroupOwner": True}) == []
    # minor only: cannot tell, so no complaint
    assert cat.validate_feature_gates("0.18", {"PodIntegrationValidateGroupOwner": True}) == []


def test_locked_gate_set_to_non_default():
    problems = cat.validate_feature_gates("0.19", {"HierarchicalCohorts": False})
    assert problems and "locked" in problems[0]
    assert cat.validate_feature_gates("0.19", {"HierarchicalCohorts": True}) == []


def test_disabling_tas_alone_breaks_dependents():
    problems = cat.validate_feature_gates("0.19", {"TopologyAwareScheduling": False})
    assert any("TASFailedNodeReplacement" in p and "TopologyAwareScheduling" in p for p in problems)
    # 0.13 TAS sub-features that are on by default do not exist yet
    assert cat.validate_feature_gates("0.13", {"TopologyAwareScheduling": False}) == []


def test_builtin_gates_accepted():
    assert cat.validate_feature_gates("0.19", {"AllAlpha": False}) == []


def _generate(args):
    out = subprocess.run([sys.executable, GEN] + args, check=True, capture_output=True, text=True).stdout
    ns = {}
    exec(out.split("\n", 1)[1], ns)  # skip the BEGIN marker line
    return ns["GENERATED"]


def test_catalog_matches_generator_on_module_source():
    gen = _generate(["--src", require(kueue_module("0.19.2"), kueue_module_reason("0.19.2"))])["0.19"]
    stored = cat.GENERATED["0.19"]
    for key in ("config_api_version", "frameworks", "feature_gates", "crds", "default_frameworks",
                "gate_dependencies"):
        assert gen[key] == stored[key], key


def test_gate_min_patch_consistent_with_0_18_4_source():
    gen = _generate(["--src", require(kueue_module("0.18.4"), kueue_module_reason("0.18.4"))])["0.18"]
    rel = cat.catalog_for("0.18")
    for name in rel.feature_gates:
        if name not in gen["feature_gates"]:
            assert cat.parse_version(rel.gate_min_patch[name])[2] > 4, name
        else:
            assert cat.parse_version(rel.gate_min_patch.get(name, "0.18.0"))[2] <= 4, name


def test_problems_fix_says_what_to_change_for_each_kind_of_problem():
    from ansible_collections.kueueops.aks.plugins.module_utils.kueue.kueue_catalog import (
        problems_fix, validate_feature_gates, validate_integrations)
    unknown = validate_feature_gates("0.19.2", {"NoSuchGate": True})
    assert problems_fix("0.19.2", unknown) == "use names that Kueue 0.19.2 knows"
    not_bool = validate_feature_gates("0.19.2", {"TopologyAwareScheduling": "sometimes"})
    assert problems_fix("0.19.2", not_bool) == "map each feature gate name to true or false"
    twice = validate_integrations("0.19.2", ["batch/job", "batch/job"])
    assert problems_fix("0.19.2", twice) == "list each integration once"
    both = validate_integrations("0.19.2", ["batch/job", "batch/job", "example.com/nosuch"])
    assert problems_fix("0.19.2", both) == "use names that Kueue 0.19.2 knows; list each integration once"


def test_a_removed_gate_is_refused_naming_the_release_that_removed_it():
    assert cat.removed_in("HierarchicalCohorts", "0.20") == ("0.20", "0.19")
    assert cat.removed_in("HierarchicalCohorts", "0.19") is None
    assert cat.removed_in("NoSuchGate", "0.20") is None
    problems = cat.validate_feature_gates("0.20.6", {"HierarchicalCohorts": True})
    assert problems == ["feature gate 'HierarchicalCohorts' was removed in Kueue 0.20 (its last minor was 0.19), and "
                        "the Kueue 0.20 manager exits on startup when it is set; remove it from feature_gates."]
    assert cat.problems_fix("0.20.6", problems) == "remove the feature gates Kueue 0.20.6 removed"
