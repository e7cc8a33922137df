"""The drift report (issue 16, items 1 and 3): playbooks/status.yml with a declared configuration runs
kueueops.aks.kueue_drift_info against the real local control plane and the real Kueue manager, read-only.

One Kueue install (the module's `kueue` fixture) and three ansible-playbook runs for the Helm path: the declared
configuration applied once with kueue_queues, then status.yml on the clean cluster (no drift, exit 0, changed=0,
nothing written), then after the changes an admin makes behind the collection's back - a value set on the Helm
release (helm upgrade --reuse-values --set), a ClusterQueue quota edited as `kubectl edit` does (another field
manager), a LocalQueue deleted, a ClusterQueue created by hand, the manager's
Configuration ConfigMap edited (a feature gate turned off there, waitForPodsReady turned on), an object dropped from
the declaration - status.yml with kueue_fail_on_drift names every object, field and key, writes the report and
fails after it. A MultiKueue Secret declared in the src file is rotated by hand too: reported
changed, its values shown as neither the declared nor the live one. The declared install is what the release holds
(its values read with helm), so only the edits differ.

Every object is named dr-*; the ConfigMap is put back and the objects removed afterwards.
"""
from __future__ import annotations

import copy
import json
import os

import pytest
import yaml
from kubernetes import client

from tests.reliability import rbac

from .ansible import REPO, run_playbook
from .kubeutil import delete_kueue_objects, delete_namespaces, helm, kueue_crds, kueue_plurals, reset_kueue, wait_for

STATUS = os.path.join(REPO, "playbooks", "status.yml")
GROUP, V2 = "kueue.x-k8s.io", "kueue.x-k8s.io/v1beta2"
PLURALS = kueue_plurals()  # every kind of a configuration
TEAM_NS = "dr-team-a"
CONFIGMAP = ("kueue-system", "kueue-manager-config")


def cq(name, cpu):
    return {"apiVersion": V2, "kind": "ClusterQueue", "metadata": {"name": name},
            "spec": {"cohortName": "dr-research", "namespaceSelector": {}, "resourceGroups": [
                {"coveredResources": ["cpu", "memory"], "flavors": [{"name": "dr-cpu", "resources": [
                    {"name": "cpu", "nominalQuota": cpu}, {"name": "memory", "nominalQuota": "64Gi"}]}]}]}}


DECLARED = [
    {"apiVersion": V2, "kind": "ResourceFlavor", "metadata": {"name": "dr-cpu"},
     "spec": {"nodeLabels": {"kubernetes.azure.com/scalesetpriority": "regular"}}},
    {"apiVersion": V2, "kind": "WorkloadPriorityClass", "metadata": {"name": "dr-high"}, "value": 1000},
    cq("dr-team-a", 16),
    cq("dr-team-b", 8),
    {"apiVersion": V2, "kind": "LocalQueue", "metadata": {"name": "dr-queue", "namespace": TEAM_NS},
     "spec": {"clusterQueue": "dr-team-a"}},
    {"apiVersion": V2, "kind": "MultiKueueCluster", "metadata": {"name": "dr-worker"},
     "spec": {"clusterSource": {"kubeConfig": {"location": "dr-worker-kubeconfig", "locationType": "Secret"}}}},
]
# A MultiKueue Secret, declared in the src file (as a backup holds it; through kueue_secrets, a no_log option,
# Ansible would mask every string of it, its name and kind too): its values must never show, drifted or not.
DECLARED_TOKEN, LIVE_TOKEN = "dr-declared-token-5a1b9c", "dr-rotated-token-77e2d4"
SECRETS = [{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "dr-worker-kubeconfig"},
            "stringData": {"kubeconfig": "apiVersion: v1\nkind: Config\nclusters:\n- name: w\n  cluster: {server: "
                                         "'https://127.0.0.1:1'}\nusers:\n- name: w\n  user: {token: %s}\ncontexts:\n"
                                         "- name: w\n  context: {cluster: w, user: w}\ncurrent-context: w\n"
                                         % DECLARED_TOKEN}}]


def _ours(_kind, meta):
    return meta["name"].startswith("dr-") or meta.get("namespace", "").startswith("dr-")


