"""kueueops.aks.kueue_backup end to end (issue 5): the real module through real ansible-playbook
against the real local control plane running the real Kueue 0.19.2.

The example configuration of playbooks/vars/queues.yml is applied with kueue_queues (namespaces
team-vision and team-nlp), plus two suspended Jobs (one admitted, one pending) so there are
Workloads to count. Objects these tests add themselves are named ``kb-*``. Everything is removed
afterwards, and Kueue too when this module installed it.
"""
from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile

import pytest
import yaml
from kubernetes import client

from ..prerequisites import require
from .ansible import COLLECTIONS, REPO, run_playbook
from .kubeutil import (admitted, create_multikueue, delete_kueue_objects, delete_namespaces, kueue_api, kueue_plurals,
                       live_normalised, queued_job, wait_for, workloads)

# The collection as the modules see it (`make venv` links this checkout there).
if COLLECTIONS not in sys.path:
    sys.path.insert(0, COLLECTIONS)
from ansible_collections.kueueops.aks.plugins.module_utils.backup import backup as b  # noqa: E402

GROUP = "kueue.x-k8s.io"
KUEUE_VERSION = "0.19.2"
V2 = GROUP + "/v1beta2"
QUEUES_VARS = os.path.join(REPO, "playbooks", "vars", "queues.yml")
CONFIG = yaml.safe_load(open(QUEUES_VARS))["kueue_resources"]
NAMESPACES = sorted({o["metadata"]["namespace"] for o in CONFIG if o["kind"] == "LocalQueue"})
PLURALS = kueue_plurals()  # every kind of a configuration
OBJECT_FILES = ["02-multikueueclusters.yaml", "03-multikueueconfigs.yaml", "05-topologies.yaml",
                "10-resourceflavors.yaml", "20-cohorts.yaml", "30-provisioningrequestconfigs.yaml",
                "40-admissionchecks.yaml", "50-workloadpriorityclasses.yaml", "60-clusterqueues.yaml",
                "70-localqueues.yaml"]


# ---------------------------------------------------------------- fixtures
def delete_jobs(kube):
    batch = client.BatchV1Api(kube)
    for ns in NAMESPACES:
        for item in batch.list_namespaced_job(ns).items:
            if item.metadata.name.startswith("kb-"):
                batch.delete_namespaced_job(item.metadata.name, ns, propagation_policy="Background")
    wait_for("kb- Jobs and their Workloads to be gone",
             lambda: not any(j.metadata.name.startswith("kb-") for ns in NAMESPACES
                             for j in batch.list_namespaced_job(ns).items)
             and not any(workloads(kube, ns) for ns in NAMESPACES), timeout=120)


def delete_everything(kube):
    """Every Kueue object of the example and the kb- ones, their namespaces, the kb- Secrets."""
    custom = client.CustomObjectsApi(kube)
    core = client.CoreV1Api(kube)
    ours = {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]) for o in CONFIG}

    def mine(kind, meta):
        return (kind, meta.get("namespace", ""), meta["name"]) in ours or meta["name"].startswith("kb-")

    delete_jobs(kube)
    delete_kueue_objects(kube, PLURALS, mine)
    wait_for("the objects to be gone", lambda: not [
        1 for kind, plural in PLURALS.items()
        for item in custom.list_cluster_custom_object(GROUP, "v1beta2", plural)["items"]
        if mine(kind, item["metadata"])], timeout=120)
    for secret in core.list_namespaced_secret("kueue-system").items:
        if secret.metadata.name.startswith("kb-"):
            core.delete_namespaced_secret(secret.metadata.name, "kueue-system")
    delete_namespaces(kube, NAMESPACES)


def play(*tasks, vars_files=()):
    out = {"name": "kueue_backup", "hosts": "local", "gather_facts": False,
           "module_defaults": {"group/kueueops.aks.kueue": {"kubeconfig": "{{ kueue_kubeconfig }}"}},
           "tasks": list(tasks)}
    if vars_files:
        out["vars_files"] = list(vars_files)
    return [out]


def backup_task(name="Back up", ignore_errors=False, **args):
    task = {"name": name, "kueueops.aks.kueue_backup": args}
    if ignore_errors:
        task["ignore_errors"] = True
    return task


