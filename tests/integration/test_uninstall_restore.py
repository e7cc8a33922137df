"""playbooks/uninstall.yml and playbooks/restore.yml end to end (issue 5, Helm path), through real
ansible-playbook against the real local control plane running the real Kueue.

site.yml installs Kueue with the example configuration of playbooks/vars/queues.yml. Flux and Argo CD
CRDs (no controllers) carry three GitOps objects in namespace ur-gitops. Then:

* a backup that cannot be written (kueue_backup_dir is a regular file, a read-only tmpfs, a full tmpfs) stops
  the uninstall before anything is changed: the resourceVersion of every Kueue object and the Helm release
  revision are the same before and after, GitOps objects are untouched; so does a cluster that runs both the
  Helm chart and the managed extension;
* uninstall.yml detects the Helm install and prints what it would destroy, backs up (MultiKueue objects and their
  kubeconfig Secret included), pauses GitOps, uninstalls (namespace, CRDs and every Kueue object gone) and
  reports the queued and running Jobs; Jobs created while Kueue is absent stay suspended; a second run finds
  nothing to uninstall;
* restore.yml on a tampered copy of the backup fails naming the file before anything is applied;
* restore.yml with a reinstall brings back every object (the Secret too) with the spec it had, Kueue admits the
  surviving Jobs, none before the last queue object is restored, and GitOps is back as it was. The Secret's
  data never appears in ansible's output.

Everything created here (Jobs, namespaces, GitOps CRDs, Kueue) is removed at the end.
"""
from __future__ import annotations

import copy
import os
import shutil
import subprocess
import tempfile
import time

import pytest
import yaml
from kubernetes import client

from ..prerequisites import require
from .ansible import REPO, run_playbook
from .kubeutil import (EventRecorder, admitted, condition, create_multikueue, helm_revision, kueue_crds, kueue_plurals,
                       live_normalised, queued_job, resource_versions, wait_for, workloads)

GROUP = "kueue.x-k8s.io"
V2 = GROUP + "/v1beta2"
SITE = os.path.join(REPO, "playbooks", "site.yml")
UNINSTALL = os.path.join(REPO, "playbooks", "uninstall.yml")
RESTORE = os.path.join(REPO, "playbooks", "restore.yml")
# The confirmation uninstall.yml and restore.yml with a reinstall require without a terminal (issue 40).
CONFIRM = {"kueue_confirm_hosts": "local"}
QUEUES_VARS = os.path.join(REPO, "playbooks", "vars", "queues.yml")
QUEUES = ["-e", "@" + QUEUES_VARS]
CONFIG = yaml.safe_load(open(QUEUES_VARS))["kueue_resources"]
TEAMS = sorted({o["metadata"]["namespace"] for o in CONFIG if o["kind"] == "LocalQueue"})
PLURALS = kueue_plurals()  # every kind of a configuration
GITOPS_NS = "ur-gitops"
CRDS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "files", "gitops_crds.yml")
GITOPS = [
    {"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization", "plural": "kustomizations",
     "metadata": {"name": "ur-kueue-queues", "namespace": GITOPS_NS},
     "spec": {"interval": "10m", "path": "./clusters/prod/kueue", "prune": True,
              "sourceRef": {"kind": "GitRepository", "name": "fleet"}}},
    {"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease", "plural": "helmreleases",
     "metadata": {"name": "ur-kueue", "namespace": GITOPS_NS},
     "spec": {"interval": "10m", "suspend": False, "releaseName": "kueue", "targetNamespace": "kueue-system",
              "chart": {"spec": {"chart": "kueue", "version": "0.19.2",
                                 "sourceRef": {"kind": "HelmRepository", "name": "kueue"}}}}},
    {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "plural": "applications",
     "metadata": {"name": "ur-kueue-config", "namespace": GITOPS_NS},
     "spec": {"project": "default",
              "source": {"repoURL": "https://git.example.com/fleet.git", "path": "kueue", "targetRevision": "main"},
              "destination": {"server": "https://kubernetes.default.svc", "namespace": "kueue-system"},
              "syncPolicy": {"automated": {"prune": True, "selfHeal": True},
                             "syncOptions": ["ServerSideApply=true"]}}},
]
PAUSE = [{"apiVersion": g["apiVersion"], "kind": g["kind"], "name": g["metadata"]["name"],
          "namespace": GITOPS_NS} for g in GITOPS]


