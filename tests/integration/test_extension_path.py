"""The AKS managed extension path of the kueue role and the playbooks (issues 5 and 6), end to end: real
ansible-playbook, the real Azure SDK over HTTPS against the ARM emulator (tests/emulators/arm), which installs
the real Kueue into the real local control plane and wipes every Kueue object on delete, as AKS does.

The inventories are written per test and carry no kubeconfig (and K8S_AUTH_KUBECONFIG / KUBECONFIG are empty):
every Kubernetes task reaches the cluster with the credentials the role fetches from ARM.

* site.yml with kueue_install_method=extension: preflight, create, credentials, verify (kueue-controller-manager
  and kueue-extension ready, Succeeded), the example queues plus a queue on the extension's aks-cpu flavor, the
  smoke test admits a Job on each; no secret (client secret, fetched kubeconfig) in a -vvv run; second run
  changed=0 with no ARM write; credentials written to a 0600 file with kueue_aks_kubeconfig_dest;
* each path's options are refused on the other before anything is sent (ARM request log, Helm storage);
* uninstall.yml backs up (aks-* left out), deletes the extension (every Kueue object gone, queued Jobs stay
  suspended); restore.yml reinstalls the extension and restores: every object as it was, Jobs admitted;
* upgrade.yml on the extension (playbooks/inventory/local-extension.yml): the extension pinned at 0.18.4-aks.0.4.4
  (AKS's version form) with queues and Workloads; targets the release train does not offer and a downgrade refused
  before any ARM write; check mode prints the plan and writes nothing; the run pins 0.19.2-aks.0.4.4 with
  auto_upgrade_mode none, verifies, matches the backup, keeps every Workload by uid; a re-run changes nothing;
* migrate.yml: refused when the target's preflight fails (AKS Automatic), when the release train does not offer the
  Helm release's Kueue, or when the cluster is already on the target;
  Helm 0.18.4 -> the extension pinned at 0.18.4-aks.0.4.4 (the release kept, not the train's newest) with the queues
  intact; extension -> Helm, the chart 0.18.4, with the aks-* objects carried over.
"""
from __future__ import annotations

import base64
import glob
import os
import re
import time

import pytest
import yaml
from kubernetes import client

from .ansible import REPO, aks_inventory as inventory, run_playbook
from .kubeutil import (helm, helm_records, kueue_crds, kueue_plurals, live_normalised, queued_job, reset_kueue, wait_for,
                       workloads)

SITE = os.path.join(REPO, "playbooks", "site.yml")
UNINSTALL = os.path.join(REPO, "playbooks", "uninstall.yml")
RESTORE = os.path.join(REPO, "playbooks", "restore.yml")
MIGRATE = os.path.join(REPO, "playbooks", "migrate.yml")
CONFIGURE = os.path.join(REPO, "playbooks", "configure_queues.yml")
UPGRADE = os.path.join(REPO, "playbooks", "upgrade.yml")
EXTENSION_INVENTORY = os.path.join(REPO, "playbooks", "inventory", "local-extension.yml")
QUEUES_VARS = os.path.join(REPO, "playbooks", "vars", "queues.yml")
CONFIG = yaml.safe_load(open(QUEUES_VARS))["kueue_resources"]
# A queue on the flavor the extension owns: queue configuration may reference aks- objects.
AKS_QUEUE = [
    {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "ep-aks"},
     "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [
         {"name": "aks-cpu", "resources": [{"name": "cpu", "nominalQuota": 4}, {"name": "memory", "nominalQuota": "8Gi"}]}]}]}},
    {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "aks", "namespace": "team-nlp"},
     "spec": {"clusterQueue": "ep-aks"}},
]
SMOKE = ["team-vision/vision", "team-nlp/nlp", "team-nlp/aks"]
TEAMS = ["team-vision", "team-nlp"]
PLURALS = kueue_plurals()  # every kind of a configuration
AKS_OWNED = {("ResourceFlavor", "aks-cpu"), ("WorkloadPriorityClass", "aks-low-priority"),
             ("WorkloadPriorityClass", "aks-medium-priority"), ("WorkloadPriorityClass", "aks-high-priority")}
NO_KUBE = {"K8S_AUTH_KUBECONFIG": "", "KUBECONFIG": ""}


# ------------------------------------------------------------------ helpers
# The confirmation uninstall.yml, migrate.yml and restore.yml with a reinstall require without a terminal (issue 40):
# every inventory of this file has the one host "local".
CONFIRM = {"kueue_confirm_hosts": "local"}


