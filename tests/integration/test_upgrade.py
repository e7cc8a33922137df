"""The Day 2 upgrade (issue 15): playbooks/upgrade.yml on the real local control plane, from Kueue 0.15.0 (storage
v1beta1) with queues written in v1beta1 and Jobs queued, to 0.19.2 - the plan printed by check mode with nothing
changed, the hops 0.15.0 -> 0.17.0 (storage migration) -> 0.19.2, every object stored as v1beta2 in etcd (read from
etcd itself) and every CRD's storedVersions trimmed, each object's spec equal to the backup, the Workloads kept
(pending stay pending, admitted stay admitted, then the pending ones admitted by the new manager), a re-run with
nothing changed; and the refusals of bad targets before anything is written.
"""
from __future__ import annotations

import os
import threading

import pytest
import yaml
from kubernetes import client

from .ansible import run_playbook
from .kubeutil import (etcd_objects, helm_revision, kueue_plurals, live_normalised, queued_job, reset_kueue,
                       resource_versions, wait_for)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SITE = os.path.join(REPO, "playbooks", "site.yml")
UPGRADE = os.path.join(REPO, "playbooks", "upgrade.yml")
NS = "up-team"
GROUP = "kueue.x-k8s.io"
V1BETA1 = [
    {"apiVersion": GROUP + "/v1beta1", "kind": "ResourceFlavor", "metadata": {"name": "up-flavor"}},
    {"apiVersion": GROUP + "/v1beta1", "kind": "ClusterQueue", "metadata": {"name": "up-cq"},
     "spec": {"cohort": "up-cohort", "namespaceSelector": {},
              "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                  {"name": "up-flavor", "resources": [{"name": "cpu", "nominalQuota": "1"}]}]}]}},
    {"apiVersion": GROUP + "/v1beta1", "kind": "LocalQueue", "metadata": {"name": "up-lq", "namespace": NS},
     "spec": {"clusterQueue": "up-cq"}},
]


def etcd_api_versions(cluster) -> dict:
    """{etcd key: apiVersion} of every object of Kueue's group as etcd stores it."""
    return dict((key, value["apiVersion"]) for key, value in etcd_objects(cluster, "/registry/%s/" % GROUP).items())


def stored_versions(kube) -> dict:
    crds = client.ApiextensionsV1Api(kube).list_custom_resource_definition().items
    return dict((c.metadata.name, list(c.status.stored_versions)) for c in crds if c.spec.group == GROUP)


def workload_states(kube) -> dict:
    items = client.CustomObjectsApi(kube).list_namespaced_custom_object(GROUP, "v1beta2", NS, "workloads")["items"]
    return dict((w["metadata"]["uid"], any(c["type"] == "Admitted" and c["status"] == "True"
                                           for c in (w.get("status") or {}).get("conditions") or []))
                for w in items)


def plan_task(extra):
    args = {"chart_ref": "{{ kueue_helm_chart_ref }}", "plain_http": True,
            "binary_path": "{{ lookup('env', 'HELM_V3') }}"}
    args.update(extra)
    return [{"name": "Plan", "hosts": "local", "gather_facts": False,
             "tasks": [{"name": "Plan the upgrade", "kueueops.aks.kueue_upgrade_plan": args}]}]


@pytest.fixture(scope="module")
def at_015(cluster, kube):
    """Kueue 0.15.0 installed with the inventory's gates and integrations, the queues written in v1beta1, three
    Jobs of 600m on a 1-CPU queue: one admitted, two pending."""
    reset_kueue(kube, [NS], extension=False)
    env = {"PATH": os.path.dirname(os.environ["HELM_V3"]) + os.pathsep + os.environ["PATH"]}
    res = run_playbook(SITE, extravars={"kueue_version": "0.15.0"}, env=env)
    assert res.rc == 0, res.stdout[-3000:]
    client.CoreV1Api(kube).create_namespace({"metadata": {"name": NS}})
    custom = client.CustomObjectsApi(kube)
    for obj in V1BETA1:
        plural = kueue_plurals(obj["kind"])[obj["kind"]]
        if obj["kind"] == "LocalQueue":
            custom.create_namespaced_custom_object(GROUP, "v1beta1", NS, plural, obj)
        else:
            custom.create_cluster_custom_object(GROUP, "v1beta1", plural, obj)
    for index in range(3):
        client.BatchV1Api(kube).create_namespaced_job(NS, queued_job("up-job-%d" % index, "up-lq", cpu="600m"))
    wait_for("one Workload admitted, two pending", lambda: sorted(workload_states(kube).values()) ==
             [False, False, True])
    # The manager goes on writing the queues' statuses (pending and admitted counts) for a moment after that; the
    # tests below compare resourceVersions to prove nothing was written, so they start once the statuses are still
    # (the first bad-target case failed on a loaded machine: the ClusterQueue's and LocalQueue's moved).
    seen = []

    def still():
        seen.append(resource_versions(kube, kueue_plurals()))
        return len(seen) > 1 and seen[-1] == seen[-2]
    wait_for("the queues' statuses to stop changing", still, timeout=90, interval=3)
    yield env
    reset_kueue(kube, [NS], extension=False)


@pytest.mark.parametrize("target, field, words", [
    ("0.18.0", "target_version", "not published"),
    ("0.99.0", "target_version", "not published"),
    ("0.19", "target_version", "not a Kueue version"),
])
def test_bad_targets_are_refused_before_anything_is_written(kube, at_015, target, field, words):
    plurals = kueue_plurals()
    before = (resource_versions(kube, plurals), helm_revision(kube))
    res = run_playbook(plan_task({"target_version": target}), env=at_015)
    assert res.rc != 0
    msg = res.result("Plan the upgrade")["msg"]
    assert msg.startswith(field + ":") and words in msg and "Fix:" in msg and "Traceback" not in msg
    assert (resource_versions(kube, plurals), helm_revision(kube)) == before


def test_a_gate_the_target_removed_is_refused_with_the_whole_plan(kube, at_015):
    """ConfigurableResourceTransformations exists in 0.15 and is removed in 0.16: set in the inventory, the plan
    refuses the upgrade, naming the gate and the variable, and still returns the plan. (Runs before the upgrade
    test, which leaves 0.19.2.)"""
    res = run_playbook(plan_task({"target_version": "0.19.2",
                                  "feature_gates": {"ConfigurableResourceTransformations": True}}), env=at_015)
    assert res.rc != 0
    out = res.result("Plan the upgrade")
    assert out["msg"].startswith("target_version: the upgrade from Kueue 0.15.0 to 0.19.2 is refused")
    assert "ConfigurableResourceTransformations" in out["msg"] and "kueue_feature_gates" in out["msg"]
    assert [h["to"] for h in out["plan"]["hops"]] == ["0.17.0", "0.19.2"]


def test_upgrade_015_to_019_plans_migrates_and_keeps_every_object_and_workload(cluster, kube, at_015, tmp_path):
    env = at_015
    plurals = kueue_plurals()
    before_versions = resource_versions(kube, plurals)
    before_helm = helm_revision(kube)
    stored = etcd_api_versions(cluster)
    assert stored and set(stored.values()) == {GROUP + "/v1beta1"}  # 0.15 stores v1beta1
    states = workload_states(kube)

    # 1. Check mode: the plan is printed; the Helm revision, every object and every CRD stay as they were.
    check = run_playbook(UPGRADE, check=True, env=env)
    assert check.rc == 0, check.stdout[-3000:]
    plan = check.result("Plan the upgrade")
    assert plan["current_version"] == "0.15.0" and plan["target_version"] == "0.19.2"
    assert [(h["from"], h["to"], h["migrate_storage"]) for h in plan["hops"]] == [
        ("0.15.0", "0.17.0", True), ("0.17.0", "0.19.2", False)]
    assert "0.16" in plan["hops"][0]["why"] and "v1beta2" in plan["hops"][0]["why"]
    kinds = dict(((a["minor"], a["kind"], a["name"]), a["severity"]) for a in plan["actions"])
    assert kinds[("0.16", "storage_version", "v1beta2")] == "info"
    assert kinds[("0.19", "config_default", "waitForPodsReady")] == "action"
    # The inventory sets LocalQueueMetrics: its new default (0.17) is information, not an action.
    assert kinds[("0.17", "gate_default", "LocalQueueMetrics")] == "info"
    assert any("0.15.0 -> 0.17.0 -> 0.19.2" in line for line in plan["lines"])
    assert plan["refusals"] == []
    assert helm_revision(kube) == before_helm
    assert resource_versions(kube, plurals) == before_versions
    assert etcd_api_versions(cluster) == stored
    assert set(v for vs in stored_versions(kube).values() for v in vs) == {"v1beta1"}

    # 2. The upgrade.
    backup_dir = str(tmp_path / "backups")
    run = run_playbook(UPGRADE, extravars={"kueue_backup_dir": backup_dir}, env=env)
    assert run.rc == 0, run.stdout[-5000:]
    versions = [r["chart_version"] for name, r in run.tasks() if "Upgrade Kueue with Helm to" in name and "chart_version" in r]
    assert versions == ["0.17.0", "0.19.2"]
    migration, = [r for name, r in run.tasks() if "Rewrite every Kueue object" in name and "crds" in r]
    assert migration["changed"] is True and migration["remaining"] == 0
    rewritten = dict((c["name"], c["rewritten"]) for c in migration["crds"])
    assert rewritten["workloads.kueue.x-k8s.io"] == 3 and rewritten["clusterqueues.kueue.x-k8s.io"] == 1
    compare = run.result("Compare the live configuration and the Workloads with the backup")
    assert compare["matches"] is True and compare["differences"] == [] and compare["lost_workloads"] == []
    assert helm_revision(kube) == (before_helm[0] + 2, "deployed")

    # Every object now stored as v1beta2 (the same keys: nothing lost), every CRD lists v1beta2 alone.
    after = etcd_api_versions(cluster)
    assert set(after) >= set(stored) and set(after.values()) == {GROUP + "/v1beta2"}
    assert set(tuple(v) for v in stored_versions(kube).values()) == {("v1beta2",)}
    # Pending stayed pending, admitted stayed admitted (the same Workloads, by uid).
    assert workload_states(kube) == states
    cq = client.CustomObjectsApi(kube).get_cluster_custom_object(GROUP, "v1beta2", "clusterqueues", "up-cq")
    assert cq["spec"]["cohortName"] == "up-cohort"  # v1beta1's spec.cohort, converted

    # The 0.19.2 manager admits a queued Job once there is room for one: quota raised to 1.5 CPU (2 x 600m).
    client.CustomObjectsApi(kube).patch_cluster_custom_object(GROUP, "v1beta2", "clusterqueues", "up-cq", {
        "spec": {"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
            {"name": "up-flavor", "resources": [{"name": "cpu", "nominalQuota": "1500m"}]}]}]}})
    wait_for("a second Workload admitted by Kueue 0.19.2", lambda: sorted(workload_states(kube).values()) ==
             [False, True, True])

    # 3. A re-run: the plan says up to date, nothing is written.
    again = run_playbook(UPGRADE, extravars={"kueue_backup_dir": backup_dir}, env=env)
    assert again.rc == 0, again.stdout[-3000:]
    assert again.changed == 0
    assert again.result("Plan the upgrade")["up_to_date"] is True

    # 4. Back down is refused before anything is written.
    before = (resource_versions(kube, plurals), helm_revision(kube))
    down = run_playbook(plan_task({"target_version": "0.17.0"}), env=env)
    assert down.rc != 0
    msg = down.result("Plan the upgrade")["msg"]
    assert msg.startswith("target_version: Kueue 0.17.0 is older than the installed 0.19.2") and "Fix:" in msg
    assert (resource_versions(kube, plurals), helm_revision(kube)) == before