def _foreign(kube):
    custom = client.CustomObjectsApi(kube)
    return sorted("%s %s" % (kind, item["metadata"]["name"]) for kind, plural in PLURALS.items()
                  for item in custom.list_cluster_custom_object(GROUP, "v1beta2", plural)["items"]
                  if not _ours(kind, item["metadata"]))


def _write(path, docs):
    with open(path, "w") as handle:
        yaml.safe_dump_all(docs, handle, sort_keys=False)
    return str(path)


@pytest.fixture(scope="module")
def declared(cluster, kueue, tmp_path_factory):
    """The dr- configuration applied by kueue_queues (field manager kueueops); the declared install = the release's
    own values. Yields the status.yml variables of the clean cluster."""
    kube = kueue
    assert not _foreign(kube), "this module compares the whole cluster: other Kueue objects are here: %s" % (
        _foreign(kube),)
    core = client.CoreV1Api(kube)
    configmap = core.read_namespaced_config_map(CONFIGMAP[1], CONFIGMAP[0]).data
    values = json.loads(helm(cluster, os.environ["HELM_V3"], "get", "values", "kueue", "-n", "kueue-system",
                             "-o", "json").stdout or "{}") or {}
    chart = [r for r in json.loads(helm(cluster, os.environ["HELM_V3"], "list", "-n", "kueue-system", "-o",
                                        "json").stdout) if r["name"] == "kueue"][0]["chart"].rsplit("-", 1)[1]
    folder = tmp_path_factory.mktemp("drift")
    src = _write(folder / "queues.yaml", DECLARED + SECRETS)
    apply = run_playbook([{"hosts": "local", "gather_facts": False, "tasks": [
        {"name": "Apply the declared configuration", "kueueops.aks.kueue_queues": {
            "src": src, "create_namespaces": True, "wait": False,
            "kubeconfig": "{{ kueue_kubeconfig }}"}}]}])
    assert apply.rc == 0, apply.stdout[-3000:]
    variables = {"kueue_resources_src": src, "kueue_version": chart, "kueue_feature_gates": {},
                 "kueue_integrations": [], "kueue_helm_values": values, "kueue_fail_on_drift": True}
    try:
        yield kube, variables, folder
    finally:
        delete_namespaces(kube, [TEAM_NS])
        try:
            core.delete_namespaced_secret("dr-worker-kubeconfig", "kueue-system")
        except client.exceptions.ApiException as exc:
            if exc.status != 404:
                raise
        if _kueue_served(kube):  # the extension test ends with Kueue removed with the extension
            core.patch_namespaced_config_map(CONFIGMAP[1], CONFIGMAP[0], {"data": configmap})
            delete_kueue_objects(kube, PLURALS, _ours)
            wait_for("the dr- objects to be gone", lambda: not [k for k, plural in PLURALS.items() for i in
                     client.CustomObjectsApi(kube).list_cluster_custom_object(GROUP, "v1beta2", plural)["items"]
                     if _ours(k, i["metadata"])], timeout=120)


def _kueue_served(kube):
    return bool(kueue_crds(kube))


def test_a_clean_cluster_has_no_drift_and_status_changes_nothing(declared):
    kube, variables, _folder = declared
    before = rbac.stable_snapshot(kube)
    result = run_playbook(STATUS, extravars=variables)  # no report file: writing one is the run's only change
    assert result.rc == 0 and result.changed == 0, (result, result.stdout[-4000:])
    found = result.result("Compare the declared queue configuration")
    assert found["drift"] is False and not any(found["counts"].values()), found
    assert found["objects"]["declared"] == len(DECLARED) + len(SECRETS)
    assert found["install"]["method"] == "helm" and found["install"]["compared"] is True, found["install"]
    shown = result.result("Show the status")["msg"]
    assert shown[0].endswith("; drift: none"), shown[0]
    assert "Drift: queue objects: none" in shown and "Drift: install (helm): none" in shown, shown
    assert rbac.snapshot(kube) == before