def apply_example():
    res = run_playbook(play({"name": "Apply the example", "kueueops.aks.kueue_queues": {
        "resources": "{{ kueue_resources }}", "create_namespaces": True, "timeout": 120}},
        vars_files=[QUEUES_VARS]))
    assert res.rc == 0, res.stdout[-3000:]


@pytest.fixture(scope="module")
def configured(kueue):
    """The example configuration applied, one Job admitted and one pending in team-vision/vision."""
    kube = kueue
    delete_everything(kube)
    apply_example()
    batch = client.BatchV1Api(kube)
    batch.create_namespaced_job("team-vision", queued_job("kb-small", "vision", "1"))
    batch.create_namespaced_job("team-vision", queued_job("kb-huge", "vision", "10000"))
    wait_for("one admitted and one pending Workload", lambda: sorted(
        admitted(w) for w in workloads(kube, "team-vision")) == [False, True], timeout=120)
    yield kube
    delete_everything(kube)


@pytest.fixture
def dest():
    folder = tempfile.mkdtemp(prefix="kb-dest-")
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


# ------------------------------------------------------------------- tests
def test_backup_writes_private_files_and_a_complete_manifest(configured, dest):
    check = run_playbook(play(backup_task(dest=dest, cluster_name="local")), check=True)
    assert check.rc == 0, check.stdout[-3000:]
    cres = check.result("Back up")
    assert cres["changed"] is True and cres["counts"]["ClusterQueue"] == 2
    assert os.listdir(dest) == []  # check mode writes nothing

    res = run_playbook(play(backup_task(dest=dest, cluster_name="local")))
    assert res.rc == 0, res.stdout[-3000:]
    out = res.result("Back up")
    assert out["changed"] is True and out["verified"] is True
    path = out["backup_path"]
    assert os.path.dirname(path) == dest and os.path.basename(path).startswith("local-")
    assert os.listdir(dest) == [os.path.basename(path)]  # no temporary folder left
    assert sorted(os.listdir(path)) == sorted(OBJECT_FILES + ["manifest.json"])
    assert mode(path) == 0o700
    for name in os.listdir(path):
        assert mode(os.path.join(path, name)) == 0o600, name

    manifest = json.load(open(os.path.join(path, "manifest.json")))
    assert manifest == out["manifest"]
    assert manifest["counts"] == {"MultiKueueCluster": 0, "MultiKueueConfig": 0, "Topology": 0, "ResourceFlavor": 3,
                                  "Cohort": 1, "ProvisioningRequestConfig": 0, "AdmissionCheck": 0,
                                  "WorkloadPriorityClass": 3, "ClusterQueue": 2, "LocalQueue": 2}
    assert manifest["api_version"] == V2 and manifest["api_versions"]["LocalQueue"] == V2
    assert manifest["kueue"]["version"] == "v" + KUEUE_VERSION
    assert manifest["cluster"]["name"] == "local" and manifest["cluster"]["resource_id"] is None
    assert manifest["cluster"]["server"].startswith("https://127.0.0.1:")
    # The cluster's identity (issue 40): the kube-system UID, the kubeconfig context as a readable name.
    assert manifest["cluster"]["uid"] == client.CoreV1Api(configured).read_namespace("kube-system").metadata.uid
    assert manifest["cluster"]["context"]
    assert manifest["excluded"] == []
    vision = [q for q in manifest["workloads"]["local_queues"] if q["name"] == "vision"][0]
    assert vision == {"namespace": "team-vision", "name": "vision", "cluster_queue": "team-vision",
                      "pending": 1, "admitted": 1}
    assert {"name": "team-nlp", "pending": 0, "admitted": 0} in manifest["workloads"]["cluster_queues"]
    for name in OBJECT_FILES:
        assert manifest["files"][name]["sha256"] == b.sha256_file(os.path.join(path, name))
    assert b.verify_backup(path) == manifest

    # The files hold clean manifests equal to the live objects.
    objects = b.load_objects(path)
    assert len(objects) == 11
    live = live_normalised(configured, PLURALS)
    for obj in objects:
        assert obj == live[kueue_api().obj_key(obj)]
        for field in ("status",):
            assert field not in obj
        assert set(obj["metadata"]) <= {"name", "namespace", "labels", "annotations"}, obj["metadata"]
    text = open(os.path.join(path, "60-clusterqueues.yaml")).read()
    for word in ("resourceVersion", "managedFields", "uid:", "creationTimestamp", "status:", "resource-in-use"):
        assert word not in text