def run(playbook, inv, extravars=None, **kw):
    if playbook in (UNINSTALL, MIGRATE) or (extravars or {}).get("kueue_restore_reinstall"):
        extravars = dict(CONFIRM, **(extravars or {}))
    return run_playbook(playbook, extravars=extravars, inventory=inv, env=NO_KUBE, **kw)


def split(objects):
    """(objects the extension does not own, keys of the aks- ones)."""
    mine = dict((k, v) for k, v in objects.items() if not k[2].startswith("aks-"))
    return mine, {(k[0], k[2]) for k in objects if k[2].startswith("aks-")}


def deployment_ready(kube, name, namespace="kueue-system"):
    try:
        return (client.AppsV1Api(kube).read_namespaced_deployment(name, namespace).status.available_replicas or 0) >= 1
    except client.exceptions.ApiException as exc:
        if exc.status == 404:
            return None
        raise


def suspended(kube, namespace, name):
    return bool(client.BatchV1Api(kube).read_namespaced_job(name, namespace).spec.suspend)


def fetched_key(arm):
    """The private key of the last kubeconfig the emulator issued (PEM, and base64 as the kubeconfig holds it)."""
    paths = glob.glob(os.path.join(os.path.dirname(arm.ca_path), "..", "users", "clusterUser_*.key"))
    assert paths, "no issued user credentials"
    pem = open(paths[0], "rb").read()
    body = [line for line in pem.decode().splitlines() if line and not line.startswith("-----")]
    return base64.b64encode(pem).decode(), body[1]


def wait_no_workloads(kube):
    """The ARM emulator cannot delete the extension while Workloads hold Kueue's finalizer (its helm uninstall
    --wait times out; /tmp/ext-bugs.md): wait until finished smoke-test Jobs' Workloads are collected."""
    wait_for("no Workloads left", lambda: not client.CustomObjectsApi(kube).list_cluster_custom_object(
        "kueue.x-k8s.io", "v1beta2", "workloads")["items"], timeout=120)


def _reset(kube):
    reset_kueue(kube, TEAMS, timeout=240)


@pytest.fixture(scope="module")
def clean(cluster, kube, arm):
    _reset(kube)
    yield kube
    _reset(kube)


def site_on_extension(inv, **kw):
    return run(SITE, inv, {"kueue_resources": CONFIG + AKS_QUEUE, "kueue_smoke_test": True,
                           "kueue_create_namespaces": True, "kueue_smoke_test_queues": SMOKE}, **kw)


# -------------------------------------------------------------------- tests
def test_each_path_refuses_the_other_paths_options_before_anything_is_sent(clean, arm_control, tmp_path):
    kube = clean
    inv = inventory(tmp_path / "ext.yml", kueue_install_method="extension")
    res = run(SITE, inv, {"kueue_version": "0.18.4", "kueue_feature_gates": {"LocalQueueMetrics": True},
                          "kueue_helm_values": {"controllerManager": {"replicas": 2}}})
    assert res.rc != 0
    msg = res.result("Refuse the Helm-only options")["msg"]
    assert "kueue_install_method is extension, but kueue_version, kueue_feature_gates, kueue_helm_values apply " \
           "only to the Helm chart" in msg, msg
    assert "kueue_install_method: helm" in msg and "Nothing was changed." in msg
    assert not any("Preflight" in name for name, _ in res.tasks())
    assert arm_control.requests() == []  # not even a read

    helm_inv = os.path.join(REPO, "playbooks", "inventory", "local.yml")
    res = run_playbook(SITE, extravars={"kueue_aks_cluster_name": "aks-batch", "kueue_extension_version": "0.14.2"},
                       inventory=helm_inv)
    assert res.rc != 0
    msg = res.result("Refuse the managed extension and AKS options")["msg"]
    # kueue_aks_cluster_name may name the Helm install's AKS cluster for read-only lookups (issue 40); the extension's
    # own options are still refused, before anything is sent.
    assert "kueue_install_method is helm, but kueue_extension_version applies only to the AKS managed extension" \
        in msg, msg
    assert "kueue_install_method: extension" in msg
    assert arm_control.requests() == [] and helm_records(kube) == [] and not kueue_crds(kube)


