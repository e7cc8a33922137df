"""upgrade: the hops and the required actions of a plan, on the catalog (pure logic; the plan against a real
cluster is tests/integration/test_upgrade.py)."""
from __future__ import annotations

import pytest

from ansible_collections.kueueops.aks.plugins.module_utils.kueue import kueue_catalog as cat
from ansible_collections.kueueops.aks.plugins.module_utils.upgrade import upgrade
from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import KueueOpsError

LOCAL = {"0.15": "0.15.0", "0.17": "0.17.0", "0.18": "0.18.4", "0.19": "0.19.2"}  # what the harness registry holds


def hops(current, target, published=LOCAL, stored=("v1beta1",)):
    first, planned, problems = upgrade.plan_hops(current, target, published.get, set(stored))
    return first, [(h.source, h.target, h.migrate) for h in planned], problems


def test_the_storage_switch_is_crossed_at_the_first_published_release_that_stores_v1beta2():
    assert hops("0.15.0", "0.19.2") == (False, [("0.15.0", "0.17.0", True), ("0.17.0", "0.19.2", False)], [])


def test_a_published_016_is_the_stop():
    assert hops("0.15.0", "0.19.2", dict(LOCAL, **{"0.16": "0.16.9"}))[1][0] == ("0.15.0", "0.16.9", True)


def test_no_storage_change_is_one_hop():
    assert hops("0.18.4", "0.19.2", stored=("v1beta2",)) == (False, [("0.18.4", "0.19.2", False)], [])


def test_a_target_that_switches_storage_is_the_stop():
    assert hops("0.15.0", "0.17.0") == (False, [("0.15.0", "0.17.0", True)], [])


def test_an_old_storage_version_still_listed_is_migrated_first():
    assert hops("0.17.0", "0.19.2", stored=("v1beta1", "v1beta2")) == (True, [("0.17.0", "0.19.2", False)], [])


def test_020_is_reached_through_a_migration_at_017():
    assert hops("0.15.0", "0.20.0", dict(LOCAL, **{"0.20": "0.20.0"}))[1] == [
        ("0.15.0", "0.17.0", True), ("0.17.0", "0.20.0", False)]


def test_nothing_published_before_020_that_stores_v1beta2_is_refused():
    _first, planned, problems = hops("0.15.0", "0.20.0", {"0.20": "0.20.0"})
    assert planned == [("0.15.0", "0.20.0", True)]
    assert problems and "does not serve kueue.x-k8s.io/v1beta1" in problems[0]


@pytest.mark.parametrize("current, target, words", [
    ("0.19.2", "0.18.4", "older than the installed 0.19.2"),
    ("0.15.0", "0.99.0", "not in this collection's catalog"),
    ("0.12.3", "0.19.2", "installed Kueue 0.12.3 is not in this collection's catalog"),
])
def test_direction_refusals_name_target_version_and_a_fix(current, target, words):
    with pytest.raises(KueueOpsError) as caught:
        upgrade.check_direction(current, target)
    assert caught.value.field == "target_version" and words in caught.value.problem and caught.value.fix


def actions(prev, rec, inventory=None, live=None):
    return dict(((a["kind"], a["name"]), (a["severity"], a["text"])) for a in upgrade.minor_actions(
        cat.catalog_for(prev), cat.catalog_for(rec), inventory or {}, live or {}))


def test_019_actions_as_they_apply_to_the_cluster():
    live = {"frameworks": ["batch/job", "kubeflow.org/pytorchjob"], "feature_gates": {}, "config": {}}
    found = actions("0.18", "0.19", {"feature_gates": {"QuotaCheckStrategy": False}, "integrations": None}, live)
    assert found[("framework_default", "kubeflow.org/pytorchjob")][0] == "action"
    assert ("framework_default", "kubeflow.org/tfjob") not in found  # the running manager does not enable it
    assert found[("gate_default", "QuotaCheckStrategy")][0] == "info"  # the inventory pins it
    assert found[("gate_default", "AdmissionGatedBy")][0] == "action"
    assert found[("config_default", "waitForPodsReady")][0] == "action"
    pinned = actions("0.18", "0.19", {}, {"config": {"waitForPodsReady": {"timeout": "5m"}}})
    assert pinned[("config_default", "waitForPodsReady")][0] == "info"
    off = actions("0.18", "0.19", {"feature_gates": {"DisableWaitForPodsReady": True}}, {})
    assert "stays off" in off[("config_default", "waitForPodsReady")][1]


def test_removed_and_locked_gates_the_inventory_sets_are_refused():
    assert actions("0.15", "0.16", {"feature_gates": {"ConfigurableResourceTransformations": True}})[
        ("gate_removed", "ConfigurableResourceTransformations")][0] == "refused"
    assert actions("0.16", "0.17", {"feature_gates": {"LendingLimit": False}})[
        ("gate_locked", "LendingLimit")][0] == "refused"
    assert actions("0.19", "0.20", {}, {"config": {"apiVersion": "config.kueue.x-k8s.io/v1beta1"}})[
        ("config_refused", "apiVersion")][0] == "refused"
    assert ("config_refused", "apiVersion") not in actions(
        "0.19", "0.20", {}, {"config": {"apiVersion": "config.kueue.x-k8s.io/v1beta2"}})
    assert actions("0.19", "0.20")[("api_not_served", "v1beta1")][0] == "action"