# ------------------------------------------------------------------ helpers
def job_suspended(kube, namespace, name):
    return bool(client.BatchV1Api(kube).read_namespaced_job(name, namespace).spec.suspend)


def namespace_exists(kube, name):
    try:
        client.CoreV1Api(kube).read_namespace(name)
        return True
    except client.exceptions.ApiException as exc:
        if exc.status == 404:
            return False
        raise


def gitops_specs(kube):
    custom = client.CustomObjectsApi(kube)
    out = {}
    for g in GITOPS:
        group, version = g["apiVersion"].split("/")
        out[g["kind"]] = custom.get_namespaced_custom_object(group, version, GITOPS_NS, g["plural"],
                                                             g["metadata"]["name"])["spec"]
    return out


def original_gitops_specs():
    return dict((g["kind"], copy.deepcopy(g["spec"])) for g in GITOPS)


def manager_ready(kube):
    try:
        dep = client.AppsV1Api(kube).read_namespaced_deployment("kueue-controller-manager", "kueue-system")
    except client.exceptions.ApiException as exc:
        if exc.status == 404:
            return False
        raise
    return (dep.status.available_replicas or 0) >= 1


# More LocalQueues in team-nlp, sorted after "nlp": restored after the queue that the queued Job ur-nlp waits
# in. Without hold_admission, Kueue admits ur-nlp as soon as LocalQueue team-nlp/nlp exists, while these are
# still being applied; that is what makes the admission-order check able to fail (see below).
EXTRA_QUEUES = ["ur-extra-%03d" % i for i in range(120)]


def _add_multikueue_and_extra_queues(kube):
    """A MultiKueue setup whose worker kubeconfig (with a random token) is in a Secret, and EXTRA_QUEUES.
    Returns the token, which must never appear in ansible's output."""
    custom = client.CustomObjectsApi(kube)
    token, _objects = create_multikueue(kube, "ur-worker", "ur-workers", "ur-dispatch", "ur-token-")
    for name in EXTRA_QUEUES:
        custom.create_namespaced_custom_object(GROUP, "v1beta2", "team-nlp", "localqueues", {
            "apiVersion": V2, "kind": "LocalQueue", "metadata": {"name": name, "namespace": "team-nlp"},
            "spec": {"clusterQueue": "team-nlp"}})
    return token


