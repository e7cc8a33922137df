"""Fault injection (issue 8, item 2) on the real local control plane: faults happen to real processes
(kube-apiserver stopped mid-apply, the Kueue manager held stopped, the visibility server unreachable, ARM
provisioning slowed down), the collection runs through real ansible-playbook, and every run must

- fail cleanly: rc != 0, a failed task, no traceback, no MODULE FAILURE;
- say what happened: what was applied (or was still pending) and the timeout it waited;
- recover: once the fault is gone, a re-run converges and a further run changes nothing.

No run can hang the suite: ``run_playbook``'s subprocess timeout is the hang guard (``HANG_GUARD``).
Durations are not asserted (timed assertions do not belong in tests) but recorded in
``$KUEUEOPS_RUN_DIR/faults-durations.json`` and printed (``-s``) for the table of docs/dev/reliability.md.

The tests share one module-long story and run in file order: the extension path first (it needs a
cluster without Kueue), then a Helm install with the manager held, then faults on the installed Kueue,
then the uninstall. The cluster is left as it was found (no Kueue, no ``kf-*`` objects or namespaces).

Every wait of the collection and the test that makes it stay pending (``WAITS`` below; waits without a
test here are listed with the reason).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from kubernetes import client, watch

from tests.integration.ansible import run_playbook
from tests.integration.kubeutil import (delete_kueue_objects, delete_namespaces, etcd_objects, etcd_put, kueue_plurals,
                                        missing_ok, wait_for)
from tests.prerequisites import require

from .badinput import assert_no_traceback, message_of

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SITE = os.path.join(REPO, "playbooks", "site.yml")
GROUP = "kueue.x-k8s.io"
V2 = GROUP + "/v1beta2"
PLURALS = kueue_plurals("ResourceFlavor", "AdmissionCheck", "ClusterQueue", "LocalQueue")
HANG_GUARD = 300  # seconds: no single run here may take longer (a hung wait fails the test instead)
DURATIONS: dict = {}

# The large configuration of the mid-apply fault: 1 ResourceFlavor, 300 ClusterQueues, 4 namespaces
# of 100 LocalQueues (705 writes with the namespaces).
N_CQ, N_NS, N_LQ = 300, 4, 100
STOP_AFTER = 60  # ClusterQueues seen created before kube-apiserver is stopped
# The storage migration cut short: ResourceFlavors stored as v1beta1, kube-apiserver stopped after some rewrites.
N_MIGRATE, MIGRATE_STOP_AFTER = 300, 60

# Every wait of the collection -> the test here that makes it stay pending.
WAITS = {
    "kueue_helm: helm upgrade --install --wait (timeout)": "test_manager_held_during_install",
    "kueue_verify: wait for Deployments/CRDs/webhooks (timeout)": "test_manager_held_during_install",
    "kueue_verify: wait for the APIServices served from the namespace to be Available (timeout)":
        "test_visibility_server_unreachable",
    "kueue_verify: smoke test Jobs admitted (timeout)": "test_queue_waits",
    "kueue_queues: wait for queues Active (timeout)": "test_queue_waits",
    "kueue_queues: prune / state=absent wait for deletion (min(15 s, timeout), warns)": "test_queue_waits",
    "kueue_helm absent: CRDs still terminating (clear finalizers, timeout)": "test_helm_uninstall_waits",
    "kueue_helm absent: APIServices served from the namespace gone before it is deleted (timeout)":
        "test_helm_uninstall_waits",
    "kueue_helm absent: namespace still terminating (timeout)": "test_helm_uninstall_waits",
    "kueue_extension: LRO poller (timeout)": "test_extension_waits",
    "kueue_extension: an operation already running settles (timeout)": "test_extension_waits",
    "kueue_extension: deletion LRO / extension gone (timeout)": "test_extension_waits",
    # a finalizer on a token Secret keeps it pending (in tests/integration/test_kueue_multikueue_worker.py)
    "kueue_multikueue_worker: absent / revoke_previous, deleted objects gone (timeout)":
        "test_prepare_reuse_rotate_revoke_switch_type_and_remove",
}
# Waits without a drill here: the role's until-loop after an extension uninstall (kueue_info until no Kueue
# object and no kueue-extension Deployment; retries = kueue_extension_timeout / 2; when it runs out, an assert
# names what is left and the timeout. No drill: the emulator, like AKS, only reports the delete done once
# everything is gone, so the loop is a second check that cannot be kept pending from here) and its 60 s grace for the
# namespace (failed_when: false, by design); playbooks/restore.yml and migrate.yml wait only through the
# module waits above. kueue_backup, kueue_gitops, kueue_info and kueue_jobs_info do not wait. kueue_multikueue_worker's
# wait for kube-controller-manager to fill a token_type=secret token (timeout) has no drill: the harness cannot hold
# kube-controller-manager, whose token controller fills the Secret within a second.


def record(name: str, seconds: float, **extra) -> None:
    DURATIONS[name] = dict(seconds=round(seconds, 1), **extra)
    print("[faults] %s: %.1fs %s" % (name, seconds, extra or ""), flush=True)
    path = os.path.join(os.environ.get("KUEUEOPS_RUN_DIR", os.path.join(REPO, ".run")), "faults-durations.json")
    with open(path, "w") as handle:
        json.dump(DURATIONS, handle, indent=2, sort_keys=True)


def timed(name: str, *args, **kwargs):
    started = time.time()
    res = run_playbook(*args, timeout=HANG_GUARD, **kwargs)
    extra = {"message": " ".join(str(m) for m in res.failure_messages())[:600]} if res.rc else {}
    record(name, time.time() - started, rc=res.rc, changed=res.changed, **extra)
    return res


def assert_fails_cleanly(res) -> str:
    assert res.rc != 0, "the run did not fail: %r\n%s" % (res, res.stdout[-3000:])
    assert res.failure_messages(), res.stdout[-3000:]
    assert_no_traceback(res)
    return message_of(res)


def harness(*args: str) -> None:
    """`python -m tests.harness ...` (hold, release, ...) on this run folder."""
    subprocess.run([sys.executable, "-m", "tests.harness", *args], check=True, cwd=REPO, timeout=60)


def module_play(module: str, args: dict, name: str = "Run module", **task) -> list:
    return [{"name": "Faults", "hosts": "local", "gather_facts": False,
             "tasks": [dict({"name": name, "kueueops.aks.%s" % module: args}, **task)]}]


def queues_play(args: dict, name: str = "Apply queues") -> list:
    return module_play("kueue_queues", dict({"kubeconfig": "{{ kueue_kubeconfig }}"}, **args), name=name)


def kueue_installed(kube) -> bool:
    return "kueue-system" in {n.metadata.name for n in client.CoreV1Api(kube).list_namespace().items}


def webhooks_answer(kube) -> bool:
    probe = {"apiVersion": V2, "kind": "ClusterQueue", "metadata": {"name": "kf-probe"}, "spec": {}}
    client.CustomObjectsApi(kube).create_cluster_custom_object(GROUP, "v1beta2", "clusterqueues", probe,
                                                               dry_run="All")
    return True


def kill_manager(cluster) -> None:
    """The Kueue manager processes the node agent runs (the hold keeps them from coming back)."""
    try:
        with open(cluster.path("agent", "managers.json")) as handle:
            managers = json.load(handle)
    except (OSError, ValueError):
        return
    for item in managers.values():
        try:
            os.kill(item["pid"], signal.SIGKILL)
        except OSError:
            pass


def ours(kube) -> dict:
    """{(kind, namespace, name): object} of every kf- Kueue object."""
    custom = client.CustomObjectsApi(kube)
    out = {}
    for kind, plural in PLURALS.items():
        for item in custom.list_cluster_custom_object(GROUP, "v1beta2", plural)["items"]:
            meta = item["metadata"]
            if meta["name"].startswith("kf-") or meta.get("namespace", "").startswith("kf-"):
                out[(kind, meta.get("namespace", ""), meta["name"])] = item
    return out


def clean_ours(kube) -> None:
    delete_kueue_objects(kube, PLURALS, lambda _kind, meta: meta["name"].startswith("kf-")
                         or meta.get("namespace", "").startswith("kf-"))
    wait_for("kf- objects to be gone", lambda: not ours(kube), timeout=180)
    core = client.CoreV1Api(kube)
    names = [n.metadata.name for n in core.list_namespace().items if n.metadata.name.startswith("kf-")]
    delete_namespaces(kube, names, timeout=180)


def subset(want, have) -> bool:
    """Everything `want` says is in `have` (the API server adds defaults)."""
    if isinstance(want, dict):
        return isinstance(have, dict) and all(subset(v, have.get(k)) for k, v in want.items())
    if isinstance(want, list):
        return isinstance(have, list) and len(want) == len(have) and all(subset(w, h) for w, h in zip(want, have))
    return want == have


class Start:
    def __init__(self, kube, had_kueue):
        self.kube, self.had_kueue = kube, had_kueue

    def without_kueue(self):
        # The cluster's state, not an artifact, yet the same rule: in CI a module before this one left Kueue installed
        # (tests/integration/conftest.py warns of it), and the drill must not pass unrun.
        require(not kueue_installed(self.kube), "Kueue is installed in this cluster; this drill starts from a cluster "
                "without it (a test module before this one left it installed)")
        return self.kube

    def with_kueue(self):
        if not kueue_installed(self.kube):
            res = run_playbook(SITE, timeout=HANG_GUARD)
            assert res.rc == 0, res.stdout[-3000:]
        wait_for("Kueue's webhooks", lambda: webhooks_answer(self.kube), timeout=240)
        return self.kube


@pytest.fixture(scope="module")
def start(cluster, kube):
    """What the cluster had when the module started; it is given back so (Kueue uninstalled if the
    module installed it, the manager released)."""
    state = Start(kube, kueue_installed(kube))
    yield state
    if os.path.exists(cluster.path("agent", "hold")):
        harness("release")
    if not state.had_kueue and kueue_installed(kube):
        res = run_playbook(module_play("kueue_helm", {"state": "absent", "delete_namespace": True, "timeout": 240}),
                           timeout=HANG_GUARD)
        assert res.rc == 0, res.stdout[-3000:]


# ------------------------------------------------------------------ the AKS managed extension
def ext_play(**kw) -> list:
    args = {"resource_group": os.environ["AKS_RESOURCE_GROUP"], "cluster_name": os.environ["AKS_CLUSTER_NAME"],
            "timeout": 180}
    args.update(kw)
    return module_play("kueue_extension", args, name="Manage the Kueue extension")


def test_extension_waits(start, arm, arm_control):
    """Slow ARM provisioning: the create LRO, a second run meeting the running operation and the delete
    LRO each stay pending past a small timeout; each run fails naming what and the timeout; the same
    runs without the delay converge, and the next changes nothing."""
    kube = start.without_kueue()
    ctl = arm_control
    env = {"K8S_AUTH_KUBECONFIG": ""}  # the module uses the credentials it fetches from ARM
    try:
        ctl.provisioning(delay_seconds=15)
        create = timed("extension create, provisioning 15 s slow, timeout 5", ext_play(timeout=5), env=env)
        msg = assert_fails_cleanly(create)
        assert "creating extension kueue did not finish within 5s (provisioningState Creating" in msg, msg
        busy = timed("extension re-run while the create runs, timeout 5", ext_play(timeout=5), env=env)
        msg = assert_fails_cleanly(busy)
        assert "running operation on extension kueue did not finish within 5s" in msg, msg
        assert "provisioningState Creating" in msg, msg

        ctl.provisioning(delay_seconds=0)
        converge = timed("extension re-run without the delay", ext_play(), env=env)
        assert converge.rc == 0, converge.stdout[-3000:]
        again = timed("extension further run", ext_play(), env=env)
        assert again.rc == 0 and again.changed == 0, again

        ctl.provisioning(delay_seconds=15)
        delete = timed("extension delete, provisioning 15 s slow, timeout 5", ext_play(state="absent", timeout=5),
                       env=env)
        msg = assert_fails_cleanly(delete)
        assert "deleting extension kueue did not finish within 5s (provisioningState Deleting" in msg, msg
        ctl.provisioning(delay_seconds=0)
        gone = timed("extension delete re-run", ext_play(state="absent"), env=env)
        assert gone.rc == 0, gone.stdout[-3000:]
        assert ctl.extensions() == []
        absent = timed("extension delete further run", ext_play(state="absent"), env=env)
        assert absent.rc == 0 and absent.changed == 0, absent
    finally:
        ctl.reset()
        if ctl.extensions():
            run_playbook(ext_play(state="absent", force_delete=True, timeout=240), env=env, timeout=HANG_GUARD)
    wait_for("Kueue removed by the extension", lambda: not kueue_installed(kube), timeout=180)


# ------------------------------------------------------------------ the manager killed during install
def test_manager_held_during_install(cluster, start):
    """The Kueue manager is held stopped (the node agent does not start it) while the install entry point
    runs: helm --wait and then kueue_verify each fail after their timeout naming the Deployment that is
    not ready and why; released, a re-run recovers and the next one changes nothing."""
    start.without_kueue()
    harness("hold")
    kill_manager(cluster)
    try:
        helm_wait = timed("site.yml, manager held, helm --wait timeout 15", SITE,
                          extravars={"kueue_helm_timeout": 15})
        msg = assert_fails_cleanly(helm_wait)
        assert "15s" in msg and "deployment/kueue-controller-manager" in msg and "HeldByHarness" in msg, msg

        verify = timed("site.yml, manager held, no helm wait, verify timeout 15", SITE,
                       extravars={"kueue_helm_wait": False, "kueue_verify_timeout": 15})
        msg = assert_fails_cleanly(verify)
        assert "Kueue verification failed after waiting 15s (timeout)" in msg, msg
        assert "deployment/kueue-controller-manager: 0/1 ready" in msg and "HeldByHarness" in msg, msg
        res = verify.result("Verify Kueue")
        assert "deployment/kueue-controller-manager" in res["failed_checks"]
    finally:
        harness("release")
    recovered = timed("site.yml after release", SITE, extravars={"kueue_verify_timeout": 240})
    assert recovered.rc == 0, recovered.stdout[-3000:]
    assert recovered.result("Verify Kueue")["ok"] is True
    again = timed("site.yml further run", SITE)
    assert again.rc == 0 and again.changed == 0, again


# ------------------------------------------------------------------ kube-apiserver stopped mid-apply
def large_configuration() -> list:
    objs = [{"apiVersion": V2, "kind": "ResourceFlavor", "metadata": {"name": "kf-flavor"}}]
    for i in range(N_CQ):
        objs.append({"apiVersion": V2, "kind": "ClusterQueue", "metadata": {"name": "kf-cq-%03d" % i}, "spec": {
            "namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                {"name": "kf-flavor", "resources": [{"name": "cpu", "nominalQuota": "1"}]}]}]}})
    for n in range(N_NS):
        for i in range(N_LQ):
            objs.append({"apiVersion": V2, "kind": "LocalQueue",
                         "metadata": {"name": "kf-lq-%03d" % i, "namespace": "kf-ns-%d" % n},
                         "spec": {"clusterQueue": "kf-cq-%03d" % ((n * N_LQ + i) % N_CQ)}})
    return objs


def key_of(ref: dict) -> tuple:
    return (ref["kind"], ref.get("namespace", ""), ref["name"])


def test_api_server_stopped_mid_apply(cluster, start):
    """kube-apiserver is SIGKILLed while kueue_queues applies a 705-object configuration: the run fails
    saying in which stage, how many writes were done (the `applied` list is exactly what the cluster
    has, give or take the writes in flight) and that re-running converges; once kube-apiserver is back
    (same port, etcd and certificates) a re-run converges and a third run changes nothing."""
    kube = start.with_kueue()
    config = large_configuration()
    total = len(config) + N_NS
    args = {"resources": config, "create_namespaces": True, "wait": False}
    try:
        # Run the apply; watch ClusterQueues being created; stop kube-apiserver after STOP_AFTER of them.
        outcome = {}

        def apply():
            started = time.time()
            outcome["res"] = run_playbook(queues_play(args), timeout=HANG_GUARD)
            outcome["seconds"] = time.time() - started
        custom = client.CustomObjectsApi(kube)
        rv = custom.list_cluster_custom_object(GROUP, "v1beta2", "clusterqueues")["metadata"]["resourceVersion"]
        runner = threading.Thread(target=apply)
        runner.start()
        seen = set()
        stream = watch.Watch()
        for event in stream.stream(custom.list_cluster_custom_object, GROUP, "v1beta2", "clusterqueues",
                                   resource_version=rv, timeout_seconds=240):
            name = event["object"]["metadata"]["name"]
            if event["type"] == "ADDED" and name.startswith("kf-cq-"):
                seen.add(name)
                if len(seen) >= STOP_AFTER:
                    break
        stream.stop()
        assert len(seen) >= STOP_AFTER, "the apply did not create %d ClusterQueues" % STOP_AFTER
        stopped = time.time()
        cluster.stop_apiserver(signal.SIGKILL)
        runner.join(HANG_GUARD + 30)
        res = outcome["res"]
        record("kueue_queues, kube-apiserver SIGKILLed after %d ClusterQueues" % STOP_AFTER, outcome["seconds"],
               rc=res.rc, failed_after_stop=round(time.time() - stopped, 1))

        msg = assert_fails_cleanly(res)
        failed = res.result("Apply queues")
        applied, unconfirmed = failed["applied"], failed["unconfirmed"]
        assert 0 < len(applied) < total, msg
        assert msg.startswith("host: the API server stopped answering during the apply of ClusterQueue objects"), msg
        assert "%d of the %d write(s) this run had to make were done before that" % (len(applied), total) in msg
        assert "Namespace x%d (kf-ns-0" % N_NS in msg and "ResourceFlavor x1 (kf-flavor)" in msg, msg
        assert "nothing else was written" in msg and "Fix: re-run the same configuration" in msg, msg
        assert "LocalQueue" not in msg, msg  # none was reached
        record("  -> applied before the stop", 0, applied=len(applied), unconfirmed=len(unconfirmed), total=total,
               message=msg[:400])

        # kube-apiserver back (same port, etcd, certificates): what the run said it applied is there,
        # nothing beyond it and the writes in flight.
        started = time.time()
        cluster.start_apiserver()
        wait_for("Kueue's webhooks after the restart", lambda: webhooks_answer(kube), timeout=240)
        record("kube-apiserver restart until Kueue's webhooks answer", time.time() - started)
        present = set(ours(kube))
        said = set(key_of(r) for r in applied if r["kind"] != "Namespace")
        maybe = set(key_of(r) for r in unconfirmed)
        assert said <= present <= said | maybe, (sorted(present - said - maybe)[:5], sorted(said - present)[:5])
        core = client.CoreV1Api(kube)
        namespaces = {n.metadata.name for n in core.list_namespace().items}
        assert {r["name"] for r in applied if r["kind"] == "Namespace"} <= namespaces

        # A re-run converges: every object is there and as configured; a third run changes nothing.
        converge = timed("kueue_queues re-run after the restart", queues_play(args))
        assert converge.rc == 0, converge.stdout[-3000:]
        counts = converge.result("Apply queues")["counts"]
        assert counts["ClusterQueue"]["unchanged"] >= len([k for k in present if k[0] == "ClusterQueue"]), counts
        live = ours(kube)
        assert len(live) == len(config)
        for obj in config:
            meta = obj["metadata"]
            got = live[(obj["kind"], meta.get("namespace", ""), meta["name"])]
            assert subset(obj.get("spec") or {}, got.get("spec") or {}), (obj, got.get("spec"))
        third = timed("kueue_queues third run", queues_play(args))
        assert third.rc == 0 and third.changed == 0, third
    finally:
        if not cluster.healthy():
            cluster.start_apiserver()
        wait_for("Kueue's webhooks", lambda: webhooks_answer(kube), timeout=240)
        started = time.time()
        clean_ours(kube)
        record("cleanup of the large configuration", time.time() - started)


# ------------------------------------------------------------------ kube-apiserver stopped mid-migration
def test_api_server_stopped_mid_storage_migration(cluster, start):
    """Every ResourceFlavor (300 kf-mig- ones) stored as kueue.x-k8s.io/v1beta1 in etcd and the CRD's
    storedVersions [v1beta1, v1beta2]: what Kueue 0.15 leaves after an upgrade to a release storing v1beta2 (the
    objects are given the old encoding in etcd itself, behind the API server, which reads and converts them through
    Kueue's conversion webhook as after a real upgrade). kueue_storage_migration (10 objects a page, 4 writes at a time) is cut short by
    a SIGKILL of kube-apiserver once 60 are stored as v1beta2: the run fails naming the CRD, how many objects remain
    (those etcd still holds at v1beta1, give or take the writes in flight) and that re-running finishes it; the CRD
    still lists v1beta1 (never trimmed half-way). kube-apiserver back, the same task rewrites every object and
    trims storedVersions to [v1beta2]; every object keeps its spec; a third run has nothing to do."""
    kube = start.with_kueue()
    custom, ext = client.CustomObjectsApi(kube), client.ApiextensionsV1Api(kube)
    crd_name, prefix = "resourceflavors.%s" % GROUP, "/registry/%s/resourceflavors/" % GROUP

    def stored():
        return dict((key.rsplit("/", 1)[-1], obj["apiVersion"].rsplit("/", 1)[-1])
                    for key, obj in etcd_objects(cluster, prefix).items())

    def specs():
        return dict((rf["metadata"]["name"], rf.get("spec")) for rf in
                    custom.list_cluster_custom_object(GROUP, "v1beta2", "resourceflavors")["items"])
    workers = 4  # concurrent writes: as many may be in flight when kube-apiserver dies
    args = {"crds": [crd_name], "page_size": 10, "workers": workers, "timeout": 120,
            "kubeconfig": "{{ kueue_kubeconfig }}"}
    try:
        for i in range(N_MIGRATE):
            custom.create_cluster_custom_object(GROUP, "v1beta2", "resourceflavors", {
                "apiVersion": V2, "kind": "ResourceFlavor", "metadata": {"name": "kf-mig-%03d" % i},
                "spec": {"nodeLabels": {"kueueops.test/pool": "pool-%d" % i}}})
        before = specs()
        for key, obj in etcd_objects(cluster, prefix).items():
            etcd_put(cluster, key, dict(obj, apiVersion=GROUP + "/v1beta1"))
        ext.patch_custom_resource_definition_status(crd_name, {"status": {"storedVersions": ["v1beta1", "v1beta2"]}})
        wait_for("every ResourceFlavor stored as v1beta1 and served (converted) as before", lambda: set(
            stored().values()) == {"v1beta1"} and specs() == before, timeout=60)
        total = len(before)

        outcome = {}

        def migrate():
            started = time.time()
            outcome["res"] = run_playbook(module_play("kueue_storage_migration", args, name="Migrate"),
                                          timeout=HANG_GUARD)
            outcome["seconds"] = time.time() - started
        runner = threading.Thread(target=migrate)
        runner.start()
        wait_for("%d ResourceFlavors rewritten as v1beta2" % MIGRATE_STOP_AFTER, lambda: list(
            stored().values()).count("v1beta2") >= MIGRATE_STOP_AFTER, timeout=HANG_GUARD, interval=0.1)
        stopped = time.time()
        cluster.stop_apiserver(signal.SIGKILL)
        runner.join(HANG_GUARD + 30)
        res = outcome["res"]
        msg = assert_fails_cleanly(res)
        report = res.result("Migrate")
        left = list(stored().values()).count("v1beta1")
        record("kueue_storage_migration, kube-apiserver SIGKILLed after %d rewrites" % MIGRATE_STOP_AFTER,
               outcome["seconds"], rc=res.rc, failed_after_stop=round(time.time() - stopped, 1),
               rewritten=report["rewritten"], remaining=report["remaining"], message=msg[:400])
        assert report["crds_remaining"] == [crd_name] and report["trimmed"] == [], report
        assert 0 < report["remaining"] < total and report["rewritten"] + report["remaining"] == total, report
        # etcd holds at v1beta1 what the run says remains, give or take the writes in flight (landed, unconfirmed)
        assert report["remaining"] - workers <= left <= report["remaining"], (left, report["remaining"])
        assert "stopped at CRD %s after rewriting %d of its %d objects" % (
            crd_name, report["rewritten"], total) in msg, msg
        assert "%d object(s) of 1 CRD(s) remain" % report["remaining"] in msg and "run the same task" in msg, msg
        assert "the API server stopped answering: connection refused" in msg, msg

        started = time.time()
        cluster.start_apiserver()
        wait_for("Kueue's webhooks after the restart", lambda: webhooks_answer(kube), timeout=240)
        record("kube-apiserver restart until Kueue's webhooks answer (migration)", time.time() - started)
        assert list(ext.read_custom_resource_definition(crd_name).status.stored_versions) == ["v1beta1", "v1beta2"]

        finish = timed("kueue_storage_migration re-run after the restart",
                       module_play("kueue_storage_migration", args, name="Migrate"))
        assert finish.rc == 0, finish.stdout[-3000:]
        done = finish.result("Migrate")
        assert done["remaining"] == 0 and done["trimmed"] == [crd_name] and done["rewritten"] == total, done
        assert set(stored().values()) == {"v1beta2"} and len(stored()) == total
        assert list(ext.read_custom_resource_definition(crd_name).status.stored_versions) == ["v1beta2"]
        assert specs() == before
        third = timed("kueue_storage_migration third run", module_play("kueue_storage_migration", args, name="Migrate"))
        assert third.rc == 0 and third.changed == 0 and third.result("Migrate")["rewritten"] == 0, third
    finally:
        if not cluster.healthy():
            cluster.start_apiserver()
        wait_for("Kueue's webhooks", lambda: webhooks_answer(kube), timeout=240)
        clean_ours(kube)


# ------------------------------------------------------------------ kueue_queues and smoke test waits
def test_queue_waits(cluster, start):
    """A ClusterQueue whose AdmissionCheck no controller serves never becomes Active; a pruned object
    kept by a foreign finalizer is never gone; a smoke-test Job on a held ClusterQueue is never admitted.
    Each run ends after its (small) timeout naming the object, the reason and the timeout."""
    kube = start.with_kueue()
    flavor = {"apiVersion": V2, "kind": "ResourceFlavor", "metadata": {"name": "kf-flavor"}}
    check = {"apiVersion": V2, "kind": "AdmissionCheck", "metadata": {"name": "kf-nobody"},
             "spec": {"controllerName": "kueueops.test/no-such-controller"}}
    cq = {"apiVersion": V2, "kind": "ClusterQueue", "metadata": {"name": "kf-checked"}, "spec": {
        "namespaceSelector": {}, "admissionChecksStrategy": {"admissionChecks": [{"name": "kf-nobody"}]},
        "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
            {"name": "kf-flavor", "resources": [{"name": "cpu", "nominalQuota": "1"}]}]}]}}
    held_cq = {"apiVersion": V2, "kind": "ClusterQueue", "metadata": {"name": "kf-held"}, "spec": {
        "namespaceSelector": {}, "stopPolicy": "Hold", "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
            {"name": "kf-flavor", "resources": [{"name": "cpu", "nominalQuota": "1"}]}]}]}}
    lq = {"apiVersion": V2, "kind": "LocalQueue", "metadata": {"name": "kf-smoke", "namespace": "kf-waits"},
          "spec": {"clusterQueue": "kf-held"}}
    custom = client.CustomObjectsApi(kube)
    try:
        # 1. wait for Active
        inactive = timed("kueue_queues wait for Active, timeout 10",
                         queues_play({"resources": [flavor, check, cq], "timeout": 10}))
        msg = assert_fails_cleanly(inactive)
        assert "1 queue(s) did not become Active within 10s: ClusterQueue kf-checked:" in msg, msg
        assert "kf-nobody" in msg, msg

        # 2. prune (and state=absent) waiting for a deletion a foreign finalizer holds: a warning naming
        #    the object, the finalizer and the wait, not a failure (the deletion was requested).
        custom.patch_cluster_custom_object(GROUP, "v1beta2", "clusterqueues", "kf-checked",
                                           {"metadata": {"finalizers": ["kueueops.test/keep"]}})
        pruned = timed("kueue_queues prune of a ClusterQueue a finalizer keeps",
                       queues_play({"resources": [flavor, check, held_cq, lq], "create_namespaces": True,
                                    "prune": True, "timeout": 60}))
        assert pruned.rc == 0, pruned.stdout[-3000:]
        res = pruned.result("Apply queues")
        assert [(w["name"], w["waited"]) for w in res["prune_waiting"]] == [("kf-checked", 15)], res["prune_waiting"]
        warning = " ".join(res.get("warnings") or [])
        assert "ClusterQueue kf-checked is still being deleted after 15s" in warning, warning
        assert "kueueops.test/keep" in warning, warning

        # 3. smoke test: a Job on a LocalQueue of a held ClusterQueue is never admitted.
        smoke = timed("kueue_verify smoke test on a held ClusterQueue, timeout 10", module_play(
            "kueue_verify", {"kubeconfig": "{{ kueue_kubeconfig }}", "smoke_test": ["kf-waits/kf-smoke"],
                             "timeout": 10}, name="Verify"))
        msg = assert_fails_cleanly(smoke)
        assert "smoke-test/kf-waits/kf-smoke" in msg and "still pending after 10s, the timeout" in msg, msg
        assert not client.BatchV1Api(kube).list_namespaced_job("kf-waits").items  # the Job was removed
    finally:
        missing_ok(custom.patch_cluster_custom_object, GROUP, "v1beta2", "clusterqueues", "kf-checked",
                   {"metadata": {"finalizers": None}})
        clean_ours(kube)


# ------------------------------------------------------------------ the visibility server unreachable
VISIBILITY_APISERVICES = ["v1beta1.visibility.kueue.x-k8s.io", "v1beta2.visibility.kueue.x-k8s.io"]


def kueue_apiservices(kube) -> dict:
    """{name: Available condition} of the APIServices served from kueue-system."""
    out = {}
    for svc in client.ApiregistrationV1Api(kube).list_api_service().items:
        if svc.spec.service and svc.spec.service.namespace == "kueue-system":
            out[svc.metadata.name] = next((c for c in svc.status.conditions or [] if c.type == "Available"), None)
    return out


def test_visibility_server_unreachable(cluster, start):
    """The node agent stops proxying the visibility Service only (the manager keeps running and stays
    ready, as behind a NetworkPolicy): the aggregator marks the chart's APIServices Available=False
    (FailedDiscoveryCheck), and kueue_verify fails after its timeout naming each with that reason and
    the aggregator's message, every other check passing; proxied again, verify waits and passes."""
    kube = start.with_kueue()
    assert sorted(kueue_apiservices(kube)) == VISIBILITY_APISERVICES
    verify = {"kubeconfig": "{{ kueue_kubeconfig }}", "install_method": "helm"}
    harness("visibility-block")
    try:
        wait_for("the aggregator to find the visibility server unreachable", lambda: all(
            c is not None and c.status == "False" for c in kueue_apiservices(kube).values()), timeout=120)
        failed = timed("kueue_verify, visibility Service unreachable, timeout 10",
                       module_play("kueue_verify", dict(verify, timeout=10), name="Verify"))
        msg = assert_fails_cleanly(failed)
        res = failed.result("Verify")
        assert sorted(res["failed_checks"]) == ["apiservice/" + n for n in VISIBILITY_APISERVICES], res
        assert "Kueue verification failed after waiting 10s (timeout) (2 of" in msg, msg
        for name in VISIBILITY_APISERVICES:
            version = name.split(".", maxsplit=1)[0]
            assert "apiservice/%s: Available=False (FailedDiscoveryCheck): failing or missing response from " \
                   "https://" % name in msg, msg
            assert "/apis/visibility.kueue.x-k8s.io/%s" % version in msg, msg
        assert "(Service kueue-system/kueue-visibility-server)" in msg, msg
        assert "kubectl get apiservice " + " ".join(VISIBILITY_APISERVICES) in msg, msg
        assert "deployment/kueue-controller-manager" not in res["failed_checks"]  # the manager stays ready
    finally:
        harness("visibility-unblock")
    recovered = timed("kueue_verify once the visibility Service is proxied again",
                      module_play("kueue_verify", dict(verify, timeout=180), name="Verify"))
    assert recovered.rc == 0, recovered.stdout[-3000:]
    checks = {c["name"]: c for c in recovered.result("Verify")["checks"]}
    assert all(checks["apiservice/" + n]["ok"] for n in VISIBILITY_APISERVICES), checks


# ------------------------------------------------------------------ helm uninstall waits
def test_helm_uninstall_waits(cluster, start):
    """kueue_helm state=absent waits for Kueue's CRDs, then for the APIServices served from its namespace,
    then for the namespace, to be gone. A foreign finalizer on a ClusterQueue keeps the CRDs terminating;
    a visibility APIService left behind by the release (its Service gone, so it is unavailable and would
    fail the namespace controller's discovery forever) is deleted before the namespace, and while a
    finalizer keeps it the namespace is not touched; a finalizer on a ConfigMap keeps the namespace: each
    run fails after its timeout naming what is left; without them, a re-run finishes with the namespace
    gone, and the next changes nothing. This also gives the cluster back without Kueue."""
    require(not start.had_kueue, "this drill uninstalls Kueue, which was installed before the module started (a test "
            "module before this one left it installed)")
    kube = start.with_kueue()
    custom = client.CustomObjectsApi(kube)
    core = client.CoreV1Api(kube)
    custom.create_cluster_custom_object(GROUP, "v1beta2", "clusterqueues", {
        "apiVersion": V2, "kind": "ClusterQueue", "metadata": {"name": "kf-kept", "finalizers": ["kueueops.test/keep"]},
        "spec": {"namespaceSelector": {}}})
    core.create_namespaced_config_map("kueue-system", {"metadata": {"name": "kf-kept",
                                                                    "finalizers": ["kueueops.test/keep"]}})
    absent = {"state": "absent", "delete_namespace": True, "timeout": 15, "binary_path": os.environ["HELM_V3"],
              "kubeconfig": "{{ kueue_kubeconfig }}"}

    def unkeep_cq():
        missing_ok(custom.patch_cluster_custom_object, GROUP, "v1beta2", "clusterqueues", "kf-kept",
                   {"metadata": {"finalizers": None}})

    def unkeep_cm():
        missing_ok(core.patch_namespaced_config_map, "kf-kept", "kueue-system", {"metadata": {"finalizers": None}})

    reg = client.ApiregistrationV1Api(kube)
    leftover = VISIBILITY_APISERVICES[1]
    created = []

    def unkeep_apiservice(delete=False):
        if not created:
            return
        missing_ok(reg.patch_api_service, leftover, {"metadata": {"finalizers": None}})
        if delete:  # an unavailable APIService would fail discovery for every later test
            missing_ok(reg.delete_api_service, leftover)
    try:
        crds = timed("kueue_helm absent, a ClusterQueue kept by a finalizer, timeout 15",
                     module_play("kueue_helm", absent, name="Uninstall"))
        msg = assert_fails_cleanly(crds)
        assert "Kueue CRDs still terminating after 15s: clusterqueues.kueue.x-k8s.io" in msg, msg
        assert "held by finalizers that are not Kueue's: clusterqueues kf-kept (finalizers kueueops.test/keep)" in msg
        unkeep_cq()
        # helm uninstall deleted the chart's APIServices; one comes back as a release leaves it when its
        # records are gone or it is kept by a resource policy: its Service is gone, so it is unavailable.
        assert not kueue_apiservices(kube)
        reg.create_api_service({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {
            "name": leftover, "finalizers": ["kueueops.test/keep"]}, "spec": {
            "group": "visibility.kueue.x-k8s.io", "version": "v1beta2", "groupPriorityMinimum": 100,
            "versionPriority": 100, "insecureSkipTLSVerify": True,
            "service": {"name": "kueue-visibility-server", "namespace": "kueue-system", "port": 443}}})
        created.append(leftover)
        wait_for("the leftover APIService unavailable", lambda: getattr(
            kueue_apiservices(kube).get(leftover), "status", None) == "False", timeout=60)
        kept = timed("kueue_helm absent, a leftover APIService kept by a finalizer, timeout 15",
                     module_play("kueue_helm", absent, name="Uninstall"))
        msg = assert_fails_cleanly(kept)
        assert "APIService(s) %s still present 15s after their deletion" % leftover in msg, msg
        assert core.read_namespace("kueue-system").metadata.deletion_timestamp is None  # not before the APIService
        unkeep_apiservice()
        namespace = timed("kueue_helm absent, a ConfigMap in the namespace kept by a finalizer, timeout 15",
                          module_play("kueue_helm", absent, name="Uninstall"))
        msg = assert_fails_cleanly(namespace)
        assert "namespace kueue-system still terminating after 15s" in msg and "kueueops.test/keep" in msg, msg
        assert "Discovery failed" not in msg, msg  # the namespace controller's discovery was never blocked
        assert not kueue_apiservices(kube)
        unkeep_cm()
        patient = module_play("kueue_helm", dict(absent, timeout=180), name="Uninstall")
        done = timed("kueue_helm absent re-run", patient)
        assert done.rc == 0, done.stdout[-3000:]
        assert not kueue_installed(kube)  # the namespace is gone when the uninstall returns
        again = timed("kueue_helm absent further run", patient)
        assert again.rc == 0 and again.changed == 0, again
    finally:
        unkeep_cq()
        unkeep_apiservice(delete=True)
        unkeep_cm()
    wait_for("kueue-system gone", lambda: not kueue_installed(kube), timeout=180)