def test_site_installs_verifies_configures_the_extension_without_leaking_secrets(clean, arm, arm_control, tmp_path):
    kube = clean
    inv = inventory(tmp_path / "ext.yml", kueue_install_method="extension")
    first = site_on_extension(inv, verbosity=3)
    assert first.rc == 0, first.stdout[-5000:]
    pre = first.result("Preflight - read the AKS cluster")
    assert pre["changed"] is False and pre["preflight"]["ran"] is True and pre["operation"] == "created"
    created = first.result("Create or update the AKS managed Kueue extension and wait for Succeeded - timeout in seconds 900")
    assert created["changed"] is True and created["operation"] == "created"
    assert created["extension"]["properties"]["provisioningState"] == "Succeeded"
    verify = first.result("Verify Kueue and the extension are running")
    assert verify["failed_checks"] == []
    assert deployment_ready(kube, "kueue-controller-manager") and deployment_ready(kube, "kueue-extension")
    assert [m for m, _p in arm_control.writes()] == ["PUT"]
    smoke = first.result("Smoke test")
    checks = {c["name"]: c["ok"] for c in smoke["checks"] if c["name"].startswith("smoke-test/")}
    assert checks == {"smoke-test/" + q: True for q in SMOKE}, smoke["checks"]
    mine, aks = split(live_normalised(kube, PLURALS))
    assert {(k[0], k[2]) for k in mine} == {(o["kind"], o["metadata"]["name"]) for o in CONFIG + AKS_QUEUE}
    assert aks == AKS_OWNED
    # No secret at -vvv: the client secret, the fetched kubeconfig's key (it was never printed).
    out = first.stdout + first.stderr
    key_b64, key_line = fetched_key(arm)
    assert os.environ["AZURE_SECRET"] not in out
    assert key_b64 not in out
    assert key_line not in out
    assert not re.search(r'client-key-data"?: *"?(?!VALUE_SPECIFIED_IN_NO_LOG_PARAMETER)[A-Za-z0-9+/]', out)

    arm_control.clear_requests()
    second = site_on_extension(inv)
    assert second.rc == 0 and second.changed == 0, second.stdout[-3000:]
    assert arm_control.writes() == []

    # Credentials to a 0600 file instead of a fact (configure_queues entry point, no kubeconfig given).
    dest = tmp_path / "aks.kubeconfig"
    res = run(CONFIGURE, inv, {"kueue_resources": CONFIG + AKS_QUEUE, "kueue_aks_kubeconfig_dest": str(dest)})
    assert res.rc == 0, res.stdout[-3000:]
    assert oct(os.stat(dest).st_mode & 0o777) == "0o600"
    assert yaml.safe_load(open(dest))["users"][0]["user"]["client-key-data"] not in res.stdout + res.stderr
    assert res.result("Apply the Kueue queue configuration")["changed"] is False
    wait_no_workloads(kube)


def kueue_info(kubeconfig):
    res = run_playbook([{"name": "Info", "hosts": "local", "gather_facts": False, "tasks": [
        {"name": "How is Kueue installed", "kueueops.aks.kueue_info": {"kubeconfig": kubeconfig}}]}],
        inventory=no_arm_inventory_path(kubeconfig), env=NO_KUBE)
    assert res.rc == 0, res.stdout[-3000:]
    return res.result("How is Kueue installed")


def no_arm_inventory_path(kubeconfig):
    """An inventory with the cluster's kubeconfig and no kueue_aks_* variables (ARM is never asked)."""
    path = os.path.join(os.path.dirname(kubeconfig), "no-arm-inventory.yml")
    with open(path, "w") as handle:
        yaml.safe_dump({"kueue_clusters": {"hosts": {"local": {
            "ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}",
            "kueue_kubeconfig": kubeconfig}}}}, handle)
    return path


def oss_chart(folder):
    """A tiny chart named kueue (one ConfigMap): an unmanaged Helm release of Kueue's chart name, which the real
    chart cannot be beside the extension (their cluster-scoped objects collide)."""
    os.makedirs(os.path.join(folder, "templates"), exist_ok=True)
    with open(os.path.join(folder, "Chart.yaml"), "w") as handle:
        yaml.safe_dump({"apiVersion": "v2", "name": "kueue", "version": "0.0.1", "appVersion": "oss"}, handle)
    with open(os.path.join(folder, "templates", "cm.yaml"), "w") as handle:
        handle.write("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-oss\ndata: {}\n")
    return folder


EXT_CONFIG = ("aks.clusterconfig.azure.com", "v1beta1", "kueue-system", "extensionconfigs", "kueue")


