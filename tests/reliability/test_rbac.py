"""Least privilege (issue 8, item 3): every entry point runs as a user that holds only the roles of
docs/rbac/<entry point>.yaml, on the real local control plane (client-certificate users signed by its
CA, authorized by RBAC). With one permission removed, the run fails with a message naming the missing
permission (no traceback) and, where the entry point checks before it writes, the cluster is unchanged.

The tests of this module run in order on one Kueue lifecycle: install as the install user, queues as
the configure-queues user, status, uninstall."""
from __future__ import annotations

import os
import re
import subprocess

import pytest
import yaml

from tests.integration.ansible import run_playbook
from tests.integration.kubeutil import delete_namespace, helm, kueue_crds

from . import rbac

from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import (  # noqa: E402  (path set by conftest)
    forbidden_permissions,
)

REPO = rbac.REPO
QUEUES_VARS = os.path.join(REPO, "playbooks", "vars", "queues.yml")
PLAYBOOK = os.path.join(REPO, "playbooks", "%s.yml")


def _as(cluster, entry: str) -> tuple[dict, dict]:
    """(extravars, env) that make a playbook run as the user bound to docs/rbac/<entry>.yaml."""
    kubeconfig = rbac.make_user(cluster, "rbac-" + entry, "kueueops-" + entry)
    return ({"kueue_kubeconfig": kubeconfig},
            {"KUBECONFIG": kubeconfig, "K8S_AUTH_KUBECONFIG": kubeconfig})


def _queues_vars() -> dict:
    with open(QUEUES_VARS) as handle:
        return yaml.safe_load(handle)


def _no_traceback(result) -> None:
    text = result.stdout + result.stderr
    assert "Traceback" not in text, text[-3000:]
    assert "MODULE FAILURE" not in text, text[-3000:]


def _failure(result) -> str:
    messages = result.failure_messages()
    assert result.rc != 0 and messages, result
    return " ".join(messages)


def _kueue_installed(kube) -> bool:
    from kubernetes import client
    try:
        client.AppsV1Api(kube).read_namespaced_deployment("kueue-controller-manager", "kueue-system")
        return True
    except client.exceptions.ApiException as exc:
        if exc.status != 404:
            raise
        return False


def _uninstall_as_admin(cluster, kube) -> None:
    """Back to a cluster without Kueue (as `tests/integration` leave it), whatever state it is in
    (a failed release included)."""
    from kubernetes import client
    helm(cluster, os.environ["HELM_V3"], "uninstall", "kueue", "-n", "kueue-system", "--wait", check=False)
    ext = client.ApiextensionsV1Api(kube)
    for name in kueue_crds(kube):
        ext.delete_custom_resource_definition(name)
    delete_namespace(kube, "kueue-system")


@pytest.fixture(scope="module")
def lifecycle(cluster, kube):
    """A cluster without Kueue at the start; without Kueue, the team namespaces and the RBAC of
    docs/rbac at the end."""
    if _kueue_installed(kube):
        _uninstall_as_admin(cluster, kube)
    yield cluster
    if _kueue_installed(kube):
        _uninstall_as_admin(cluster, kube)
    for name in ("install", "configure-queues", "status", "uninstall"):
        rbac.delete(cluster, [d for d in rbac.load(name) if d["kind"] != "Namespace"])
    rbac.kubectl(cluster, "delete", "namespace", "--ignore-not-found", "--wait=false", "team-vision", "team-nlp",
                 check=False)


# --------------------------------------------------------------------------------------- the files
def _render_chart(cluster, version: str) -> list:
    proc = subprocess.run([os.environ["HELM_V3"], "template", "kueue", os.environ["KUEUE_CHART_REF"], "--version",
                           version, "--plain-http", "-n", "kueue-system"], capture_output=True, text=True,
                          env=cluster.helm_env(), timeout=120, check=True)
    return [d for d in yaml.safe_load_all(proc.stdout) if d]


RESOURCE = {"ClusterRole": "clusterroles", "ClusterRoleBinding": "clusterrolebindings",
            "CustomResourceDefinition": "customresourcedefinitions", "APIService": "apiservices",
            "MutatingWebhookConfiguration": "mutatingwebhookconfigurations",
            "ValidatingWebhookConfiguration": "validatingwebhookconfigurations", "RoleBinding": "rolebindings",
            "Role": "roles", "Deployment": "deployments", "Service": "services", "ServiceAccount": "serviceaccounts",
            "ConfigMap": "configmaps", "Secret": "secrets"}


