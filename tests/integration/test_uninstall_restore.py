"""playbooks/uninstall.yml and playbooks/restore.yml end to end (issue 5, Helm path), through real
ansible-playbook against the real local control plane running the real Kueue.

site.yml installs Kueue with the example configuration of playbooks/vars/queues.yml. Flux and Argo CD
CRDs (no controllers) carry three GitOps objects in namespace ur-gitops. Then:

* a backup that cannot be written (kueue_backup_dir is a regular file) stops the uninstall before anything
  is changed: Kueue, its objects and the GitOps objects are untouched;
* uninstall.yml backs up, pauses GitOps, uninstalls (namespace, CRDs and every Kueue object gone) and reports
  the queued and running Jobs; Jobs created while Kueue is absent stay suspended;
* restore.yml on a tampered copy of the backup fails naming the file before anything is applied;
* restore.yml with a reinstall brings back every object with the spec it had, Kueue admits the surviving Jobs,
  and GitOps is back as it was.

Everything created here (Jobs, namespaces, GitOps CRDs, Kueue) is removed at the end.
"""
from __future__ import annotations

import copy
import os
import shutil
import sys
import tempfile
import time

import pytest
import yaml
from kubernetes import client

from .ansible import REPO, run_playbook
from .kubeutil import admitted, live_normalised, queued_job, wait_for, workloads

if os.path.join(REPO, ".venv", "collections") not in sys.path:
    sys.path.insert(0, os.path.join(REPO, ".venv", "collections"))
from ansible_collections.kueueops.aks.plugins.module_utils import backup as b  # noqa: E402

GROUP = "kueue.x-k8s.io"
V2 = GROUP + "/v1beta2"
SITE = os.path.join(REPO, "playbooks", "site.yml")
UNINSTALL = os.path.join(REPO, "playbooks", "uninstall.yml")
RESTORE = os.path.join(REPO, "playbooks", "restore.yml")
QUEUES_VARS = os.path.join(REPO, "playbooks", "vars", "queues.yml")
QUEUES = ["-e", "@" + QUEUES_VARS]
CONFIG = yaml.safe_load(open(QUEUES_VARS))["kueue_resources"]
TEAMS = sorted({o["metadata"]["namespace"] for o in CONFIG if o["kind"] == "LocalQueue"})
PLURALS = dict((k, p) for k, p, _n, _ns in b.KINDS if k != "Secret")
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


def kueue_crds(kube):
    return sorted(c.metadata.name for c in client.ApiextensionsV1Api(kube).list_custom_resource_definition().items
                  if c.spec.group == GROUP)


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

    res = run_playbook(UNINSTALL, extravars={"kueue_backup_dir": not_a_folder, "kueue_gitops_pause": PAUSE})
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
    res = run_playbook(UNINSTALL)
    assert res.rc != 0
    assert "kueue_backup_dir" in " ".join(res.failure_messages())
    assert manager_ready(kube) and live_normalised(kube, PLURALS) == before

    verify = run_playbook([{"name": "Verify", "hosts": "local", "gather_facts": False, "tasks": [
        {"name": "Verify Kueue", "kueueops.aks.kueue_verify": {"kubeconfig": "{{ kueue_kubeconfig }}"}}]}])
    assert verify.rc == 0, verify.stdout[-3000:]


def test_uninstall_then_restore_round_trip(installed):
    kube, work = installed["kube"], installed["work"]
    batch = client.BatchV1Api(kube)
    # A Job Kueue admits (running when Kueue goes), and one it cannot admit (no such LocalQueue: queued).
    batch.create_namespaced_job("team-vision", queued_job("ur-running", "vision"))
    batch.create_namespaced_job("team-nlp", queued_job("ur-queued", "no-such-queue"))
    wait_for("ur-running to be admitted and started", lambda: not job_suspended(kube, "team-vision", "ur-running"),
             timeout=120)
    before = live_normalised(kube, PLURALS)
    dest = os.path.join(work, "backups")

    # ---- uninstall
    res = run_playbook(UNINSTALL, extravars={"kueue_backup_dir": dest, "kueue_gitops_pause": PAUSE})
    assert res.rc == 0, res.stdout[-5000:]
    backup = res.result("Back up every Kueue configuration object")
    path = backup["backup_path"]
    assert backup["verified"] is True and os.path.dirname(path) == dest
    assert backup["counts"]["ClusterQueue"] == 2 and backup["counts"]["LocalQueue"] == 2
    assert os.path.isfile(os.path.join(path, "gitops.json"))
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

    # ---- a tampered copy fails the restore, naming the file, before anything is applied
    tampered = os.path.join(work, "tampered")
    shutil.copytree(path, tampered)
    with open(os.path.join(tampered, "60-clusterqueues.yaml"), "a") as handle:
        handle.write("# edited\n")
    res = run_playbook(RESTORE, extravars={"kueue_backup_path": tampered, "kueue_restore_reinstall": True})
    assert res.rc != 0
    failure = res.result("Check the checksums")
    assert failure.get("failed") and "60-clusterqueues.yaml" in failure["msg"], failure
    assert failure["files_at_fault"] == ["60-clusterqueues.yaml"]
    assert not namespace_exists(kube, "kueue-system") and kueue_crds(kube) == []
    assert gitops_specs(kube) == paused

    # ---- restore with a reinstall
    res = run_playbook(RESTORE, extravars={"kueue_backup_path": path, "kueue_restore_reinstall": True})
    assert res.rc == 0, res.stdout[-5000:]
    assert res.result("Apply the Kueue queue configuration").get("not_active", []) == []
    assert res.result("Verify Kueue after the restore")["failed_checks"] == []
    assert live_normalised(kube, PLURALS) == before
    for ns, name in (("team-vision", "ur-vision"), ("team-nlp", "ur-nlp")):
        wait_for("%s/%s to be admitted" % (ns, name), lambda: not job_suspended(kube, ns, name)
                 and any(admitted(w) and w["metadata"]["name"].startswith("job-%s-" % name)
                         for w in workloads(kube, ns)), timeout=180)
    assert job_suspended(kube, "team-nlp", "ur-queued")
    assert gitops_specs(kube) == original_gitops_specs()
    assert [o["changed"] for o in res.result("Resume GitOps")["objects"]] == [True, True, True]

    # Resuming again changes nothing.
    again = run_playbook([{"name": "Resume", "hosts": "local", "gather_facts": False, "tasks": [
        {"name": "Resume GitOps", "kueueops.aks.kueue_gitops": {
            "state": "resumed", "state_file": os.path.join(path, "gitops.json"),
            "kubeconfig": "{{ kueue_kubeconfig }}"}}]}])
    assert again.rc == 0 and again.changed == 0, again