def test_kueue_info_tells_the_extensions_release_from_an_unmanaged_one_without_arm(clean, cluster, arm_control,
                                                                                   tmp_path):
    """From the cluster alone: the extension's own Helm release (named in AKS's ExtensionConfig, with the
    kueue-extension Deployment) is 'extension'; an unmanaged release beside it, or no ExtensionConfig to read, is
    'both'. uninstall.yml without kueue_aks_* detects the extension and stops before changing anything, naming the
    variables (the extension is deleted through ARM)."""
    from tests.reliability.rbac import snapshot
    kube = clean
    inv = inventory(tmp_path / "ext.yml", kueue_install_method="extension")
    if not deployment_ready(kube, "kueue-extension"):
        assert site_on_extension(inv).rc == 0
    custom = client.CustomObjectsApi(kube)
    marker = custom.get_namespaced_custom_object(*EXT_CONFIG)
    assert marker["spec"]["extensionType"] == "microsoft.kueue"  # what the emulator keeps, as AKS does

    info = kueue_info(cluster.kubeconfig)
    assert info["install_method"] == "extension", info
    assert info["helm_release"] is None and info["extension"] is True
    assert info["extension_release"]["name"] == "kueue" and info["extension_release"]["extension_managed"] is True
    assert [c["name"] for c in info["extension_configs"]] == ["kueue"]

    # uninstall.yml without ARM variables: detected as the extension, refused before anything changes.
    arm_control.clear_requests()
    before = snapshot(kube)
    dest = tmp_path / "backups"
    res = run_playbook(UNINSTALL, {**CONFIRM, "kueue_backup_dir": str(dest)}, inventory=no_arm_inventory_path(cluster.kubeconfig),
                       env=NO_KUBE)
    assert res.rc != 0
    assert res.result("Detect the install method")["install_method"] == "extension"
    printed = res.result("Print the install method")["msg"]
    assert "install method: extension" in printed[0]
    assert "Helm release: none; managed extension: True (its own Helm release kueue, named in AKS's ExtensionConfig)" \
        in printed[1], printed
    msg = res.result("Refuse to uninstall the managed extension without its AKS cluster")["msg"]
    assert "kueue_aks_resource_group" in msg and "kueue_aks_cluster_name" in msg and "Nothing was changed." in msg
    assert "both" not in " ".join(res.failure_messages())
    assert snapshot(kube) == before and arm_control.requests() == [] and not os.path.exists(dest)

    # An unmanaged (OSS) Helm release of the kueue chart beside the extension: both, and the uninstall refuses.
    helm(cluster, os.environ["HELM_V3"], "install", "kueue-oss", oss_chart(str(tmp_path / "chart")),
         "-n", "kueue-system")
    try:
        info = kueue_info(cluster.kubeconfig)
        assert info["install_method"] == "both", info
        assert info["helm_release"]["name"] == "kueue-oss" and info["extension_release"]["name"] == "kueue"
        before = snapshot(kube)
        res = run_playbook(UNINSTALL, {**CONFIRM, "kueue_backup_dir": str(dest)},
                           inventory=no_arm_inventory_path(cluster.kubeconfig), env=NO_KUBE)
        assert res.rc != 0
        msg = res.result("Refuse a cluster running both")["msg"]
        assert "release kueue-oss" in msg and "kueue_aks_resource_group" in msg
        assert snapshot(kube) == before and not os.path.exists(dest)
    finally:
        helm(cluster, os.environ["HELM_V3"], "uninstall", "kueue-oss", "-n", "kueue-system")

    # No ExtensionConfig to read (an AKS that keeps none, or no RBAC on it): the release's name alone proves
    # nothing, so both again; ARM decides (the uninstall test below, with kueue_aks_*).
    custom.delete_namespaced_custom_object(*EXT_CONFIG)
    try:
        info = kueue_info(cluster.kubeconfig)
        assert info["install_method"] == "both", info
        assert info["helm_release"]["name"] == "kueue" and info["extension_release"] is None
    finally:
        marker["metadata"] = {"name": "kueue", "namespace": "kueue-system"}
        custom.create_namespaced_custom_object(*EXT_CONFIG[:4], marker)
    assert kueue_info(cluster.kubeconfig)["install_method"] == "extension"

    # The AKS variables set, but naming an extension ARM does not have: refused, saying which ARM name was
    # looked up and what this cluster's extension records are called (not "set kueue_aks_*", already set).
    before = snapshot(kube)
    arm_control.clear_requests()
    res = run(UNINSTALL, inventory(tmp_path / "wrong-name.yml"),
              {"kueue_backup_dir": str(dest), "kueue_extension_name": "no-such-extension"})
    assert res.rc != 0
    msg = res.result("Refuse to uninstall the managed extension without its AKS cluster")["msg"]
    assert "ARM has no extension named no-such-extension (kueue_extension_name)" in msg, msg
    assert "the extension records of this cluster: kueue" in msg and "Set kueue_aks_resource_group" not in msg, msg
    assert snapshot(kube) == before and arm_control.writes() == [] and not os.path.exists(dest)