def _assert_no_admission_before_the_last_queue(recorder, restored):
    """No Workload reserved quota (or was admitted) before every queue object of the backup was restored.

    Events are ordered by resourceVersion, etcd's global revision on this single-etcd cluster, so the order of
    writes to different objects is exact (wall-clock receipt times are printed for the record). A queue object is
    restored at its first watch event: its creation, with its whole spec (hold_admission creates ClusterQueues
    with stopPolicy Hold, the only field that differs). Both watches started before restore.yml applied any queue
    (checked). The release of the held ClusterQueues is one write per ClusterQueue, not atomic: a Job of the
    first ClusterQueue released may be admitted before the last release is written (measured once: ur-nlp at
    resourceVersion 5972, ClusterQueue team-vision released at 5987), but never before every queue exists, and
    never before the first release (printed).

    This test can fail. Run by hand with KUEUEOPS_DEMO_NO_HOLD=1 (restore.yml with -e kueue_hold_admission=false):
    LocalQueue team-nlp/nlp is created in the first batch of LocalQueues and Kueue admits ur-nlp while the 120
    EXTRA_QUEUES are still being applied, and the assertion below fails. Measured once that way: ur-nlp reserved
    quota at resourceVersion 4133, 0.353 s before the last LocalQueue (team-vision/vision, resourceVersion 4247)
    was created. (With 24 extra queues instead of 120 the burst of LocalQueues was shorter than Kueue's reaction,
    about 30 ms, and the check could not fail.) With hold_admission: the last ClusterQueue released at
    resourceVersion 1604, the first admission at 1611, 40 ms later."""
    assert not recorder.initial.get("clusterqueues") and not recorder.initial.get("localqueues"), \
        "the watches started after the restore had applied queues; the order cannot be checked"
    queue_keys = {k for k in restored if k[0] in ("ClusterQueue", "LocalQueue")}
    restored_at = {}
    for plural, kind in (("clusterqueues", "ClusterQueue"), ("localqueues", "LocalQueue")):
        for rv, when, _type, obj in sorted(recorder.events[plural], key=lambda e: e[0]):
            meta = obj["metadata"]
            key = (kind, meta.get("namespace", ""), meta["name"])
            if key in restored_at or key not in queue_keys:
                continue
            restored_at[key] = (rv, when)
    assert set(restored_at) == queue_keys, sorted(queue_keys - set(restored_at))
    released = [rv for rv, _when, _type, obj in recorder.events["clusterqueues"]
                if (obj.get("spec") or {}).get("stopPolicy") not in ("Hold", "HoldAndDrain")]
    last_key = max(restored_at, key=lambda k: restored_at[k][0])
    last_rv, last_time = restored_at[last_key]
    admissions = {}
    for rv, when, _type, obj in sorted(recorder.events["workloads"], key=lambda e: e[0]):
        name = "%s/%s" % (obj["metadata"]["namespace"], obj["metadata"]["name"])
        if name not in admissions and (condition(obj, "QuotaReserved") == "True" or condition(obj, "Admitted") == "True"):
            admissions[name] = (rv, when)
    assert any("job-ur-nlp-" in n for n in admissions) and any("job-ur-vision-" in n for n in admissions), admissions
    print("last queue restored: %s at resourceVersion %d; first ClusterQueue release at %s; admissions: %s" % (
        last_key, last_rv, min(released) if released else None, ", ".join("%s rv %d (%+.3f s)" % (n, rv, when - last_time)
                                                                          for n, (rv, when) in sorted(admissions.items(), key=lambda i: i[1][0]))))
    early = sorted((rv, n) for n, (rv, _when) in admissions.items() if rv < last_rv)
    assert not early, "admitted before %s was restored (resourceVersion %d): %s" % (
        " ".join(map(str, last_key)), last_rv, early)


# ----------------------------------------------------------------- fixtures
def _install_gitops(kube):
    ext = client.ApiextensionsV1Api(kube)
    for crd in yaml.safe_load_all(open(CRDS_FILE)):
        try:
            ext.create_custom_resource_definition(crd)
        except client.exceptions.ApiException as exc:
            if exc.status != 409:
                raise

    def established():
        names = {c.metadata.name: c for c in ext.list_custom_resource_definition().items}
        for crd in yaml.safe_load_all(open(CRDS_FILE)):
            got = names.get(crd["metadata"]["name"])
            if not got or not any(c.type == "Established" and c.status == "True"
                                  for c in (got.status.conditions or [])):
                return False
        return True

    wait_for("the GitOps CRDs to be established", established, timeout=60)
    core = client.CoreV1Api(kube)
    if not namespace_exists(kube, GITOPS_NS):
        core.create_namespace({"metadata": {"name": GITOPS_NS}})
    custom = client.CustomObjectsApi(kube)
    for g in GITOPS:
        group, version = g["apiVersion"].split("/")
        body = dict((k, copy.deepcopy(v)) for k, v in g.items() if k != "plural")
        wait_for("%s to be created" % g["kind"], lambda: custom.create_namespaced_custom_object(
            group, version, GITOPS_NS, g["plural"], body), timeout=30)