def test_two_backups_of_an_unchanged_cluster_are_byte_identical(configured, dest):
    res = run_playbook(play(backup_task(name="First", dest=dest, cluster_name="local"),
                            backup_task(name="Second", dest=dest, cluster_name="local")))
    assert res.rc == 0, res.stdout[-3000:]
    first, second = res.result("First")["backup_path"], res.result("Second")["backup_path"]
    assert first != second and sorted(os.listdir(dest)) == sorted(os.path.basename(p) for p in (first, second))
    for name in OBJECT_FILES:
        with open(os.path.join(first, name), "rb") as one, open(os.path.join(second, name), "rb") as two:
            assert one.read() == two.read(), name
    m1 = json.load(open(os.path.join(first, "manifest.json")))
    m2 = json.load(open(os.path.join(second, "manifest.json")))
    assert m1["files"] == m2["files"]
    m1.pop("created"), m2.pop("created")
    assert m1 == m2


def test_two_backups_at_once_do_not_overwrite_each_other(configured, dest):
    """Two runs started together under the same dest (issue 8): two complete, verified backups in two
    folders (the second takes a -2 suffix when both land in the same second), nothing half-written."""
    import threading

    results = [None, None]

    def run(index):
        results[index] = run_playbook(play(backup_task(name="Back up", dest=dest, cluster_name="local")))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert all(r.rc == 0 for r in results), results
    paths = [r.result("Back up")["backup_path"] for r in results]
    assert paths[0] != paths[1] and sorted(os.listdir(dest)) == sorted(os.path.basename(p) for p in paths)
    for path in paths:
        check = run_playbook(play(backup_task(name="Verify", verify_path=path)))
        assert check.rc == 0, check
        for name in OBJECT_FILES:
            with open(os.path.join(paths[0], name), "rb") as one, open(os.path.join(path, name), "rb") as two:
                assert one.read() == two.read(), name


def test_tampered_file_is_named_by_verify_backup(configured, dest):
    res = run_playbook(play(backup_task(path=os.path.join(dest, "bk"))))
    assert res.rc == 0, res.stdout[-3000:]
    path = res.result("Back up")["backup_path"]
    assert path == os.path.join(dest, "bk")
    name = os.path.join(path, "60-clusterqueues.yaml")
    text = open(name).read()
    with open(name, "w") as handle:
        handle.write(text.replace("nominalQuota: '32'", "nominalQuota: '320'", 1))
    with pytest.raises(b.BackupError) as err:
        b.verify_backup(path)
    assert err.value.problems[0].startswith("60-clusterqueues.yaml: sha256")
    assert "60-clusterqueues.yaml" in err.value.message()


def test_existing_backup_is_refused(configured, dest):
    path = os.path.join(dest, "bk")
    assert run_playbook(play(backup_task(path=path))).rc == 0
    before = {n: open(os.path.join(path, n), "rb").read() for n in os.listdir(path)}
    again = run_playbook(play(backup_task(path=path, ignore_errors=True)))
    res = again.result("Back up")
    assert res.get("failed") is True
    assert res["msg"] == ("path: %s already exists; refusing to overwrite an existing backup. Fix: choose a new path "
                          "(or give dest, under which a new folder is created)." % path)
    assert {n: open(os.path.join(path, n), "rb").read() for n in os.listdir(path)} == before
    assert os.listdir(dest) == ["bk"]


def _mount(args):
    proc = subprocess.run(["mount", *args], capture_output=True, text=True)
    require(proc.returncode == 0, "cannot mount a tmpfs here (root and CAP_SYS_ADMIN needed): %s" % proc.stderr.strip())