def test_uninstall_then_restore_with_reinstall_on_the_extension(clean, arm_control, tmp_path):
    kube = clean
    inv = inventory(tmp_path / "ext.yml", kueue_install_method="extension")
    if not deployment_ready(kube, "kueue-extension"):
        assert site_on_extension(inv).rc == 0
    batch = client.BatchV1Api(kube)
    before, aks = split(live_normalised(kube, PLURALS))
    assert aks == AKS_OWNED
    wait_no_workloads(kube)
    # The seed's scenario: Jobs queued before the uninstall (their Workloads hold Kueue's finalizer,
    # which the extension's deletion clears) stay suspended without Kueue and create no pods.
    batch.create_namespaced_job("team-nlp", queued_job("ep-queued", "no-such-queue"))
    wait_for("a Workload for the queued Job", lambda: bool(workloads(kube, "team-nlp")), timeout=60)
    arm_control.clear_requests()

    dest = tmp_path / "backups"
    res = run(UNINSTALL, inv, {"kueue_backup_dir": str(dest)})
    assert res.rc == 0, res.stdout[-5000:]
    # kueue_info tells the extension's own Helm release from the cluster alone (AKS's ExtensionConfig names it).
    assert res.result("Detect the install method")["install_method"] == "extension"
    assert "install method: extension" in res.result("Print the install method")["msg"][0]
    backup = res.result("Back up every Kueue configuration object")
    assert backup["verified"] is True
    assert {(e["kind"], e["name"]) for e in backup["excluded"]} == AKS_OWNED
    assert sum(backup["counts"].values()) == len(before)
    assert [m for m, _p in arm_control.writes()] == ["DELETE"] and arm_control.extensions() == []
    assert not kueue_crds(kube) and deployment_ready(kube, "kueue-extension") is None
    jobs = res.result("List the Jobs with a queue label")
    assert jobs["suspended"] >= 1, jobs
    assert suspended(kube, "team-nlp", "ep-queued")
    assert not client.CoreV1Api(kube).list_namespaced_pod("team-nlp").items  # a suspended Job makes no pod
    # A Job submitted while Kueue is absent stays suspended too, until Kueue is back and admits it.
    batch.create_namespaced_job("team-vision", queued_job("ep-waiting", "vision"))
    time.sleep(2)
    assert suspended(kube, "team-vision", "ep-waiting")

    res = run(RESTORE, inv, {"kueue_backup_path": backup["backup_path"], "kueue_restore_reinstall": True})
    assert res.rc == 0, res.stdout[-5000:]
    assert res.result("Create or update the AKS managed Kueue extension")["operation"] == "created"
    assert res.result("Verify Kueue after the restore")["failed_checks"] == []
    after, aks_after = split(live_normalised(kube, PLURALS))
    assert after == before and aks_after == AKS_OWNED
    wait_for("ep-waiting to be admitted", lambda: not suspended(kube, "team-vision", "ep-waiting"), timeout=120)
    assert suspended(kube, "team-nlp", "ep-queued")
    for ns, name in (("team-vision", "ep-waiting"), ("team-nlp", "ep-queued")):
        batch.delete_namespaced_job(name, ns, propagation_policy="Background")
    wait_no_workloads(kube)


def generations(kube):
    """{(plural, namespace, name): metadata.generation} of every Kueue configuration object (a spec write bumps it)."""
    custom = client.CustomObjectsApi(kube)
    return dict(((plural, i["metadata"].get("namespace", ""), i["metadata"]["name"]), i["metadata"].get("generation"))
                for plural in PLURALS.values()
                for i in custom.list_cluster_custom_object("kueue.x-k8s.io", "v1beta2", plural)["items"])


def manager_image(kube):
    """The tag of the kueue-controller-manager's image (v0.18.4)."""
    dep = client.AppsV1Api(kube).read_namespaced_deployment("kueue-controller-manager", "kueue-system")
    return dep.spec.template.spec.containers[0].image.rsplit(":", 1)[-1]


def workload_states(kube, namespaces=TEAMS):
    """{uid: admitted} of every Workload in `namespaces`."""
    out = {}
    for ns in namespaces:
        for w in workloads(kube, ns):
            out[w["metadata"]["uid"]] = any(c["type"] == "Admitted" and c["status"] == "True"
                                            for c in (w.get("status") or {}).get("conditions") or [])
    return out