def _cleanup(kube):
    """Remove everything this module created, and Kueue."""
    res = run_playbook([{"name": "Cleanup", "hosts": "local", "gather_facts": False, "tasks": [
        {"name": "Uninstall", "kueueops.aks.kueue_helm": {"state": "absent", "delete_namespace": True,
                                                          "kubeconfig": "{{ kueue_kubeconfig }}"}}]}])
    core = client.CoreV1Api(kube)
    for ns in TEAMS + [GITOPS_NS]:
        try:
            core.delete_namespace(ns)
        except client.exceptions.ApiException as exc:
            if exc.status != 404:
                raise
    ext = client.ApiextensionsV1Api(kube)
    for crd in yaml.safe_load_all(open(CRDS_FILE)):
        try:
            ext.delete_custom_resource_definition(crd["metadata"]["name"])
        except client.exceptions.ApiException as exc:
            if exc.status != 404:
                raise
    wait_for("the test namespaces to be gone",
             lambda: not [n for n in TEAMS + [GITOPS_NS] if namespace_exists(kube, n)], timeout=180)
    assert res.rc == 0, res.stdout[-3000:]


@pytest.fixture(scope="module")
def installed(cluster, kube):
    """Kueue installed by site.yml with the example configuration, GitOps CRDs and objects."""
    work = tempfile.mkdtemp(prefix="ur-")
    try:
        site = run_playbook(SITE, extra_args=QUEUES)
        assert site.rc == 0, site.stdout[-4000:]
        _install_gitops(kube)
        yield {"kube": kube, "work": work}
    finally:
        _cleanup(kube)
        shutil.rmtree(work, ignore_errors=True)


# -------------------------------------------------------------------- tests
def test_unwritable_backup_stops_the_uninstall_before_anything_changes(installed):
    kube, work = installed["kube"], installed["work"]
    before = live_normalised(kube, PLURALS)
    assert {(k[0], k[2]) for k in before} == {(o["kind"], o["metadata"]["name"]) for o in CONFIG}
    crds = kueue_crds(kube)
    assert crds
    not_a_folder = os.path.join(work, "a-file")
    with open(not_a_folder, "w") as handle:
        handle.write("not a folder\n")

    res = run_playbook(UNINSTALL, extravars={**CONFIRM, "kueue_backup_dir": not_a_folder, "kueue_gitops_pause": PAUSE})
    assert res.rc != 0
    names = [name for name, _res in res.tasks()]
    assert res.result("Back up every Kueue configuration object").get("failed"), names
    assert not any(n.startswith(("Pause GitOps", "Uninstall Kueue")) for n in names), names
    # Untouched: Kueue runs, its CRDs and objects are as they were, GitOps still reconciles.
    assert manager_ready(kube)
    assert kueue_crds(kube) == crds
    assert live_normalised(kube, PLURALS) == before
    assert gitops_specs(kube) == original_gitops_specs()
    assert open(not_a_folder).read() == "not a folder\n"

    # No backup folder: refused before anything (there is no option to skip the backup).
    res = run_playbook(UNINSTALL, extravars=CONFIRM)
    assert res.rc != 0
    assert "kueue_backup_dir" in " ".join(res.failure_messages())
    assert manager_ready(kube) and live_normalised(kube, PLURALS) == before

    verify = run_playbook([{"name": "Verify", "hosts": "local", "gather_facts": False, "tasks": [
        {"name": "Verify Kueue", "kueueops.aks.kueue_verify": {"kubeconfig": "{{ kueue_kubeconfig }}"}}]}])
    assert verify.rc == 0, verify.stdout[-3000:]


def untouched_state(kube):
    """What must not change when the role stops early: every Kueue object's resourceVersion (any write, status
    included, changes it), the Helm release revision, the CRDs, the GitOps objects."""
    return {"rv": resource_versions(kube, PLURALS), "helm": helm_revision(kube), "crds": kueue_crds(kube),
            "gitops": gitops_specs(kube), "manager": manager_ready(kube)}


def _mount_tmpfs(target, options):
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", target], capture_output=True, text=True)
    require(proc.returncode == 0, "cannot mount a tmpfs here (root and CAP_SYS_ADMIN needed): %s" % proc.stderr.strip())