def test_unwritable_destinations_fail_cleanly(configured, dest):
    # A regular file in the way of dest (root ignores permission bits, so no chmod here).
    blocker = os.path.join(dest, "file")
    open(blocker, "w").close()
    res = run_playbook(play(backup_task(name="File in the way", dest=blocker, ignore_errors=True),
                            backup_task(name="Below a file", dest=os.path.join(blocker, "sub"),
                                        ignore_errors=True)))
    for task in ("File in the way", "Below a file"):
        out = res.result(task)
        assert out.get("failed") is True, out
        assert out["msg"].startswith("dest: cannot write the backup under %s" % blocker), out["msg"]
        assert "Fix: " in out["msg"] and "nothing was written" in out["msg"]
    assert os.listdir(dest) == ["file"]

    # A read-only file system, and a full one.
    ro = os.path.join(dest, "ro")
    full = os.path.join(dest, "full")
    os.mkdir(ro)
    os.mkdir(full)
    _mount(["-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", ro])
    try:
        _mount(["-t", "tmpfs", "-o", "size=12k", "tmpfs", full])
        try:
            # Fill the tiny file system so that the backup's files cannot fit.
            with open(os.path.join(full, "filler"), "wb") as handle:
                try:
                    handle.write(b"x" * 10 * 1024)
                except OSError:
                    pass
            res = run_playbook(play(backup_task(name="Read-only", dest=ro, ignore_errors=True),
                                    backup_task(name="Full", dest=full, ignore_errors=True)))
            out = res.result("Read-only")
            assert out.get("failed") is True
            assert out["msg"].startswith("dest: cannot write the backup under %s: Read-only file system" % ro)
            assert "Fix: the file system is read-only" in out["msg"]
            assert os.listdir(ro) == []
            out = res.result("Full")
            assert out.get("failed") is True
            assert out["msg"].startswith("dest: cannot write the backup under %s: No space left on device" % full)
            assert "Fix: free space" in out["msg"]
            assert os.listdir(full) == ["filler"]  # no partial backup, no temporary folder
        finally:
            subprocess.run(["umount", full], check=True)
    finally:
        subprocess.run(["umount", ro], check=True)