def test_changes_behind_the_collections_back_are_named_and_fail_the_run_after_the_report(cluster, declared):
    kube, variables, folder = declared
    custom, core = client.CustomObjectsApi(kube), client.CoreV1Api(kube)
    # A value set on the release by hand (helm upgrade --reuse-values --set): the chart's default, so no Pod changes.
    helm(cluster, os.environ["HELM_V3"], "upgrade", "kueue", os.environ["KUEUE_CHART_REF"], "--version",
         variables["kueue_version"], "--plain-http", "-n", "kueue-system", "--reuse-values", "--set",
         "controllerManager.replicas=1", "--wait", "--timeout", "5m")
    # kubectl edit of a quota: an Update by another field manager.
    edited = custom.get_cluster_custom_object(GROUP, "v1beta2", "clusterqueues", "dr-team-a")
    edited["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "40"
    custom.replace_cluster_custom_object(GROUP, "v1beta2", "clusterqueues", "dr-team-a", edited,
                                         field_manager="kubectl-edit")
    custom.delete_namespaced_custom_object(GROUP, "v1beta2", TEAM_NS, "localqueues", "dr-queue")
    by_hand = copy.deepcopy(cq("dr-by-hand", 4))
    custom.create_cluster_custom_object(GROUP, "v1beta2", "clusterqueues", by_hand, field_manager="kubectl-create")
    # The manager's Configuration edited in its ConfigMap: waitForPodsReady on, a gate turned off there.
    data = core.read_namespaced_config_map(CONFIGMAP[1], CONFIGMAP[0]).data
    config = yaml.safe_load(data["controller_manager_config.yaml"])
    config["waitForPodsReady"] = {"enable": True}
    config["featureGates"] = {"TopologyAwareScheduling": False}
    core.patch_namespaced_config_map(CONFIGMAP[1], CONFIGMAP[0], {"data": {
        "controller_manager_config.yaml": yaml.safe_dump(config)}})
    # The MultiKueue Secret rotated by hand.
    core.patch_namespaced_secret("dr-worker-kubeconfig", "kueue-system", {"stringData": {
        "kubeconfig": SECRETS[0]["stringData"]["kubeconfig"].replace(DECLARED_TOKEN, LIVE_TOKEN)}})
    # The WorkloadPriorityClass no longer declared: applied by kueueops, now extra.
    src = _write(folder / "queues-without-wpc.yaml",
                 [d for d in DECLARED + SECRETS if d["kind"] != "WorkloadPriorityClass"])
    report = folder / "drift.html"
    # dr-by-hand was created just above: the manager's status write must not land inside the read-only run.
    before = rbac.stable_snapshot(kube)
    result = run_playbook(STATUS, diff=True, extravars=dict(variables, kueue_resources_src=src,
                                                            kueue_status_report=str(report)))
    assert result.rc != 0, result.stdout[-4000:]
    assert rbac.snapshot(kube) == before  # read-only, even failing
    failed = [name for name, res in result.tasks() if res.get("failed")]
    assert failed == ["Fail the clusters that drifted from the declared configuration (kueue_fail_on_drift)"], failed
    assert "drifted from the declared configuration" in result.failure_messages()[0]
    found = result.result("Compare the declared queue configuration")
    objects = found["objects"]
    assert objects["missing"] == [{"kind": "LocalQueue", "namespace": TEAM_NS, "name": "dr-queue"}]
    assert [(c["kind"], c["name"], c["fields"]) for c in objects["changed"]] == [
        ("Secret", "dr-worker-kubeconfig", [{"field": "data.kubeconfig", "declared": "VALUE_REDACTED_BY_KUEUEOPS",
                                             "live": "VALUE_REDACTED_BY_KUEUEOPS"}]),
        ("ClusterQueue", "dr-team-a", [{"field": "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota",
                                        "declared": "16", "live": "40"}])]
    output = result.stdout + result.stderr + report.read_text()
    assert DECLARED_TOKEN not in output and LIVE_TOKEN not in output
    assert objects["extra"] == [{"kind": "WorkloadPriorityClass", "name": "dr-high"}]
    assert objects["undeclared"] == [{"kind": "ClusterQueue", "name": "dr-by-hand", "managers": ["kubectl-create"]}]
    install = dict(((d["source"], d["key"]), (d["declared"], d["live"])) for d in found["install"]["differences"])
    assert install == {("helm values", "controllerManager"): ("(absent)", {"replicas": 1}),
                       ("manager configuration", "waitForPodsReady"): ("(absent)", {"enable": True}),
                       ("manager configuration", "featureGates"): ("(absent)", {"TopologyAwareScheduling": False}),
                       ("feature gates", "TopologyAwareScheduling"): ("(absent)", False)}, install
    assert found["counts"] == {"missing": 1, "changed": 2, "extra": 1, "undeclared": 1, "install": 4}
    # The same diff as kueue_queues' diff mode: before = live, after = the declared values over it.
    diffs = dict((d["before_header"], d) for d in found["diff"])
    quota = diffs["ClusterQueue dr-team-a (live)"]
    assert quota["before"]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] == "40"
    assert quota["after"]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] == "16"
    # The report, printed and written, names each object, field and key.
    shown = "\n".join(result.result("Show the status")["msg"])
    for text in ("drift: 1 missing, 2 changed, 1 extra, 1 undeclared, 4 install key(s) differ",
                 "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota", "LocalQueue dr-team-a/dr-queue",
                 "by kubectl-create", "WorkloadPriorityClass dr-high", "waitForPodsReady"):
        assert text in shown, (text, shown)
    html = report.read_text()
    assert "<h3>Drift: queue objects</h3>" in html
    assert '<tr class="fail"><td>changed</td><td>ClusterQueue dr-team-a</td>' in html