CLUSTER_SCOPED = {"ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "APIService",
                  "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}


def _grants(docs: list, kind: str, namespace: str | None, group: str, resource: str, verb: str, name: str) -> bool:
    for doc in docs:
        if doc["kind"] != kind or doc["metadata"].get("namespace") != namespace:
            continue
        for rule in doc["rules"]:
            if (group in rule.get("apiGroups", []) and resource in rule.get("resources", [])
                    and verb in rule["verbs"]
                    # RBAC cannot match a create by name: the name is not in the request's URL.
                    and (not rule.get("resourceNames") or (verb != "create" and name in rule["resourceNames"]))):
                return True
    return False


def test_rbac_files_are_valid_and_cover_every_chart_object(lifecycle):
    """Every object of every chart version in the local registry can be created, read and patched by
    the install roles, and read and deleted by the uninstall roles; the files pass a server-side
    dry-run apply."""
    install, uninstall = rbac.load("install"), rbac.load("uninstall")
    missing = []
    for version in lifecycle.state["chart_versions"]:
        for obj in _render_chart(lifecycle, version):
            group = obj["apiVersion"].rsplit("/", 1)[0] if "/" in obj["apiVersion"] else ""
            resource, name = RESOURCE[obj["kind"]], obj["metadata"]["name"]
            namespace = None if obj["kind"] in CLUSTER_SCOPED else obj["metadata"].get("namespace")
            kind = "Role" if namespace else "ClusterRole"
            for entry, docs, verbs in (("install", install, ("create", "get", "patch")),
                                       ("uninstall", uninstall, ("get", "delete"))):
                for verb in verbs:
                    if not _grants(docs, kind, namespace, group, resource, verb, name):
                        missing.append("%s %s %s/%s (chart %s)" % (entry, verb, resource, name, version))
    assert not missing, missing
    for name in ("install", "configure-queues", "status", "uninstall"):
        docs = [d for d in rbac.load(name) if d["kind"] != "Namespace"]
        rbac.kubectl(lifecycle, "apply", "--dry-run=server", "-f", "-", stdin=yaml.safe_dump_all(
            [d for d in docs if d["metadata"].get("namespace") != "kueue-system"]))


# ------------------------------------------------------------------------------------- install
@pytest.mark.parametrize("kind,namespace,group,resource,verb,named", [
    ("ClusterRole", None, "apiextensions.k8s.io", "customresourcedefinitions", "create",
     "cannot create customresourcedefinitions.apiextensions.k8s.io"),
    ("ClusterRole", None, "rbac.authorization.k8s.io", "clusterroles", "escalate",
     "cannot escalate clusterroles.rbac.authorization.k8s.io"),
    ("Role", "kube-system", "rbac.authorization.k8s.io", "roles", "bind",
     "cannot bind roles.rbac.authorization.k8s.io (referenced by rolebinding kueue-visibility-server-auth-reader)"),
], ids=["create-crds", "escalate-clusterroles", "bind-kube-system-role"])
def test_install_without_one_permission_names_it(lifecycle, kube, kind, namespace, group, resource, verb, named):
    """helm creates the chart's objects and reports every forbidden one at the end: the run fails with a
    message that starts with the missing permission; what helm created before is left, as a failed
    release (CHANGED below: the report of docs/rbac.md), and the next run with the whole role recovers."""
    _uninstall_as_admin(lifecycle, kube)  # each case from a cluster without Kueue
    rbac.apply(lifecycle, rbac.without(rbac.load("install"), kind, group, resource, verb, namespace=namespace))
    extravars, env = _as(lifecycle, "install")
    before = rbac.snapshot(kube)
    result = run_playbook(PLAYBOOK % "site", extravars=extravars, env=env)
    _no_traceback(result)
    message = _failure(result)
    assert message.startswith("permission denied: " + named), message
    after = rbac.snapshot(kube)
    changed = sorted(set(after) ^ set(before)) + sorted(k for k in set(after) & set(before) if after[k] != before[k])
    print("MESSAGE %s: %s" % (verb, message[:400]))
    print("CHANGED %s: %d objects: %s" % (verb, len(changed), changed))
    rbac.apply(lifecycle, rbac.load("install"))


def test_install_as_the_install_user(lifecycle, kube):
    rbac.apply_file(lifecycle, "install")
    extravars, env = _as(lifecycle, "install")
    result = run_playbook(PLAYBOOK % "site", extravars=extravars, env=env)
    _no_traceback(result)
    assert result.rc == 0, (result, result.stdout[-4000:])
    verify = result.result("Verify Kueue")
    assert verify.get("ok") is True and not verify.get("failed_checks"), verify
    # Idempotent as the same user: Helm's values read back, nothing upgraded.
    again = run_playbook(PLAYBOOK % "site", extravars=extravars, env=env)
    assert again.rc == 0 and again.changed == 0, again
    # An upgrade (other feature gates): helm patches every chart object, no `update` needed.
    gates = {"TopologyAwareScheduling": True, "LocalQueueMetrics": False}
    upgrade = run_playbook(PLAYBOOK % "site", extravars=dict(extravars, kueue_feature_gates=gates), env=env)
    _no_traceback(upgrade)
    assert upgrade.rc == 0 and upgrade.changed >= 1, (upgrade, upgrade.stdout[-4000:])
    assert upgrade.result("Verify Kueue")["feature_gates"].get("LocalQueueMetrics") is False


# ------------------------------------------------------------------------------ configure_queues
CONFIGURE_CAPACITY_TASK = ("Check the declared quotas against the nodes each ResourceFlavor selects (kueue_capacity_check; "
                           "strict fails before any write)")
CAPACITY_TASK = "Check the live quotas against the nodes each ResourceFlavor selects"


def test_configure_queues_without_create_on_clusterqueues_fails_before_any_write(lifecycle, kube):
    docs = rbac.without(rbac.load("configure-queues"), "ClusterRole", "kueue.x-k8s.io", "clusterqueues", "create")
    rbac.apply(lifecycle, docs)
    extravars, env = _as(lifecycle, "configure-queues")
    before = rbac.snapshot(kube)
    result = run_playbook(PLAYBOOK % "configure_queues", extravars=dict(_queues_vars(), **extravars), env=env)
    _no_traceback(result)
    message = _failure(result)
    # kueue_queues lists every object the dry-run refused, each "permission denied: cannot <verb> <resource>".
    assert forbidden_permissions(message) == ["cannot create clusterqueues.kueue.x-k8s.io"], message
    assert "permission denied: cannot create clusterqueues.kueue.x-k8s.io" in message, message
    assert "ClusterQueue team-nlp" in message and "ClusterQueue team-vision" in message, message
    assert "server-side dry-run" in message and "nothing was written" in message, message
    assert rbac.snapshot(kube) == before


def test_configure_queues_as_the_configure_queues_user(lifecycle, kube):
    rbac.apply_file(lifecycle, "configure-queues")
    extravars, env = _as(lifecycle, "configure-queues")
    result = run_playbook(PLAYBOOK % "configure_queues",
                          extravars=dict(_queues_vars(), kueue_smoke_test=True, **extravars), env=env)
    _no_traceback(result)
    assert result.rc == 0, (result, result.stdout[-4000:])
    smoke = result.result("Smoke test")
    assert [c["name"] for c in smoke["checks"] if c["name"].startswith("smoke-test/") and c["ok"]] == [
        "smoke-test/team-vision/vision", "smoke-test/team-nlp/nlp"], smoke["checks"]
    # The capacity check ran first with this role (nodes listed), on the declared configuration.
    assert result.result(CONFIGURE_CAPACITY_TASK)["configuration"] == "declared"
    again = run_playbook(PLAYBOOK % "configure_queues", extravars=dict(_queues_vars(), **extravars), env=env)
    assert again.rc == 0 and again.changed == 0, again


# ---------------------------------------------------------------------------------------- status
def test_status_as_the_status_user(lifecycle, kube):
    rbac.apply_file(lifecycle, "status")
    extravars, env = _as(lifecycle, "status")
    before = rbac.snapshot(kube)
    result = run_playbook(PLAYBOOK % "status", extravars=extravars, env=env)
    _no_traceback(result)
    assert result.rc == 0, (result, result.stdout[-4000:])
    status = result.result("Check Kueue and read its queues")
    assert status["ok"] is True, status["checks"]
    assert len(status["queues"]["cluster_queues"]) >= 2 and len(status["queues"]["local_queues"]) == 2, status
    # The capacity table (issue 16) with the same role: the live flavors read, the nodes listed.
    capacity = result.result(CAPACITY_TASK)
    assert capacity["configuration"] == "live" and capacity["node_count"] >= 1, capacity
    assert {"cpu-on-demand", "cpu-spot", "gpu-a100"} <= set(f["name"] for f in capacity["flavors"]), capacity
    # Nothing declared: no drift report (the task skipped, if listed at all).
    assert all(res.get("skipped") for name, res in result.tasks() if "Compare the declared" in name), result
    assert rbac.snapshot(kube) == before
    # The drift report of the configuration configure_queues applied needs no more than the status role: it reads
    # every kind, the Helm release and the manager's Configuration, and finds the queues as declared.
    declared = run_playbook(PLAYBOOK % "status", extravars=dict(_queues_vars(), **extravars), env=env)
    _no_traceback(declared)
    assert declared.rc == 0, (declared, declared.stdout[-4000:])
    report = declared.result("Compare the declared queue configuration")
    assert report["objects"]["declared"] == len(_queues_vars()["kueue_resources"]), report
    assert [report["counts"][k] for k in ("missing", "changed", "extra")] == [0, 0, 0], report
    assert report["install"]["method"] == "helm" and report["install"]["compared"] is True, report
    assert rbac.snapshot(kube) == before


MULTIKUEUE = [  # a manager whose one worker's kubeconfig Secret is missing: Kueue reports it BadKubeConfig
    {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueCluster", "metadata": {"name": "rbac-worker"},
     "spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": "rbac-no-such-secret"}}}},
    {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueConfig", "metadata": {"name": "rbac-mk"},
     "spec": {"clusters": ["rbac-worker"]}},
    {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck", "metadata": {"name": "rbac-mk"},
     "spec": {"controllerName": "kueue.x-k8s.io/multikueue",
              "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "rbac-mk"}}},
]


def test_status_user_reads_the_multikueue_objects(lifecycle, kube):
    """kueue_verify's MultiKueue checks (multikueue_admission_check) with the status role: the AdmissionCheck, its
    MultiKueueConfig and MultiKueueCluster read by name, and reported as Kueue sees them."""
    rbac.apply_file(lifecycle, "status")
    rbac.kubectl(lifecycle, "apply", "-f", "-", stdin=yaml.safe_dump_all(MULTIKUEUE))
    try:
        rbac.kubectl(lifecycle, "wait", "--for=jsonpath={.status.conditions[0].reason}=BadKubeConfig",
                     "multikueuecluster/rbac-worker", "--timeout=60s")
        rbac.kubectl(lifecycle, "wait", "--for=jsonpath={.status.conditions[0].reason}=NoUsableClusters",
                     "admissioncheck/rbac-mk", "--timeout=60s")
        extravars, env = _as(lifecycle, "status")
        before = rbac.snapshot(kube)
        result = run_playbook([{"hosts": "local", "gather_facts": False, "tasks": [{
            "name": "Verify the MultiKueue objects", "kueueops.aks.kueue_verify": {
                "multikueue_admission_check": "rbac-mk", "wait": False, "queues": False, "fail_on_error": False}}]}],
            extravars=extravars, env=env)
        _no_traceback(result)
        assert result.rc == 0, (result, result.stdout[-4000:])
        out = result.result("Verify the MultiKueue objects")
        reasons = dict((c["name"], c["reason"]) for c in out["checks"])
        assert not forbidden_permissions(" ".join(reasons.values())), reasons
        assert reasons["multikueue/cluster/rbac-worker"].startswith(
            "worker rbac-worker is not Active: BadKubeConfig: "), reasons
        assert "NoUsableClusters" in reasons["multikueue/admissioncheck/rbac-mk"], reasons
        assert out["multikueue"]["config"] == "rbac-mk" and out["ok"] is False, out["multikueue"]
        assert rbac.snapshot(kube) == before
    finally:
        rbac.kubectl(lifecycle, "delete", "--ignore-not-found", "-f", "-", stdin=yaml.safe_dump_all(MULTIKUEUE[::-1]))


def test_status_without_list_on_nodes_names_it(lifecycle, kube):
    docs = rbac.without(rbac.load("status"), "ClusterRole", "", "nodes", "list")
    rbac.apply(lifecycle, docs)
    extravars, env = _as(lifecycle, "status")
    result = run_playbook(PLAYBOOK % "status", extravars=extravars, env=env)
    _no_traceback(result)
    message = _failure(result)
    assert forbidden_permissions(message) == ["cannot list nodes"], message
    assert result.result("Check Kueue and read its queues")["ok"] is True  # the checks before it still ran
    rbac.apply(lifecycle, rbac.load("status"))


def test_status_without_list_on_secrets_names_it(lifecycle, kube):
    docs = rbac.without(rbac.load("status"), "Role", "", "secrets", "list", namespace="kueue-system")
    rbac.apply(lifecycle, docs)
    extravars, env = _as(lifecycle, "status")
    result = run_playbook(PLAYBOOK % "status", extravars=extravars, env=env)
    _no_traceback(result)
    message = _failure(result)
    assert "helm-release" in message, message
    status = result.result("Check Kueue and read its queues")
    reason = [c["reason"] for c in status["checks"] if c["name"] == "helm-release"][0]
    assert re.search(r"permission denied: cannot list secrets in namespace kueue-system", reason), reason
    rbac.apply(lifecycle, rbac.load("status"))


# ------------------------------------------------------------------------------------- uninstall
def test_uninstall_without_list_on_workloads_fails_before_anything(lifecycle, kube, tmp_path):
    docs = rbac.without(rbac.load("uninstall"), "ClusterRole", "kueue.x-k8s.io", "workloads", "list")
    rbac.apply(lifecycle, docs)
    extravars, env = _as(lifecycle, "uninstall")
    before = rbac.snapshot(kube)
    result = run_playbook(PLAYBOOK % "uninstall", extravars=dict(extravars, kueue_backup_dir=str(tmp_path), kueue_confirm_hosts="local"), env=env)
    _no_traceback(result)
    message = _failure(result)
    assert re.search(r"permission denied: cannot list workloads\.kueue\.x-k8s\.io", message), message
    assert rbac.snapshot(kube) == before
    assert os.listdir(tmp_path) == []


def test_uninstall_without_delete_on_crds_names_it(lifecycle, kube, tmp_path):
    """helm uninstall deletes the chart's objects one by one and fails at the end on the forbidden
    ones: the run fails after a verified backup, and the next run with the whole role completes
    (test_uninstall_as_the_uninstall_user). helm v3 prints only "failed to delete release" unless
    --debug is given; with --debug its stderr names the permission, which KueueOpsError then puts first."""
    docs = rbac.without(rbac.load("uninstall"), "ClusterRole", "apiextensions.k8s.io", "customresourcedefinitions",
                        "delete")
    rbac.apply(lifecycle, docs)
    extravars, env = _as(lifecycle, "uninstall")
    result = run_playbook(PLAYBOOK % "uninstall", extravars=dict(extravars, kueue_backup_dir=str(tmp_path), kueue_confirm_hosts="local"), env=env)
    _no_traceback(result)
    message = _failure(result)
    backup = result.result("Back up every Kueue configuration object")
    assert backup["verified"] is True and backup["counts"].get("ClusterQueue", 0) >= 2, backup
    # kueue_helm runs a v3 uninstall with --debug, whose errors carry the API server's refusal.
    assert "permission denied: cannot delete customresourcedefinitions.apiextensions.k8s.io" in message, message


def test_uninstall_as_the_uninstall_user(lifecycle, kube, tmp_path):
    """With the whole role, the uninstall completes (also after the failed attempt above)."""
    rbac.apply_file(lifecycle, "uninstall")
    extravars, env = _as(lifecycle, "uninstall")
    result = run_playbook(PLAYBOOK % "uninstall", extravars=dict(extravars, kueue_backup_dir=str(tmp_path), kueue_confirm_hosts="local"), env=env)
    _no_traceback(result)
    assert result.rc == 0, (result, result.stdout[-4000:])
    assert not kueue_crds(kube)
    assert not _kueue_installed(kube)
    jobs = result.result("List the Jobs with a queue label")
    assert "namespaces" in jobs, jobs