def _assert_stopped_at_backup(res):
    assert res.rc != 0
    names = [name for name, _res in res.tasks()]
    assert res.result("Detect the install method")["install_method"] == "helm"
    assert res.result("Back up every Kueue configuration object").get("failed"), names
    assert not any(n.startswith(("Pause GitOps", "Uninstall Kueue")) for n in names), names


def test_backup_on_a_read_only_or_full_tmpfs_stops_the_role_with_the_cluster_untouched(installed):
    kube, work = installed["kube"], installed["work"]
    before = untouched_state(kube)
    assert before["helm"] == (1, "deployed") and before["manager"]
    ro, full = os.path.join(work, "ro"), os.path.join(work, "full")
    os.mkdir(ro)
    os.mkdir(full)
    _mount_tmpfs(ro, "ro,size=1m")
    try:
        _mount_tmpfs(full, "size=12k")
        try:
            with open(os.path.join(full, "filler"), "wb") as handle:
                try:
                    handle.write(b"x" * 10 * 1024)  # leaves less than one page for the backup's files
                except OSError:
                    pass
            for dest, text in ((ro, "Read-only file system"), (full, "No space left on device")):
                res = run_playbook(UNINSTALL, extravars={**CONFIRM, "kueue_backup_dir": dest, "kueue_gitops_pause": PAUSE})
                _assert_stopped_at_backup(res)
                msg = res.result("Back up every Kueue configuration object")["msg"]
                assert msg.startswith("dest: cannot write the backup under %s: %s" % (dest, text)), msg
                assert "Traceback" not in res.stdout
            assert os.listdir(ro) == [] and os.listdir(full) == ["filler"]
        finally:
            subprocess.run(["umount", full], check=True)
    finally:
        subprocess.run(["umount", ro], check=True)
    assert untouched_state(kube) == before


