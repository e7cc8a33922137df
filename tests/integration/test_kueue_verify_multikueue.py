"""kueue_verify's MultiKueue checks (issue 18) on two real control planes: the session cluster is the manager, a
second one started here is the worker. MultiKueue is wired by hand (the worker's ServiceAccount with Kueue's documented
worker rules, a TokenRequest token in a kubeconfig Secret on the manager, MultiKueueCluster, MultiKueueConfig,
AdmissionCheck, and queues on both), independently of the collection's own MultiKueue role. Then, in two playbook runs:
verify passes and its smoke test is dispatched to the worker and admitted there; with the worker's API server stopped,
verify fails naming the worker and the reason; an AdmissionCheck that does not exist is a clear failed check."""
from __future__ import annotations

import base64
import os
import subprocess
import threading
import time

import yaml
from kubernetes import client, config

from tests.harness.cluster import Cluster, run_dir

from .ansible import run_playbook
from .kubeutil import delete_kueue_objects, delete_namespace, helm, kueue_plurals, wait_for

GROUP, VERSION = "kueue.x-k8s.io", "v1beta2"
NS = "kueue-system"
TEAM = "mk-team"
WORKER = "worker-1"
CHECK = "mk-check"
SECRET = "mk-worker-1-kubeconfig"
SA = "multikueue-sa"

# Kueue's documented rules for the identity the manager uses on a worker (site/static/examples/multikueue/
# create-multikueue-kubeconfig.sh of v0.19.2), for the kinds this test dispatches: batch Jobs and Kueue's own.
WORKER_RULES = [
    {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["create", "delete", "get", "list", "watch"]},
    {"apiGroups": ["batch"], "resources": ["jobs/status"], "verbs": ["get"]},
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["create", "delete", "get", "list", "watch"]},
    {"apiGroups": [GROUP], "resources": ["workloads"],
     "verbs": ["create", "delete", "get", "list", "watch", "update", "patch"]},
    {"apiGroups": [GROUP], "resources": ["clusterqueues", "localqueues"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": [GROUP], "resources": ["workloads/status"], "verbs": ["get", "patch", "update"]},
]


def _install_kueue(clusters_and_values) -> None:
    """Kueue (the newest chart of each cluster's registry) installed with helm on every cluster at once, then its
    webhooks answering."""
    procs = []
    for handle, values in clusters_and_values:
        argv = [os.environ["HELM_V3"], "upgrade", "--install", "kueue", handle.chart_ref, "--version",
                handle.state["chart_versions"][0], "--plain-http", "-n", NS, "--create-namespace", "--wait",
                "--timeout", "5m"]
        if values:
            argv += ["-f", values]
        env = dict(handle.helm_env(), HELM_REGISTRY_CONFIG=os.path.join(handle.folder, "helm", "registry.json"))
        procs.append((argv, subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                             text=True)))
    for argv, proc in procs:
        out, _ = proc.communicate(timeout=400)
        assert proc.returncode == 0, (argv, out)
    for handle, _values in clusters_and_values:
        custom = client.CustomObjectsApi(config.new_client_from_config(handle.kubeconfig))
        probe = {"apiVersion": "%s/%s" % (GROUP, VERSION), "kind": "ClusterQueue", "metadata": {"name": "probe"},
                 "spec": {}}
        wait_for("Kueue's webhooks on %s" % handle.folder, lambda: custom.create_cluster_custom_object(
            GROUP, VERSION, "clusterqueues", probe, dry_run="All"), timeout=180)


def _manager_values(handle, path) -> str:
    """Helm values for the manager: the chart's own Configuration with the integrations limited to batch/job. The
    manager watches the kind of every enabled integration on each worker, and a worker without that kind's CRD (the
    local harness has none of JobSet, Ray, Kubeflow, ...) never becomes Active."""
    proc = helm(handle, os.environ["HELM_V3"], "show", "values", handle.chart_ref, "--version",
                handle.state["chart_versions"][0], "--plain-http")
    cfg = yaml.safe_load(yaml.safe_load(proc.stdout)["managerConfig"]["controllerManagerConfigYaml"])
    cfg["integrations"]["frameworks"] = ["batch/job"]
    with open(path, "w") as out:
        yaml.safe_dump({"managerConfig": {"controllerManagerConfigYaml": yaml.safe_dump(cfg)}}, out)
    return str(path)