def test_a_field_the_conversion_drops_is_refused_naming_the_object():
    check = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "AdmissionCheck", "metadata": {"name": "prov"},
             "spec": {"controllerName": "x", "retryDelayMinutes": 5}}
    plan = upgrade.build("0.15.0", "0.19.2", LOCAL.get, {"v1beta1"}, {}, {}, [check])
    assert any("AdmissionCheck prov" in r and "spec.retryDelayMinutes" in r for r in plan["refusals"])


def test_up_to_date_plan_and_its_lines():
    plan = upgrade.build("0.19.2", "0.19.2", LOCAL.get, {"v1beta2"}, {}, {})
    assert plan["up_to_date"] and not plan["migrate_first"] and plan["hops"] == []
    assert "nothing to upgrade" in upgrade.lines(plan)[0]


def test_the_inventory_is_checked_against_every_hop_and_against_the_target_when_up_to_date():
    gates = {"feature_gates": {"NoSuchGate": True}}
    up_to_date = upgrade.build("0.19.2", "0.19.2", LOCAL.get, {"v1beta2"}, gates, {})
    assert [r for r in up_to_date["refusals"] if "NoSuchGate" in r and r.startswith("kueue_feature_gates at 0.19.2")]
    two_hops = upgrade.build("0.15.0", "0.19.2", LOCAL.get, {"v1beta1"}, gates, {})
    assert sorted(r.split(":")[0] for r in two_hops["refusals"] if "NoSuchGate" in r) == [
        "kueue_feature_gates at 0.17.0", "kueue_feature_gates at 0.19.2"]
    assert upgrade.build("0.19.2", "0.19.2", LOCAL.get, {"v1beta2"}, {"integrations": ["batch/job"]}, {})[
        "refusals"] == []


# ------------------------------------------------------------------ into 0.20 and later (issue 39)
V1BETA1_CQ = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": "team-a"}}
V1BETA2_LQ = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
              "metadata": {"name": "lq", "namespace": "team-a"}}
AKS_DOC_VALUES = {"managerConfig": {"controllerManagerConfigYaml": "apiVersion: config.kueue.x-k8s.io/v1beta1\n"
                                                                   "kind: Configuration\n"}}


def test_into_020_the_migration_and_the_trim_come_before_the_hop():
    plan = upgrade.build("0.19.2", "0.20.6", dict(LOCAL, **{"0.20": "0.20.6"}).get, {"v1beta1", "v1beta2"}, {}, {})
    assert plan["migrate_first"] is True and plan["refusals"] == []
    assert [(h["from"], h["to"], h["migrate_storage"]) for h in plan["hops"]] == [("0.19.2", "0.20.6", False)]
    lines = upgrade.lines(plan)
    assert lines[1].startswith("first: storage migration at 0.19.2 - every Kueue object rewritten at v1beta2 and "
                               "each CRD's storedVersions trimmed to it, before any hop")
    assert lines.index(lines[1]) < next(i for i, line in enumerate(lines) if line.startswith("hop 1:"))
    served = [a for a in plan["actions"] if a["kind"] == "api_not_served"]
    assert served and served[0]["name"] == "v1beta1" and served[0]["minor"] == "0.20"


def test_a_declared_v1beta1_configuration_is_refused_naming_the_object_and_the_key():
    inventory = {"declared": [("resources[0]", V1BETA1_CQ), ("resources[1]", V1BETA2_LQ)], "values": AKS_DOC_VALUES,
                 "feature_gates": {}}
    plan = upgrade.build("0.19.2", "0.20.6", dict(LOCAL, **{"0.20": "0.20.6"}).get, {"v1beta2"}, inventory, {})
    assert plan["refusals"] == [
        "ClusterQueue team-a (resources[0]) is declared as kueue.x-k8s.io/v1beta1, which Kueue 0.20 no longer serves: "
        "declare it as kueue.x-k8s.io/v1beta2 (kueueops.aks.kueue_queues converts the fields Kueue renamed; kubectl "
        "and GitOps do not)",
        "kueue_helm_values: managerConfig.controllerManagerConfigYaml is a config.kueue.x-k8s.io/v1beta1 "
        "Configuration, which the Kueue 0.20 manager no longer decodes: write it as config.kueue.x-k8s.io/v1beta2 (as "
        "Kueue converts it: the apiVersion; fairSharing and waitForPodsReady without enable)"]
    # the same declarations are fine for a target that still serves and decodes v1beta1
    assert upgrade.build("0.18.4", "0.19.2", LOCAL.get, {"v1beta2"}, inventory, {})["refusals"] == []
    # The same Configuration from a values file (kueue_helm_values sets nothing): named as the files'.
    from_files = dict(inventory, values_given={})
    refusals = upgrade.build("0.19.2", "0.20.6", dict(LOCAL, **{"0.20": "0.20.6"}).get, {"v1beta2"}, from_files,
                             {})["refusals"]
    assert refusals[1].startswith("kueue_helm_values_files: managerConfig.controllerManagerConfigYaml is a "), refusals