def test_helm_and_managed_extension_both_present_is_refused_before_anything(installed):
    kube = installed["kube"]
    apps = client.AppsV1Api(kube)
    # What the managed extension runs next to Kueue; no Pod is ever started (0 replicas).
    apps.create_namespaced_deployment("kueue-system", {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "kueue-extension"},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "ur-fake-extension"}},
                 "template": {"metadata": {"labels": {"app": "ur-fake-extension"}},
                              "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}}})
    try:
        before = untouched_state(kube)
        dest = os.path.join(installed["work"], "both")
        res = run_playbook(UNINSTALL, extravars={**CONFIRM, "kueue_backup_dir": dest, "kueue_gitops_pause": PAUSE})
        assert res.rc != 0
        assert res.result("Detect the install method")["install_method"] == "both"
        msg = res.result("Refuse a cluster running both")["msg"]
        assert "installed both with Helm (release kueue in kueue-system) and as the AKS managed extension" in msg
        assert "Nothing was changed." in msg
        names = [name for name, _res in res.tasks()]
        assert not any(n.startswith(("Back up", "Pause GitOps", "Uninstall Kueue")) for n in names), names
        assert not os.path.exists(dest)
        assert untouched_state(kube) == before
    finally:
        apps.delete_namespaced_deployment("kueue-extension", "kueue-system")


def test_uninstall_then_restore_round_trip(installed):
    kube, work = installed["kube"], installed["work"]
    batch = client.BatchV1Api(kube)
    # A Job Kueue admits (running when Kueue goes), and one it cannot admit (no such LocalQueue: queued).
    batch.create_namespaced_job("team-vision", queued_job("ur-running", "vision"))
    batch.create_namespaced_job("team-nlp", queued_job("ur-queued", "no-such-queue"))
    wait_for("ur-running to be admitted and started", lambda: not job_suspended(kube, "team-vision", "ur-running"),
             timeout=120)
    token = _add_multikueue_and_extra_queues(kube)
    before = live_normalised(kube, PLURALS)
    secret_before = client.CoreV1Api(kube).read_namespaced_secret("ur-worker", "kueue-system").data
    dest = os.path.join(work, "backups")
    outputs = []

    # ---- without include_secrets, the role refuses to lose the MultiKueue Secret
    res = run_playbook(UNINSTALL, extravars={**CONFIRM, "kueue_backup_dir": dest, "kueue_gitops_pause": PAUSE})
    assert res.rc != 0
    assert "ur-worker" in res.result("Refuse to lose the Secrets")["msg"]
    assert not os.path.exists(dest) and manager_ready(kube)

    # ---- check mode (issue 40): asks nothing (no kueue_confirm_hosts, no terminal), prints what would be deleted and
    # the Workloads that would lose their queue, and changes nothing
    res = run_playbook(UNINSTALL, check=True, extravars={"kueue_backup_dir": dest, "kueue_gitops_pause": PAUSE,
                                                         "kueue_backup_include_secrets": True})
    assert res.rc == 0, res.stdout[-5000:]
    printed = "\n".join(res.result("Print the install method")["msg"])
    counted = res.result("Detect the install method")
    assert "would be deleted with the CRDs: %d objects" % counted["objects"] in printed, printed
    assert "Workloads that would lose their queue (LocalQueue: pending/admitted):" in printed, printed
    assert "team-vision/vision: 0/1" in printed, printed
    assert counted["cluster"]["uid"] == client.CoreV1Api(kube).read_namespace("kube-system").metadata.uid
    assert not os.path.exists(dest) and manager_ready(kube) and live_normalised(kube, PLURALS) == before
    assert gitops_specs(kube) == original_gitops_specs()

    # ---- uninstall
    res = run_playbook(UNINSTALL, extravars={**CONFIRM, "kueue_backup_dir": dest, "kueue_gitops_pause": PAUSE,
                                             "kueue_backup_include_secrets": True}, verbosity=3)
    outputs.append(res.stdout + res.stderr)
    assert res.rc == 0, res.stdout[-5000:]
    info = res.result("Detect the install method")
    assert info["install_method"] == "helm" and info["extension"] is False
    assert info["helm_release"]["name"] == "kueue" and info["helm_release"]["status"] == "deployed"
    assert info["counts"]["LocalQueue"] == 2 + len(EXTRA_QUEUES) and info["counts"]["MultiKueueCluster"] == 1
    assert info["multikueue_secrets"] == [{"namespace": "kueue-system", "name": "ur-worker", "clusters": ["ur-worker"],
                                           "exists": True}]
    assert "localqueues.kueue.x-k8s.io" in info["crds"]
    printed = "\n".join(res.result("Print the install method")["msg"])
    assert "install method: helm" in printed and "namespace kueue-system" in printed
    backup = res.result("Back up every Kueue configuration object")
    path = backup["backup_path"]
    assert backup["verified"] is True and os.path.dirname(path) == dest
    assert backup["counts"]["ClusterQueue"] == 2 and backup["counts"]["LocalQueue"] == 2 + len(EXTRA_QUEUES)
    assert backup["counts"]["Secret"] == 1 and backup["counts"]["MultiKueueConfig"] == 1
    assert os.path.isfile(os.path.join(path, "gitops.json"))
    assert not [n for n in os.listdir(path) if not n.endswith((".yaml", ".json"))]
    assert not namespace_exists(kube, "kueue-system")
    assert kueue_crds(kube) == []
    jobs = res.result("List the Jobs with a queue label")
    assert {"name": "ur-queued", "queue": "no-such-queue"} in jobs["namespaces"]["team-nlp"]["suspended"]
    assert {"name": "ur-running", "queue": "vision"} in jobs["namespaces"]["team-vision"]["running"]
    report = "\n".join(res.result("Report the uninstall")["msg"])
    assert "ur-queued" in report and path in report

    paused = gitops_specs(kube)
    assert paused["Kustomization"]["suspend"] is True
    assert paused["HelmRelease"]["suspend"] is True
    assert "automated" not in paused["Application"]["syncPolicy"]
    assert paused["Application"]["syncPolicy"]["syncOptions"] == ["ServerSideApply=true"]

    # Jobs submitted while Kueue is absent stay suspended.
    batch.create_namespaced_job("team-vision", queued_job("ur-vision", "vision"))
    batch.create_namespaced_job("team-nlp", queued_job("ur-nlp", "nlp"))
    time.sleep(3)
    assert job_suspended(kube, "team-vision", "ur-vision") and job_suspended(kube, "team-nlp", "ur-nlp")
    assert job_suspended(kube, "team-nlp", "ur-queued")

    # ---- a second uninstall finds nothing to uninstall, and changes nothing
    again = run_playbook(UNINSTALL, extravars={**CONFIRM, "kueue_backup_dir": dest})
    assert again.rc == 0, again.stdout[-3000:]
    assert again.result("Detect the install method")["install_method"] == "none"
    assert "nothing to uninstall" in again.result("Nothing to uninstall")["msg"]
    assert sorted(os.listdir(dest)) == [os.path.basename(path)]

    # ---- a tampered copy fails the restore, naming the file, before anything is applied
    tampered = os.path.join(work, "tampered")
    shutil.copytree(path, tampered)
    with open(os.path.join(tampered, "60-clusterqueues.yaml"), "a") as handle:
        handle.write("# edited\n")
    res = run_playbook(RESTORE, extravars={**CONFIRM, "kueue_backup_path": tampered, "kueue_restore_reinstall": True})
    assert res.rc != 0
    failure = res.result("Check the checksums")
    assert failure.get("failed") and "60-clusterqueues.yaml" in failure["msg"], failure
    assert failure["files_at_fault"] == ["60-clusterqueues.yaml"]
    assert not namespace_exists(kube, "kueue-system") and kueue_crds(kube) == []
    assert gitops_specs(kube) == paused

    # ---- restore with a reinstall, recording when queues were restored and when Workloads were admitted
    extra = {**CONFIRM, "kueue_backup_path": path, "kueue_restore_reinstall": True}
    if os.environ.get("KUEUEOPS_DEMO_NO_HOLD"):  # by hand only: shows this test can fail (see the docstring)
        extra["kueue_hold_admission"] = False
    recorder = EventRecorder(kube, ["workloads", "clusterqueues", "localqueues"]).start()
    try:
        res = run_playbook(RESTORE, extravars=extra, verbosity=3, diff=True)
        outputs.append(res.stdout + res.stderr)
        assert res.rc == 0, res.stdout[-5000:]
        for ns, name in (("team-vision", "ur-vision"), ("team-nlp", "ur-nlp")):
            wait_for("%s/%s to be admitted" % (ns, name), lambda: not job_suspended(kube, ns, name)
                     and any(admitted(w) and w["metadata"]["name"].startswith("job-%s-" % name)
                             for w in workloads(kube, ns)), timeout=180)
    finally:
        recorder.stop()
    _assert_no_admission_before_the_last_queue(recorder, before)
    assert res.result("Apply the Kueue queue configuration").get("not_active", []) == []
    assert res.result("Verify Kueue after the restore")["failed_checks"] == []
    assert live_normalised(kube, PLURALS) == before
    assert client.CoreV1Api(kube).read_namespaced_secret("ur-worker", "kueue-system").data == secret_before
    for text in outputs:
        assert token not in text and secret_before["kubeconfig"] not in text
    assert job_suspended(kube, "team-nlp", "ur-queued")
    assert gitops_specs(kube) == original_gitops_specs()
    assert [o["changed"] for o in res.result("Resume GitOps")["objects"]] == [True, True, True]

    # Resuming again changes nothing.
    again = run_playbook([{"name": "Resume", "hosts": "local", "gather_facts": False, "tasks": [
        {"name": "Resume GitOps", "kueueops.aks.kueue_gitops": {
            "state": "resumed", "state_file": os.path.join(path, "gitops.json"),
            "kubeconfig": "{{ kueue_kubeconfig }}"}}]}])
    assert again.rc == 0 and again.changed == 0, again