def _queues(cluster_queue_spec: dict) -> list:
    """(plural, namespace, body) of a ResourceFlavor, a ClusterQueue and a LocalQueue in TEAM."""
    cq = {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [
        {"name": "mk-flavor", "resources": [{"name": "cpu", "nominalQuota": "2"},
                                            {"name": "memory", "nominalQuota": "2Gi"}]}]}]}
    cq.update(cluster_queue_spec)
    return [("resourceflavors", None, {"metadata": {"name": "mk-flavor"}, "spec": {}}),
            ("clusterqueues", None, {"metadata": {"name": "mk-cq"}, "spec": cq}),
            ("localqueues", TEAM, {"metadata": {"name": "mk-lq", "namespace": TEAM},
                                   "spec": {"clusterQueue": "mk-cq"}})]


def _create(kube, objects) -> None:
    custom = client.CustomObjectsApi(kube)
    for plural, namespace, body in objects:
        kind = {"resourceflavors": "ResourceFlavor", "clusterqueues": "ClusterQueue", "localqueues": "LocalQueue",
                "multikueueclusters": "MultiKueueCluster", "multikueueconfigs": "MultiKueueConfig",
                "admissionchecks": "AdmissionCheck"}[plural]
        body = dict(body, apiVersion="%s/%s" % (GROUP, VERSION), kind=kind)
        if namespace:
            custom.create_namespaced_custom_object(GROUP, VERSION, namespace, plural, body)
        else:
            custom.create_cluster_custom_object(GROUP, VERSION, plural, body)