def test_upgrade_the_extension_hop_by_hop_on_its_own_version_form(clean, arm, arm_control, tmp_path):
    """upgrade.yml with the shipped extension inventory: from the extension pinned at 0.18.4-aks.0.4.4 (AKS's version
    form; the emulator installs the chart 0.18.4) to 0.19.2-aks.0.4.4. Bad targets first, refused before any write to
    ARM or the cluster; check mode (the plan only); a hop whose ARM operation fails, pinned back at the version before
    it; the upgrade (one PATCH pinning the target with auto_upgrade_mode none, verified, compared with the backup, the
    Workloads kept by uid); a re-run with nothing changed."""
    kube = clean
    started = time.monotonic()
    newest, older = os.environ["KUEUE_EXTENSION_VERSIONS"].split()[:2]
    assert (newest, older) == ("0.19.2-aks.0.4.4", "0.18.4-aks.0.4.4")
    _reset(kube)
    site = run(SITE, EXTENSION_INVENTORY, {"kueue_resources": CONFIG + AKS_QUEUE, "kueue_create_namespaces": True,
                                           "kueue_extension_version": older})
    assert site.rc == 0, site.stdout[-3000:]
    props = arm_control.extensions()[0]["properties"]
    assert (props["version"], props["currentVersion"]) == (older, older)
    batch = client.BatchV1Api(kube)
    for index in range(2):
        batch.create_namespaced_job("team-vision", queued_job("ep-up-%d" % index, "vision"))
    batch.create_namespaced_job("team-nlp", queued_job("ep-up-pending", "no-such-queue"))
    wait_for("two Workloads admitted by Kueue 0.18.4 and one pending", lambda: sorted(
        workload_states(kube).values()) == [False, True, True], timeout=120)
    states = workload_states(kube)
    backups = str(tmp_path / "backups")

    def untouched():
        # Specs and their generations (the Kueue manager keeps writing statuses, so resourceVersions move), Helm's
        # records of the extension's release, the extension in ARM.
        return live_normalised(kube, PLURALS), generations(kube), helm_records(kube), arm_control.extensions()

    # Issue 39: site.yml with the default kueue_extension_version (latest) stays on the installed minor, writes
    # nothing and names the newer minor the train offers and upgrade.yml; a pin to it is refused before any write.
    before = untouched()
    arm_control.clear_requests()
    nightly = run(SITE, EXTENSION_INVENTORY, {"kueue_resources": CONFIG + AKS_QUEUE, "kueue_create_namespaces": True})
    assert nightly.rc == 0 and nightly.changed == 0, nightly.stdout[-3000:]
    created = nightly.result("Create or update the AKS managed Kueue extension")
    assert (created["version"], created["installed_version"], created["operation"]) == (older, older, "none")
    assert created["notices"][0].startswith("Kueue %s is published, a newer minor than the installed %s" % (
        newest, older)) and "playbooks/upgrade.yml --check" in created["notices"][0], created["notices"]
    assert any(created["notices"][0] in line for line in nightly.result("Report what was installed")["msg"])
    pinned = run(SITE, EXTENSION_INVENTORY, {"kueue_extension_version": newest})
    assert pinned.rc != 0, pinned.stdout[-3000:]
    msg = pinned.failure_messages()[0]
    assert msg.startswith("version: Kueue %s is installed, and %s would upgrade it to another minor" % (older, newest))
    assert "playbooks/upgrade.yml -e kueue_extension_version=%s --check" % newest in msg, msg
    assert "kueue_extension_version" in msg and "Traceback" not in pinned.stdout + pinned.stderr
    assert arm_control.writes() == [] and untouched() == before

    # Bad targets: refused before anything is written (no ARM write, no Kueue object, Helm record or backup).
    arm_control.clear_requests()
    for target, words in (
            ("0.16.0-aks.0.4.4", ["version: 0.16.0-aks.0.4.4 is not a version of microsoft.kueue offered",
                                  "offered: %s" % ", ".join(os.environ["KUEUE_EXTENSION_VERSIONS"].split()),
                                  "Fix: pin one of the offered versions"]),
            ("0.19.2", ["version: 0.19.2 is not a version of microsoft.kueue offered",
                        "Fix: pin 0.19.2-aks.0.4.4 (Kueue 0.19.2 as the release train offers it)"]),
            ("0.17.0-aks.0.4.4", ["target_version: Kueue 0.17.0-aks.0.4.4 is older than the installed 0.18.4-aks.0.4.4",
                                  "Fix: give 0.18.4-aks.0.4.4 or a newer version"])):
        bad = run(UPGRADE, EXTENSION_INVENTORY, {"kueue_extension_version": target, "kueue_backup_dir": backups})
        assert bad.rc != 0, bad.stdout[-3000:]
        msg = bad.failure_messages()[0]
        assert all(w in msg for w in words) and "kueue_extension_version" in msg, msg
        assert "Traceback" not in bad.stdout + bad.stderr
    assert arm_control.writes() == [] and untouched() == before and not os.path.exists(backups)

    # 1. Check mode: the plan only; nothing written to ARM or the cluster.
    check = run(UPGRADE, EXTENSION_INVENTORY, {"kueue_extension_version": newest}, check=True)
    assert check.rc == 0, check.stdout[-3000:]
    offers = check.result("Read the versions the release train offers")
    assert offers["offered_versions"] == os.environ["KUEUE_EXTENSION_VERSIONS"].split()
    plan = check.result("Plan the upgrade")
    assert (plan["current_version"], plan["target_version"]) == (older, newest)
    assert [(h["from"], h["to"], h["migrate_storage"]) for h in plan["hops"]] == [(older, newest, False)]
    assert plan["refusals"] == [] and plan["migrate_first"] is False
    assert any("planned only (check mode)" in line for line in check.result("Report the upgrade")["msg"])
    assert arm_control.writes() == [] and untouched() == before

    # 2. A hop ARM fails (the extension operation ends Failed): the extension is pinned back at the version before
    # the hop, verified, compared with the backup (nothing to restore), and the run fails naming the hop and why.
    objects = live_normalised(kube, PLURALS)
    arm_control.clear_requests()
    arm_control.provisioning(fail={"code": "ExtensionOperationFailed", "message": "emulated: the upgrade failed",
                                   "count": 1})
    failed = run(UPGRADE, EXTENSION_INVENTORY, {"kueue_extension_version": newest, "kueue_backup_dir": backups})
    assert failed.rc != 0, failed.stdout[-3000:]
    msg = failed.failure_messages()[-1]
    assert msg.startswith("The upgrade hop %s -> %s failed at \"Pin the AKS managed extension at %s" % (
        older, newest, newest)), msg
    assert "emulated: the upgrade failed" in msg and "the extension pinned back" in msg, msg
    assert "every object of the backup" in msg and "is there unchanged (nothing restored)" in msg, msg
    assert "Traceback" not in failed.stdout + failed.stderr
    # the hop's PATCH; then the Failed extension created again at the version before (kueue_extension PUTs a Failed one)
    assert [m for m, _p in arm_control.writes()] == ["PATCH", "PUT"]
    props = arm_control.extensions()[0]["properties"]
    assert (props["version"], props["currentVersion"], props["provisioningState"]) == (older, older, "Succeeded")
    assert manager_image(kube) == "v0.18.4"
    assert live_normalised(kube, PLURALS) == objects and workload_states(kube) == states

    # 3. The upgrade: one PATCH pinning the target, auto_upgrade_mode none; verified; the backup matches.
    arm_control.clear_requests()
    up = run(UPGRADE, EXTENSION_INVENTORY, {"kueue_extension_version": "latest", "kueue_backup_dir": backups})
    assert up.rc == 0, up.stdout[-5000:]
    assert up.result("Plan the upgrade")["target_version"] == newest  # latest: the newest the train offers
    assert [m for m, _p in arm_control.writes()] == ["PATCH"]
    props = arm_control.extensions()[0]["properties"]
    assert (props["version"], props["currentVersion"]) == (newest, newest)
    assert props["autoUpgradeMode"] == "none" and props["autoUpgradeMinorVersion"] is False
    assert props["provisioningState"] == "Succeeded"
    assert manager_image(kube) == "v0.19.2"
    assert up.result("Verify Kueue 0.19.2-aks.0.4.4")["failed_checks"] == []
    compare = up.result("Compare the live configuration and the Workloads with the backup")
    assert compare["matches"] is True and compare["differences"] == [] and compare["lost_workloads"] == []
    assert live_normalised(kube, PLURALS) == objects
    assert workload_states(kube) == states  # the same Workloads: admitted stay admitted, pending stay pending

    # 4. A re-run: up to date, nothing written.
    arm_control.clear_requests()
    again = run(UPGRADE, EXTENSION_INVENTORY, {"kueue_extension_version": newest, "kueue_backup_dir": backups})
    assert again.rc == 0 and again.changed == 0, again.stdout[-3000:]
    assert again.result("Plan the upgrade")["up_to_date"] is True and arm_control.writes() == []
    print("extension upgrade test: %.0f s" % (time.monotonic() - started))
    for ns, name in (("team-vision", "ep-up-0"), ("team-vision", "ep-up-1"), ("team-nlp", "ep-up-pending")):
        batch.delete_namespaced_job(name, ns, propagation_policy="Background")
    wait_no_workloads(kube)