def test_the_managed_extensions_settings_drift_from_arm(declared, arm, arm_control):
    """The extension path, kept short: the module's Helm Kueue removed, the extension created through the ARM
    emulator (which installs Kueue) with one setting other than the declaration's; status.yml reads the extension
    from ARM (kueue_extension in check mode, no write) and names the setting. The extension is deleted at the end
    (which removes Kueue, as the fixture's teardown would)."""
    kube, variables, _folder = declared
    aks = {"kueue_aks_resource_group": os.environ["AKS_RESOURCE_GROUP"],
           "kueue_aks_cluster_name": os.environ["AKS_CLUSTER_NAME"]}
    create = {"state": "present", "resource_group": aks["kueue_aks_resource_group"],
              "cluster_name": aks["kueue_aks_cluster_name"], "preflight": False,
              "configuration_settings": {"controllerManager.replicas": "1"}}
    # The extension is a cluster singleton: the module's Helm Kueue goes first (with the dr- objects).
    reset_kueue(kube, [TEAM_NS], extension=False)
    try:
        made = run_playbook([{"hosts": "local", "gather_facts": False, "tasks": [
            {"name": "Create the extension", "kueueops.aks.kueue_extension": create}]}])
        assert made.rc == 0, made.stdout[-3000:]
        arm_control.clear_requests()
        declared_settings = {"controllerManager.replicas": 2}
        result = run_playbook(STATUS, extravars=dict(
            variables, kueue_extension_configuration_settings=declared_settings, kueue_fail_on_drift=False, **aks))
        assert result.rc == 0, result.stdout[-4000:]
        assert arm_control.writes() == []  # read from ARM, nothing written
        found = result.result("Compare the declared queue configuration")
        assert found["aks_extension"] is True and found["install"]["method"] == "extension", found["install"]
        assert found["install"]["differences"] == [{"source": "extension settings", "key": "controllerManager.replicas",
                                                    "declared": "2", "live": "1"}]
        assert found["drift"] is True and found["counts"]["install"] == 1
        # aks-* objects the extension created are its own: not undeclared.
        assert not [u for u in found["objects"]["undeclared"] if u["name"].startswith("aks-")], found["objects"]
        shown = "\n".join(result.result("Show the status")["msg"])
        assert "Drift: install (extension):" in shown and "controllerManager.replicas" in shown, shown
    finally:
        gone = run_playbook([{"hosts": "local", "gather_facts": False, "tasks": [
            {"name": "Delete the extension", "kueueops.aks.kueue_extension": {
                "state": "absent", "resource_group": create["resource_group"],
                "cluster_name": create["cluster_name"], "timeout": 300}}]}])
        assert gone.rc == 0, gone.stdout[-3000:]