def test_a_removed_gate_in_the_helm_values_or_the_inventory_is_refused():
    values = {"controllerManager": {"featureGates": [{"name": "HierarchicalCohorts", "enabled": True}]}}
    plan = upgrade.build("0.19.2", "0.20.6", dict(LOCAL, **{"0.20": "0.20.6"}).get, {"v1beta2"},
                         {"values": values, "feature_gates": {"ObjectRetentionPolicies": True}}, {})
    text = " ".join(plan["refusals"])
    assert "controllerManager.featureGates sets HierarchicalCohorts, which Kueue 0.20 removed" in text
    assert "ObjectRetentionPolicies" in text and "kueue_feature_gates" in text


def test_019_to_021_migrates_and_trims_before_the_hop_and_lists_both_minors():
    published = dict(LOCAL, **{"0.20": "0.20.6", "0.21": "0.21.0"}).get
    plan = upgrade.build("0.19.2", "0.21.0", published, {"v1beta1", "v1beta2"}, {}, {})
    assert plan["migrate_first"] is True and plan["refusals"] == []
    assert [(h["from"], h["to"]) for h in plan["hops"]] == [("0.19.2", "0.21.0")]
    assert sorted(set(a["minor"] for a in plan["actions"])) == ["0.20", "0.21"]
    lines = upgrade.lines(plan)
    assert "storedVersions trimmed" in lines[1] and lines[2].startswith("hop 1: 0.19.2 -> 0.21.0")
    # a declared v1beta1 object is refused for 0.21 too
    inventory = {"declared": [("src:queues.yml#0", V1BETA1_CQ)]}
    refused = upgrade.build("0.19.2", "0.21.0", published, {"v1beta2"}, inventory, {})["refusals"]
    assert refused and refused[0].startswith("ClusterQueue team-a (src:queues.yml#0) is declared as "
                                             "kueue.x-k8s.io/v1beta1, which Kueue 0.21 no longer serves")


def test_020s_broken_patches_are_never_a_hop():
    from ansible_collections.kueueops.aks.plugins.module_utils.kueue import release_train
    assert release_train.broken("0.20.5") is not None and release_train.broken("0.20.6") is None
    assert release_train.good(["0.20.5-aks.0.4.4", "0.20.6-aks.0.4.4"], minor="0.20") == ["0.20.6-aks.0.4.4"]


def test_a_changelog_note_on_what_the_catalog_already_says_joins_its_line():
    plan = upgrade.build("0.19.2", "0.20.6", dict(LOCAL, **{"0.20": "0.20.6"}).get, {"v1beta2"}, {}, {})
    keys = [(a["minor"], a["name"]) for a in plan["actions"]]
    assert len(keys) == len(set(keys)), keys
    gate = next(a for a in plan["actions"] if a["name"] == "WorkloadPriorityClassDefaulting")
    assert gate["kind"] == "gate_default" and "(Kueue 0.20 CHANGELOG)" in gate["text"]


def test_chart_values_a_minor_added_moved_or_removed(monkeypatch):
    rec = cat.catalog_for("0.20")
    monkeypatch.setattr(rec, "chart_values", [
        {"key": "controllerManager.strategy", "change": "added"},
        {"key": "managerConfig.old", "change": "removed", "text": "gone"},
        {"key": "managerConfig.moved", "change": "moved", "text": "now managerConfig.config", "unconfirmed": True}])
    values = {"managerConfig": {"old": 1, "moved": 2}}
    plan = upgrade.build("0.19.2", "0.20.6", dict(LOCAL, **{"0.20": "0.20.6"}).get, {"v1beta2"}, {"values": values}, {})
    by_kind = dict((a["kind"], a) for a in plan["actions"])
    assert by_kind["chart_values"]["text"] == "the Kueue 0.20 chart has new values: controllerManager.strategy"
    assert by_kind["chart_value_moved"]["severity"] == "action" and "(unconfirmed)" in by_kind["chart_value_moved"]["text"]
    assert any("kueue_helm_values sets managerConfig.old, which the Kueue 0.20 chart removed" in r
               for r in plan["refusals"])
    plain = upgrade.build("0.19.2", "0.20.6", dict(LOCAL, **{"0.20": "0.20.6"}).get, {"v1beta2"}, {}, {})
    assert plain["refusals"] == [] and "chart_value_moved" not in [a["kind"] for a in plain["actions"]]
    # A key only the values files set is named as theirs; one kueue_helm_values sets (over the files) as its.
    files = upgrade.build("0.19.2", "0.20.6", dict(LOCAL, **{"0.20": "0.20.6"}).get, {"v1beta2"},
                          {"values": values, "values_given": {"managerConfig": {"moved": 3}}}, {})
    assert any(r.startswith("kueue_helm_values_files sets managerConfig.old,") for r in files["refusals"])
    moved = dict((a["kind"], a) for a in files["actions"])["chart_value_moved"]["text"]
    assert moved.startswith("kueue_helm_values sets managerConfig.moved;"), moved