def test_aks_objects_and_multikueue_secrets(configured, dest):
    kube = configured
    custom = client.CustomObjectsApi(kube)
    core = client.CoreV1Api(kube)
    custom.create_cluster_custom_object(GROUP, "v1beta2", "resourceflavors", {
        "apiVersion": V2, "kind": "ResourceFlavor", "metadata": {"name": "aks-kb-default"}, "spec": {}})
    core.create_namespaced_secret("kueue-system", {
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "kb-worker1", "labels": {"team": "kb"}},
        "type": "Opaque", "stringData": {"kubeconfig": "apiVersion: v1\nkind: Config\n"}})
    custom.create_cluster_custom_object(GROUP, "v1beta2", "multikueueclusters", {
        "apiVersion": V2, "kind": "MultiKueueCluster", "metadata": {"name": "kb-worker1"},
        "spec": {"clusterSource": {"kubeConfig": {"location": "kb-worker1", "locationType": "Secret"}}}})
    custom.create_cluster_custom_object(GROUP, "v1beta2", "multikueueclusters", {
        "apiVersion": V2, "kind": "MultiKueueCluster", "metadata": {"name": "kb-worker2"},
        "spec": {"clusterSource": {"kubeConfig": {"location": "kb-missing", "locationType": "Secret"}}}})
    custom.create_cluster_custom_object(GROUP, "v1beta2", "multikueueconfigs", {
        "apiVersion": V2, "kind": "MultiKueueConfig", "metadata": {"name": "kb-mk"},
        "spec": {"clusters": ["kb-worker1", "kb-worker2"]}})

    res = run_playbook(play(
        backup_task(name="Managed", path=os.path.join(dest, "managed"), aks_extension=True),
        backup_task(name="Everything", path=os.path.join(dest, "all"), aks_extension=True, include_aks_managed=True,
                    include_secrets=True),
        backup_task(name="No extension", path=os.path.join(dest, "plain"))))
    assert res.rc == 0, res.stdout[-3000:]

    managed = res.result("Managed")
    assert managed["counts"]["ResourceFlavor"] == 3 and managed["counts"]["MultiKueueCluster"] == 2
    assert managed["excluded"] == [
        {"kind": "Secret", "namespace": "kueue-system", "name": "kb-missing",
         "reason": "referenced by MultiKueueCluster kb-worker2; not backed up (include_secrets: true to back it up)"},
        {"kind": "Secret", "namespace": "kueue-system", "name": "kb-worker1",
         "reason": "referenced by MultiKueueCluster kb-worker1; not backed up (include_secrets: true to back it up)"},
        {"kind": "ResourceFlavor", "name": "aks-kb-default",
         "reason": "owned by the AKS managed Kueue extension, which recreates it (include_aks_managed: true to back "
                   "it up)"},
    ]
    assert managed["manifest"]["excluded"] == managed["excluded"]
    assert "01-secrets.yaml" not in os.listdir(os.path.join(dest, "managed"))

    everything = res.result("Everything")
    assert everything["verified"] is True
    assert everything["counts"]["ResourceFlavor"] == 4 and everything["counts"]["Secret"] == 1
    assert [e["name"] for e in everything["excluded"]] == ["kb-missing"]
    assert "but does not exist" in everything["excluded"][0]["reason"]
    path = os.path.join(dest, "all")
    assert mode(os.path.join(path, "01-secrets.yaml")) == 0o600
    secrets = [d for d in yaml.safe_load_all(open(os.path.join(path, "01-secrets.yaml"))) if d]
    assert len(secrets) == 1
    secret = secrets[0]
    assert secret["metadata"] == {"name": "kb-worker1", "namespace": "kueue-system", "labels": {"team": "kb"}}
    assert secret["type"] == "Opaque" and "kubeconfig" in secret["data"]
    assert everything["manifest"]["files"]["01-secrets.yaml"]["restore_with"] == "kueueops.aks.kueue_queues"
    mk = [d for d in yaml.safe_load_all(open(os.path.join(path, "03-multikueueconfigs.yaml"))) if d]
    assert mk == [{"apiVersion": V2, "kind": "MultiKueueConfig", "metadata": {"name": "kb-mk"},
                   "spec": {"clusters": ["kb-worker1", "kb-worker2"]}}]

    # Without the managed extension, an aks- object is an ordinary object.
    plain = res.result("No extension")
    assert plain["counts"]["ResourceFlavor"] == 4
    assert [e["kind"] for e in plain["excluded"]] == ["Secret", "Secret"]

    for plural, name in (("multikueueconfigs", "kb-mk"), ("multikueueclusters", "kb-worker1"),
                         ("multikueueclusters", "kb-worker2"), ("resourceflavors", "aks-kb-default")):
        custom.delete_cluster_custom_object(GROUP, "v1beta2", plural, name)
    core.delete_namespaced_secret("kb-worker1", "kueue-system")


def test_restore_with_kueue_queues_yields_equal_specs(configured, dest):
    kube = configured
    res = run_playbook(play(backup_task(path=os.path.join(dest, "bk"))))
    assert res.rc == 0, res.stdout[-3000:]
    path = res.result("Back up")["backup_path"]
    before = live_normalised(kube, PLURALS)
    expected = {k: v for k, v in before.items() if (k[0], k[1], k[2]) in
                {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]) for o in CONFIG}}
    assert len(expected) == 11

    # The cluster loses its configuration (the Jobs first, so no finalizer holds a queue), and the namespaces.
    delete_jobs(kube)
    delete_everything(kube)
    assert not [k for k in live_normalised(kube, PLURALS) if k in expected]

    restore = run_playbook(play({"name": "Restore", "kueueops.aks.kueue_queues": {
        "src": path, "hold_admission": True, "create_namespaces": True, "timeout": 120}}))
    assert restore.rc == 0, restore.stdout[-3000:]
    out = restore.result("Restore")
    assert out["changed"] is True and out["not_active"] == []
    assert sum(c["created"] for c in out["counts"].values()) == 11
    after = live_normalised(kube, PLURALS)
    for key, obj in expected.items():
        assert after[key] == obj, key
    # And a backup of the restored cluster is byte-identical to the first one.
    again = run_playbook(play(backup_task(path=os.path.join(dest, "again"))))
    assert again.rc == 0, again.stdout[-3000:]
    for name in OBJECT_FILES:
        with open(os.path.join(path, name), "rb") as one, open(os.path.join(dest, "again", name), "rb") as two:
            assert one.read() == two.read(), name
    assert json.load(open(os.path.join(dest, "again", "manifest.json")))["files"] == \
        json.load(open(os.path.join(path, "manifest.json")))["files"]