def manager_image(kube) -> str:
    deployment = client.AppsV1Api(kube).read_namespaced_deployment("kueue-controller-manager", "kueue-system")
    return deployment.spec.template.spec.containers[0].image.rsplit(":", 1)[-1]


def test_upgrade_018_with_the_example_configuration_a_failed_hop_rolled_back_then_the_upgrade(cluster, kube, tmp_path):
    """0.18.4 with the example platform configuration (the local inventory's gates and integrations,
    playbooks/vars/queues.yml) and two Jobs admitted. First the 0.19.2 manager is held (its Pods never turn ready,
    as an image that cannot be pulled or a manager crash-looping on its configuration): the hop fails, is rolled
    back with helm rollback, the 0.18.4 manager serves again, every object and Workload is as before, the run fails
    naming the hop, why and the state. Then, the hold released, the same command upgrades, the plan listing
    WaitForPodsReady's new default in 0.19 as an action for this cluster."""
    reset_kueue(kube, ["team-vision", "team-nlp"], extension=False)
    env = {"PATH": os.path.dirname(os.environ["HELM_V3"]) + os.pathsep + os.environ["PATH"]}
    with open(os.path.join(REPO, "playbooks", "vars", "queues.yml")) as handle:
        example = yaml.safe_load(handle)
    site = run_playbook(SITE, extravars=dict(example, kueue_version="0.18.4"), env=env)
    assert site.rc == 0, site.stdout[-3000:]
    for index in range(2):
        client.BatchV1Api(kube).create_namespaced_job("team-vision", queued_job("up18-job-%d" % index, "vision"))
    plurals = kueue_plurals()

    def states():
        items = client.CustomObjectsApi(kube).list_namespaced_custom_object(
            GROUP, "v1beta2", "team-vision", "workloads")["items"]
        return dict((w["metadata"]["uid"], any(c["type"] == "Admitted" and c["status"] == "True"
                                               for c in (w.get("status") or {}).get("conditions") or []))
                    for w in items)
    wait_for("two Workloads admitted by Kueue 0.18.4", lambda: sorted(states().values()) == [True, True])
    before_objects, before_states, before_helm = live_normalised(kube, plurals), states(), helm_revision(kube)

    # Issue 39: the nightly site.yml with the default kueue_version (latest) stays on 0.18 - the release's chart
    # version, nothing changed - and names the newer minor and the command that crosses it.
    nightly = run_playbook(SITE, extravars=example, env=env)
    assert nightly.rc == 0 and nightly.changed == 0, nightly.stdout[-3000:]
    installed = nightly.result("Install or upgrade Kueue with Helm")
    assert (installed["chart_version"], installed["installed_version"], installed["changed"]) == (
        "0.18.4", "0.18.4", False)
    notice = installed["notices"][0]
    assert notice.startswith("Kueue 0.19.2 is published, a newer minor than the installed 0.18.4"), notice
    assert "playbooks/upgrade.yml --check prints the plan" in notice and notice in installed["warnings"]
    assert any(notice in line for line in nightly.result("Report what was installed")["msg"])
    assert helm_revision(kube) == before_helm and manager_image(kube) == "v0.18.4"
    # A pin to the next minor through the install entry point: refused before any write, naming upgrade.yml.
    pinned = run_playbook(SITE, extravars=dict(example, kueue_version="0.19.2"), env=env)
    assert pinned.rc != 0, pinned.stdout[-3000:]
    msg = pinned.failure_messages()[0]
    assert msg.startswith("chart_version: Kueue 0.18.4 is installed, and 0.19.2 would upgrade it to another minor"), msg
    assert "playbooks/upgrade.yml -e kueue_version=0.19.2 --check" in msg and "kueue_version" in msg, msg
    assert "Traceback" not in pinned.stdout + pinned.stderr
    assert helm_revision(kube) == before_helm and live_normalised(kube, plurals) == before_objects

    extravars = {"kueue_version": "0.19.2", "kueue_backup_dir": str(tmp_path / "backups"), "kueue_helm_timeout": 15}

    # The hop to 0.19.2 never gets a ready manager; while helm waits (after the backup: the release has a new
    # revision), a LocalQueue is lost, so the rollback has something to restore from the backup.
    hold = cluster.path("agent", "hold")
    with open(hold, "w") as handle:
        handle.write("v0.19.2\n")
    outcome = {}
    runner = threading.Thread(target=lambda: outcome.update(res=run_playbook(UPGRADE, extravars=extravars, env=env)))
    runner.start()
    try:
        wait_for("helm upgrade to start", lambda: helm_revision(kube)[0] > before_helm[0], timeout=300)
        client.CustomObjectsApi(kube).delete_namespaced_custom_object(GROUP, "v1beta2", "team-nlp", "localqueues", "nlp")
        runner.join(600)
    finally:
        os.unlink(hold)
    failed = outcome["res"]
    assert failed.rc != 0, failed.stdout[-3000:]
    msg = failed.failure_messages()[-1]
    assert msg.startswith('The upgrade hop 0.18.4 -> 0.19.2 failed at "Upgrade Kueue with Helm to 0.19.2'), msg
    # why: helm's wait, and what it waited for (the new manager Pod the harness holds, the old one still serving)
    assert "helm --wait gave up after 15s" in msg and "the rollout is not complete" in msg, msg
    assert "HeldByHarness" in msg, msg
    assert "Kueue 0.18.4 runs again (helm rollback to revision %d" % before_helm[0] in msg, msg
    assert "was restored with admission held: LocalQueue team-nlp/nlp" in msg and "Fix:" in msg, msg
    assert "Traceback" not in failed.stdout + failed.stderr
    assert failed.result("Roll back the hop")["changed"] is True
    assert not failed.result("Verify the rolled-back Kueue").get("failed")
    assert failed.result("Restore what is missing or changed")["held"]  # admission held while restoring
    # The cluster serves the old version with every object and every Workload as before the run.
    assert manager_image(kube) == "v0.18.4" and helm_revision(kube)[1] == "deployed"
    assert helm_revision(kube)[0] > before_helm[0]
    assert live_normalised(kube, plurals) == before_objects
    assert states() == before_states

    # The real upgrade with the default helm timeout: the 15 s above only makes the held hop fail fast, and a manager
    # that starts in more than 15 s on a loaded machine failed this run on Kubernetes 1.37.2 (issue 45).
    upgraded = run_playbook(UPGRADE, extravars={k: v for k, v in extravars.items() if k != "kueue_helm_timeout"}, env=env)
    assert upgraded.rc == 0, upgraded.stdout[-5000:]
    plan = upgraded.result("Plan the upgrade")
    assert [(h["from"], h["to"], h["migrate_storage"]) for h in plan["hops"]] == [("0.18.4", "0.19.2", False)]
    actions = dict(((a["minor"], a["kind"], a["name"]), a) for a in plan["actions"])
    wait_for_pods_ready = actions[("0.19", "config_default", "waitForPodsReady")]
    assert wait_for_pods_ready["severity"] == "action" and "WaitForPodsReady" in wait_for_pods_ready["text"]
    assert any("WaitForPodsReady" in line for line in upgraded.result("Print the plan")["msg"])
    assert plan["refusals"] == []
    compare = upgraded.result("Compare the live configuration and the Workloads with the backup")
    assert compare["matches"] is True and compare["lost_workloads"] == []
    assert manager_image(kube) == "v0.19.2"
    assert live_normalised(kube, plurals) == before_objects and states() == before_states

    # Issue 39: on 0.19.2, a hop into 0.20 while a CRD's storedVersions still names v1beta1 (objects written before
    # 0.16 and never migrated) is refused by kueue_helm itself before anything is written, even with the upgrade
    # role's allow_minor_change; the registry is not asked (it has no 0.20 chart).
    crds = client.ApiextensionsV1Api(kube)
    crd = "clusterqueues.kueue.x-k8s.io"
    crds.patch_custom_resource_definition_status(crd, {"status": {"storedVersions": ["v1beta1", "v1beta2"]}})
    try:
        before_helm = helm_revision(kube)
        hop = run_playbook([{"name": "hop", "hosts": "local", "gather_facts": False, "tasks": [{
            "name": "Hop into 0.20", "kueueops.aks.kueue_helm": {
                "chart_ref": "{{ kueue_helm_chart_ref }}", "plain_http": True, "chart_version": "0.20.6",
                "allow_minor_change": True, "binary_path": "{{ lookup('env', 'HELM_V3') }}"}}]}], env=env)
        assert hop.rc != 0, hop.stdout[-3000:]
        msg = hop.result("Hop into 0.20")["msg"]
        assert msg.startswith("chart_version: the Kueue CRDs still record objects stored as kueue.x-k8s.io/v1beta1 "
                              "(status.storedVersions of %s), which Kueue 0.20 does not serve" % crd), msg
        assert "playbooks/upgrade.yml does it before its first hop" in msg and "Traceback" not in hop.stdout
        assert helm_revision(kube) == before_helm and live_normalised(kube, plurals) == before_objects
    finally:
        crds.patch_custom_resource_definition_status(crd, {"status": {"storedVersions": ["v1beta2"]}})
    reset_kueue(kube, ["team-vision", "team-nlp"], extension=False)