def test_migrate_from_helm_to_the_extension_and_back(clean, arm_control, tmp_path):
    kube = clean
    _reset(kube)
    helm_inv = os.path.join(REPO, "playbooks", "inventory", "local.yml")
    # Kueue 0.18.4, older than the newest the release train offers: the migrations keep the release both ways.
    site = run_playbook(SITE, extravars={"kueue_version": "0.18.4"}, extra_args=["-e", "@" + QUEUES_VARS],
                        inventory=helm_inv)
    assert site.rc == 0, site.stdout[-3000:]
    before = live_normalised(kube, PLURALS)
    release = helm_records(kube)
    # Both paths' variables in one inventory; no kubeconfig (credentials from ARM).
    inv = inventory(tmp_path / "migrate.yml", kueue_helm_chart_ref="{{ lookup('ansible.builtin.env', 'KUEUE_CHART_REF') }}",
                    kueue_helm_plain_http=True, kueue_feature_gates={"LocalQueueMetrics": True})
    backups = str(tmp_path / "backups")

    # The extension's preflight fails (AKS Automatic): nothing is changed.
    arm_control.clear_requests()
    arm_control.cluster(sku={"name": "Automatic", "tier": "Standard"})
    res = run(MIGRATE, inv, {"kueue_migrate_to": "extension", "kueue_backup_dir": backups})
    assert res.rc != 0
    assert "Automatic" in res.result("Preflight of the managed extension")["msg"]
    assert arm_control.writes() == [] and helm_records(kube) == release and not os.path.exists(backups)
    assert live_normalised(kube, PLURALS) == before
    arm_control.reset()

    # The release train does not offer the Helm release's Kueue (0.18.4): refused, nothing changed.
    arm_control.offers({"preview": ["0.19.2-aks.0.4.4"]})
    res = run(MIGRATE, inv, {"kueue_migrate_to": "extension", "kueue_backup_dir": backups})
    assert res.rc != 0
    msg = res.result("Refuse a Kueue release the release train does not offer")["msg"]
    assert "The Helm release runs Kueue 0.18.4, and release train preview does not offer it" in msg, msg
    assert "(it offers 0.19.2-aks.0.4.4)" in msg and "Fix: upgrade the Helm release" in msg, msg
    assert "kueue_extension_version" in msg and "Nothing was changed." in msg
    assert arm_control.writes() == [] and helm_records(kube) == release and not os.path.exists(backups)
    assert live_normalised(kube, PLURALS) == before
    arm_control.reset()

    # Helm -> extension.
    res = run(MIGRATE, inv, {"kueue_migrate_to": "extension", "kueue_backup_dir": backups})
    assert res.rc == 0, res.stdout[-5000:]
    # An OSS release named like the extension (kueue), without AKS's ExtensionConfig: helm, not the extension.
    assert res.result("Detect the install method")["install_method"] == "helm"
    assert res.result("Detect the install method")["extension_release"] is None
    assert [m for m, _p in arm_control.writes()] == ["PUT"]
    assert deployment_ready(kube, "kueue-extension")
    # The Helm release's Kueue kept: the extension pinned at the offered 0.18.4-aks.0.4.4, not the train's newest.
    props = arm_control.extensions()[0]["properties"]
    assert (props["version"], props["currentVersion"]) == ("0.18.4-aks.0.4.4", "0.18.4-aks.0.4.4"), props
    assert manager_image(kube) == "v0.18.4"
    assert res.result("Verify Kueue after the restore")["failed_checks"] == []
    mine, aks = split(live_normalised(kube, PLURALS))
    assert mine == before and aks == AKS_OWNED
    report = res.result("Report the migration")["msg"]
    assert "migrated from helm to extension" in report[0]
    assert any("Kueue release kept: the extension pinned at 0.18.4-aks.0.4.4" in line for line in report), report

    # Already there: refused, nothing written.
    arm_control.clear_requests()
    res = run(MIGRATE, inv, {"kueue_migrate_to": "extension", "kueue_backup_dir": backups})
    assert res.rc != 0
    assert "already installed as the AKS managed extension" in res.result("Refuse a cluster already on")["msg"]
    assert arm_control.writes() == []

    # Extension -> Helm: the aks- objects come along as ordinary objects (queues may reference them).
    res = run(MIGRATE, inv, {"kueue_migrate_to": "helm", "kueue_backup_dir": backups})
    assert res.rc == 0, res.stdout[-5000:]
    assert [m for m, _p in arm_control.writes()] == ["DELETE"] and arm_control.extensions() == []
    assert deployment_ready(kube, "kueue-extension") is None and deployment_ready(kube, "kueue-controller-manager")
    assert helm_records(kube)[-1][1] == "deployed"
    # The extension's Kueue kept: the chart of its currentVersion (0.18.4), not the registry's latest.
    assert manager_image(kube) == "v0.18.4"
    report = res.result("Report the migration")["msg"]
    assert any("Kueue release kept: the chart 0.18.4" == line for line in report), report
    assert res.result("Verify Kueue after the restore")["failed_checks"] == []
    mine, aks = split(live_normalised(kube, PLURALS))
    assert mine == before and aks == AKS_OWNED