def test_multikueue_with_its_kubeconfig_secret_round_trips(configured, dest):
    """MultiKueueCluster -> Secret (a kubeconfig), MultiKueueConfig, a MultiKueue AdmissionCheck: backed up with
    include_secrets, deleted, restored with kueue_queues src; equal afterwards, and the Secret's data never in
    ansible's output (run with -vvv and --diff)."""
    kube = configured
    custom = client.CustomObjectsApi(kube)
    core = client.CoreV1Api(kube)
    token, mk_objects = create_multikueue(kube, "kb-mk-worker", "kb-mk", "kb-mk", "kb-token-")
    mk_keys = [(b["kind"], "", b["metadata"]["name"]) for _p, b in mk_objects]
    secret_before = core.read_namespaced_secret("kb-mk-worker", "kueue-system").data

    res = run_playbook(play(backup_task(path=os.path.join(dest, "bk"), include_secrets=True)), verbosity=3,
                       diff=True)
    assert res.rc == 0, res.stdout[-3000:]
    path = res.result("Back up")["backup_path"]
    assert res.result("Back up")["counts"]["Secret"] == 1
    before = live_normalised(kube, PLURALS)

    def delete_mk():
        for plural, body in reversed(mk_objects):
            custom.delete_cluster_custom_object(GROUP, "v1beta2", plural, body["metadata"]["name"])
        core.delete_namespaced_secret("kb-mk-worker", "kueue-system")
        wait_for("the MultiKueue objects to be gone", lambda: not [k for k in live_normalised(kube, PLURALS)
                                                                   if k in mk_keys], timeout=60)

    delete_mk()
    outputs = [res.stdout + res.stderr]
    restore = run_playbook(play({"name": "Restore", "kueueops.aks.kueue_queues": {"src": path, "timeout": 120}}),
                           verbosity=3, diff=True)
    outputs.append(restore.stdout + restore.stderr)
    assert restore.rc == 0, restore.stdout[-3000:]
    out = restore.result("Restore")
    assert out["counts"]["Secret"]["created"] == 1
    assert out["counts"]["MultiKueueCluster"]["created"] == 1
    assert out["counts"]["MultiKueueConfig"]["created"] == 1
    secret_diff = [d for d in out["diff"] if d["after_header"].startswith("Secret")][0]
    assert secret_diff["after"]["data"] == {"kubeconfig": "VALUE_REDACTED_BY_KUEUEOPS"}
    after = live_normalised(kube, PLURALS)
    for key in mk_keys:
        assert after[key] == before[key], key
    assert core.read_namespaced_secret("kb-mk-worker", "kueue-system").data == secret_before
    # Second run: nothing changes, the Secret included.
    again = run_playbook(play({"name": "Restore", "kueueops.aks.kueue_queues": {"src": path, "timeout": 120}}),
                         verbosity=3, diff=True)
    outputs.append(again.stdout + again.stderr)
    assert again.rc == 0 and again.changed == 0, again.stdout[-3000:]

    # Without the Secret in the backup and in the cluster, the restore names what is missing and writes nothing.
    res = run_playbook(play(backup_task(path=os.path.join(dest, "no-secrets"))))
    assert res.rc == 0, res.stdout[-3000:]
    delete_mk()
    failed = run_playbook(play({"name": "Restore", "ignore_errors": True, "kueueops.aks.kueue_queues": {
        "src": os.path.join(dest, "no-secrets"), "timeout": 60}}), verbosity=3)
    outputs.append(failed.stdout + failed.stderr)
    msg = failed.result("Restore")["msg"]
    assert "MultiKueueCluster kb-mk-worker: spec.clusterSource.kubeConfig.location: Secret kueue-system/kb-mk-worker " \
           "does not exist in the input or the cluster" in msg, msg
    assert not [k for k in live_normalised(kube, PLURALS) if k in mk_keys]

    encoded = secret_before["kubeconfig"]
    for text in outputs:
        assert token not in text and encoded not in text