def _worker_kubeconfig(worker: Cluster, kube) -> tuple[str, str]:
    """(kubeconfig text, token): the worker's ServiceAccount with Kueue's worker rules, a TokenRequest token, the
    worker's CA and its https://127.0.0.1:port server."""
    core, rbac = client.CoreV1Api(kube), client.RbacAuthorizationV1Api(kube)
    core.create_namespaced_service_account(NS, {"metadata": {"name": SA}})
    rbac.create_cluster_role({"metadata": {"name": SA + "-role"}, "rules": WORKER_RULES})
    rbac.create_cluster_role_binding({
        "metadata": {"name": SA + "-crb"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": SA + "-role"},
        "subjects": [{"kind": "ServiceAccount", "name": SA, "namespace": NS}]})
    token = core.create_namespaced_service_account_token(SA, NS, {"spec": {"expirationSeconds": 3600}}).status.token
    with open(worker.path("pki", "ca.crt"), "rb") as handle:
        ca = base64.b64encode(handle.read()).decode()
    kubeconfig = {"apiVersion": "v1", "kind": "Config", "current-context": WORKER,
                  "clusters": [{"name": WORKER, "cluster": {"server": worker.server,
                                                            "certificate-authority-data": ca}}],
                  "users": [{"name": SA, "user": {"token": token}}],
                  "contexts": [{"name": WORKER, "context": {"cluster": WORKER, "user": SA}}]}
    return yaml.safe_dump(kubeconfig), token


def _wire(manager: Cluster, worker: Cluster) -> str:
    """MultiKueue wired by hand: worker-1 behind AdmissionCheck CHECK on the manager's ClusterQueue; returns the
    token of the manager's identity on the worker."""
    mkube, wkube = config.new_client_from_config(manager.kubeconfig), config.new_client_from_config(worker.kubeconfig)
    for kube in (mkube, wkube):
        client.CoreV1Api(kube).create_namespace({"metadata": {"name": TEAM}})
    text, token = _worker_kubeconfig(worker, wkube)
    _create(wkube, _queues({}))
    client.CoreV1Api(mkube).create_namespaced_secret(NS, {"metadata": {"name": SECRET}, "data": {
        "kubeconfig": base64.b64encode(text.encode()).decode()}})
    _create(mkube, [
        ("multikueueclusters", None, {"metadata": {"name": WORKER}, "spec": {"clusterSource": {
            "kubeConfig": {"locationType": "Secret", "location": SECRET}}}}),
        ("multikueueconfigs", None, {"metadata": {"name": "mk-config"}, "spec": {"clusters": [WORKER]}}),
        ("admissionchecks", None, {"metadata": {"name": CHECK}, "spec": {
            "controllerName": "kueue.x-k8s.io/multikueue",
            "parameters": {"apiGroup": GROUP, "kind": "MultiKueueConfig", "name": "mk-config"}}}),
    ] + _queues({"admissionChecksStrategy": {"admissionChecks": [{"name": CHECK}]}}))
    return token


def _active(kube, plural: str, name: str):
    obj = client.CustomObjectsApi(kube).get_cluster_custom_object(GROUP, VERSION, plural, name)
    found = [c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == "Active"]
    return found[0] if found else None


def _verify(name: str, **args) -> dict:
    return {"name": name, "kueueops.aks.kueue_verify": dict({"install_method": "helm", "queues": False}, **args),
            "register": "out", "ignore_errors": True}


def _play(*tasks) -> list:
    return [{"hosts": "local", "gather_facts": False, "tasks": list(tasks)}]


class WorkerWorkloads(threading.Thread):
    """The Workloads seen in TEAM on the worker while a playbook runs ({name: admitted}), read every half second
    (the smoke test deletes its Job at its end, and Kueue then deletes the worker's copy)."""

    def __init__(self, kube):
        super().__init__(daemon=True)
        self.custom, self.seen, self.done = client.CustomObjectsApi(kube), {}, threading.Event()

    def run(self):
        while not self.done.wait(0.5):
            try:
                items = self.custom.list_namespaced_custom_object(GROUP, VERSION, TEAM, "workloads")["items"]
            except Exception:  # noqa: BLE001 - the next read tells
                continue
            for wl in items:
                admitted = any(c["type"] in ("QuotaReserved", "Admitted") and c["status"] == "True"
                               for c in (wl.get("status") or {}).get("conditions") or [])
                self.seen[wl["metadata"]["name"]] = self.seen.get(wl["metadata"]["name"]) or admitted

    def stop(self) -> dict:
        self.done.set()
        self.join(10)
        return self.seen


def test_multikueue_verify_on_a_manager_and_a_worker(cluster, tmp_path):
    worker = Cluster(run_dir().rstrip("/") + "-mkworker")
    worker.up()
    mkube = config.new_client_from_config(cluster.kubeconfig)
    try:
        _install_kueue([(cluster, _manager_values(cluster, tmp_path / "manager-values.yml")), (worker, None)])
        token = _wire(cluster, worker)
        wait_for("MultiKueueCluster %s Active" % WORKER,
                 lambda: (_active(mkube, "multikueueclusters", WORKER) or {}).get("status") == "True", timeout=120)

        # Verify passes; its smoke test is dispatched to the worker and admitted there. At -vvv, the token never shows.
        observer = WorkerWorkloads(config.new_client_from_config(worker.kubeconfig))
        observer.start()
        started = time.monotonic()
        ok = run_playbook(_play(_verify("Verify the manager", multikueue_admission_check=CHECK,
                                        smoke_test=[TEAM + "/mk-lq"], timeout=120)), verbosity=3)
        ok_seconds = time.monotonic() - started
        on_worker = observer.stop()
        result = ok.result("Verify the manager")
        assert ok.rc == 0 and result.get("ok") is True, (result.get("msg"), result.get("checks"))
        checks = dict((c["name"], c) for c in result["checks"])
        assert checks["multikueue/admissioncheck/" + CHECK]["ok"], checks
        assert checks["multikueue/cluster/" + WORKER]["ok"], checks
        smoke = checks["smoke-test/%s/mk-lq" % TEAM]
        assert smoke["ok"] and "dispatched to %s and admitted there in" % WORKER in smoke["reason"], smoke
        mk = result["multikueue"]
        assert mk["admission_check"] == CHECK and mk["config"] == "mk-config", mk
        assert mk["clusters"] == [{"name": WORKER, "active": True, "reason": "Active", "message": "Connected"}], mk
        assert mk["dispatched"] == {TEAM + "/mk-lq": WORKER}, mk
        assert token not in ok.stdout + ok.stderr
        # The copy on the worker was real: the worker's Kueue admitted the Workload of the smoke-test Job (Kueue names
        # a Job's Workload job-<job name>-<hash>).
        job = smoke["reason"].split()[1]
        print("verify with the MultiKueue smoke test: %.1fs; %s" % (ok_seconds, smoke["reason"]))
        assert job.startswith("kueueops-smoke-"), smoke
        assert [name for name, admitted in on_worker.items() if name.startswith("job-%s-" % job) and admitted], on_worker

        # The worker's API server down: the manager's Kueue marks the worker inactive; verify fails naming it and
        # the reason, within its small timeout. An AdmissionCheck that does not exist is a clear failed check.
        worker.stop_apiserver()
        try:
            wait_for("MultiKueueCluster %s inactive" % WORKER,
                     lambda: (_active(mkube, "multikueueclusters", WORKER) or {}).get("status") == "False", timeout=120)
            started = time.monotonic()
            down = run_playbook(_play(
                _verify("Verify with the worker down", multikueue_admission_check=CHECK, timeout=5),
                _verify("Verify a missing AdmissionCheck", multikueue_admission_check="no-such-check", wait=False)))
            down_seconds = time.monotonic() - started
        finally:
            worker.start_apiserver()
        for text in (down.stdout, down.stderr):
            assert "Traceback" not in text and "MODULE FAILURE" not in text, text[-3000:]
        failed = down.result("Verify with the worker down")
        assert failed.get("failed") is True, failed
        reason = dict((c["name"], c["reason"]) for c in failed["checks"])["multikueue/cluster/" + WORKER]
        assert reason.startswith("worker %s is not Active: ClientConnectionFailed: " % WORKER), reason
        assert "multikueue/cluster/%s: worker %s is not Active" % (WORKER, WORKER) in failed["msg"], failed["msg"]
        assert failed["multikueue"]["clusters"][0]["reason"] == "ClientConnectionFailed", failed["multikueue"]
        missing = down.result("Verify a missing AdmissionCheck")
        assert missing.get("failed") is True and missing["failed_checks"] == [
            "multikueue/admissioncheck/no-such-check"], missing
        assert "AdmissionCheck no-such-check does not exist (multikueue_admission_check:" in missing["msg"], missing
        assert token not in down.stdout + down.stderr
        print("verify with the worker down and with a missing AdmissionCheck: %.1fs; %s" % (down_seconds, reason))
    finally:
        worker.down()
        # The queue objects first, while the manager runs to remove their finalizers (helm uninstall deletes the
        # manager before the CRDs, whose deletion would then wait on them).
        plurals = kueue_plurals()
        delete_kueue_objects(mkube, plurals, lambda _kind, _meta: True)
        custom = client.CustomObjectsApi(mkube)
        wait_for("the MultiKueue and queue objects to be gone", lambda: not any(
            custom.list_cluster_custom_object(GROUP, VERSION, plural)["items"] for plural in plurals.values()),
            timeout=60)
        helm(cluster, os.environ["HELM_V3"], "uninstall", "kueue", "-n", NS, "--wait", check=False)
        delete_namespace(mkube, NS)
        delete_namespace(mkube, TEAM)
