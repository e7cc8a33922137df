"""A fleet in one run (issue 7): two control planes on different ports, one inventory, one
`ansible-playbook` run with forks, each cluster with its own install method: the session
cluster behind the ARM emulator takes the AKS managed extension, a second cluster takes Helm.
Then Day 2 on the fleet (issue 15): playbooks/upgrade.yml cluster by cluster (serial 1), a target the
first cluster refuses stopping the run before the second is touched, then both upgraded.
Then the wrong-cluster guards (issue 40) on the same two clusters: a backup of the first restored into the second is
refused before anything is written, naming both clusters, then allowed with kueue_restore_allow_other_cluster, which
restores only into the host it names; uninstall.yml over both hosts without kueue_confirm_hosts changes nothing; with
it, the first host failing stops the run before the second is touched (serial 1)."""
from __future__ import annotations

import os

import yaml
from kubernetes import client, config

from tests.harness.cluster import Cluster, run_dir

from tests.reliability import rbac

from .ansible import REPO, run_playbook
from .kubeutil import delete_namespaces, helm_revision

SITE = os.path.join(REPO, "playbooks", "site.yml")
UPGRADE = os.path.join(REPO, "playbooks", "upgrade.yml")
UNINSTALL = os.path.join(REPO, "playbooks", "uninstall.yml")
RESTORE = os.path.join(REPO, "playbooks", "restore.yml")
ONLY_A = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "fleet-only-a"},
          "spec": {"namespaceSelector": {}}}
QUEUES = ["-e", "@" + os.path.join(REPO, "playbooks", "vars", "queues.yml"), "--forks", "2"]


def test_two_clusters_two_install_methods_one_run(cluster, arm, tmp_path):
    second = Cluster(run_dir().rstrip("/") + "-fleet")
    second.up()
    # one release behind the newest on both paths, so that the fleet has an upgrade to make
    newest, previous = os.environ["KUEUE_EXTENSION_VERSIONS"].split()[:2]
    chart_newest, chart_previous = os.environ["KUEUE_CHART_VERSIONS"].split()[:2]
    try:
        inventory = {"kueue_clusters": {
            "vars": {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}",
                     "kueue_smoke_test": True},
            "hosts": {
                "aks-managed": {
                    "kueue_install_method": "extension", "kueue_extension_version": previous,
                    "kueue_aks_resource_group": os.environ["AKS_RESOURCE_GROUP"],
                    "kueue_aks_cluster_name": os.environ["AKS_CLUSTER_NAME"],
                    "kueue_aks_kubeconfig_dest": str(tmp_path / "aks-managed.kubeconfig")},
                "aks-oss": {
                    "kueue_install_method": "helm",
                    "kueue_kubeconfig": second.kubeconfig,
                    "kueue_helm_chart_ref": second.chart_ref, "kueue_helm_plain_http": True,
                    "kueue_version": chart_previous}}}}
        inv = tmp_path / "fleet.yml"
        inv.write_text(yaml.safe_dump(inventory))
        first = run_playbook(SITE, inventory=str(inv), extra_args=QUEUES, timeout=1500)
        assert first.rc == 0, first.stdout[-5000:]
        for host in ("aks-managed", "aks-oss"):
            assert first.host_stats(host).get("failures", 0) == 0 and first.host_stats(host).get("changed", 0) > 0
            smoke = first.result("Smoke test", host)
            assert [c for c in smoke["checks"] if c["name"].startswith("smoke-test/")] and all(
                c["ok"] for c in smoke["checks"]), smoke["checks"]
        managed = client.AppsV1Api(config.new_client_from_config(cluster.kubeconfig))
        oss = client.AppsV1Api(config.new_client_from_config(second.kubeconfig))
        assert managed.read_namespaced_deployment("kueue-extension", "kueue-system").status.ready_replicas == 1
        assert [d.metadata.name for d in oss.list_namespaced_deployment("kueue-system").items] == [
            "kueue-controller-manager"]
        again = run_playbook(SITE, inventory=str(inv), extra_args=QUEUES, timeout=900)
        assert again.rc == 0 and again.changed == 0, again

        # Day 2, cluster by cluster (serial 1, max_fail_percentage 0). A target the first cluster refuses (its
        # extension would go down a release) fails it in the plan and stops the run: the second is not touched.
        oss_kube = config.new_client_from_config(second.kubeconfig)
        oss_before = helm_revision(oss_kube)
        backups = str(tmp_path / "upgrade-backups")
        refused = run_playbook(UPGRADE, inventory=str(inv), timeout=900, extravars={
            "kueue_extension_version": os.environ["KUEUE_EXTENSION_VERSIONS"].split()[2], "kueue_version": chart_newest,
            "kueue_backup_dir": backups})
        assert refused.rc != 0 and refused.host_stats("aks-managed").get("failures") == 1, refused
        assert "is older than the installed %s" % previous in " ".join(refused.failure_messages("aks-managed"))
        assert list(refused.tasks("aks-oss")) == [] and helm_revision(oss_kube) == oss_before
        # Both upgraded, one after the other.
        upgraded = run_playbook(UPGRADE, inventory=str(inv), timeout=1200, extravars={
            "kueue_extension_version": newest, "kueue_version": chart_newest, "kueue_backup_dir": backups})
        assert upgraded.rc == 0, upgraded.stdout[-5000:]
        for host, target in (("aks-managed", newest), ("aks-oss", chart_newest)):
            plan = upgraded.result("Plan the upgrade", host)
            assert plan["target_version"] == target and [h["to"] for h in plan["hops"]] == [target], (host, plan)
            assert upgraded.result("Compare the live configuration", host)["matches"] is True, host
        image = oss.read_namespaced_deployment("kueue-controller-manager", "kueue-system").spec.template.spec
        assert image.containers[0].image.endswith(":v" + chart_newest)
        _wrong_cluster_guards(cluster, second, inventory, tmp_path)
    finally:
        second.down()
        cleanup = run_playbook(os.path.join(REPO, "playbooks", "uninstall.yml"), inventory=str(tmp_path / "fleet.yml"),
                               extravars={"kueue_backup_dir": str(tmp_path / "backups"), "kueue_target_hosts": "aks-managed",
                                          "kueue_confirm_hosts": "aks-managed"})
        assert cleanup.rc == 0, cleanup
        delete_namespaces(config.new_client_from_config(cluster.kubeconfig), ["team-vision", "team-nlp"], wait=False)


def _cluster_queues(api) -> set:
    return {o["metadata"]["name"] for o in client.CustomObjectsApi(api).list_cluster_custom_object(
        "kueue.x-k8s.io", "v1beta2", "clusterqueues")["items"]}


def _wrong_cluster_guards(cluster, second, inventory, tmp_path):
    """Issue 40 on the fleet of the test above: aks-managed (the session cluster, A), aks-oss (the second, B)."""
    kube_a = config.new_client_from_config(cluster.kubeconfig)
    kube_b = config.new_client_from_config(second.kubeconfig)
    uid = {name: client.CoreV1Api(api).read_namespace("kube-system").metadata.uid
           for name, api in (("a", kube_a), ("b", kube_b))}
    assert uid["a"] != uid["b"]
    inv = str(tmp_path / "fleet.yml")
    # A backup of A holding a ClusterQueue only A has.
    client.CustomObjectsApi(kube_a).create_cluster_custom_object("kueue.x-k8s.io", "v1beta2", "clusterqueues", ONLY_A)
    taken = run_playbook([{"name": "back up A", "hosts": "aks-managed", "gather_facts": False, "tasks": [
        {"name": "backup", "kueueops.aks.kueue_backup": {"dest": str(tmp_path / "a-backups"),
                                                         "kubeconfig": cluster.kubeconfig}}]}], inventory=inv)
    assert taken.rc == 0, taken
    backup = taken.result("backup", "aks-managed")
    assert backup["manifest"]["cluster"]["uid"] == uid["a"], backup["manifest"]["cluster"]
    a_backup = backup["backup_path"]

    # Refused on B, before anything is written, naming both clusters.
    before_b = rbac.snapshot(kube_b)
    refused = run_playbook(RESTORE, inventory=inv, extravars={"kueue_backup_path": a_backup,
                                                              "kueue_target_hosts": "aks-oss"})
    assert refused.rc != 0 and refused.host_stats("aks-oss").get("failures") == 1, refused
    message = " ".join(refused.failure_messages("aks-oss"))
    assert "was taken from another cluster" in message and uid["a"] in message and uid["b"] in message, message
    assert "kueue_restore_allow_other_cluster" in message and "nothing was changed" in message, message
    assert "Traceback" not in refused.stdout + refused.stderr
    assert rbac.snapshot(kube_b) == before_b and "fleet-only-a" not in _cluster_queues(kube_b)

    # Allowed into the host the variable names, and only there: the whole fleet targeted, A (whose own backup it
    # is) left as it is - its ClusterQueue, deleted since the backup, is not brought back.
    client.CustomObjectsApi(kube_a).delete_cluster_custom_object("kueue.x-k8s.io", "v1beta2", "clusterqueues",
                                                                 "fleet-only-a")
    allowed = run_playbook(RESTORE, inventory=inv, extravars={"kueue_backup_path": a_backup,
                                                              "kueue_restore_allow_other_cluster": ["aks-oss"]})
    assert allowed.rc == 0, allowed.stdout[-3000:]
    assert allowed.result("Check the checksums", "aks-oss")["same_cluster"] is False
    assert "fleet-only-a" in _cluster_queues(kube_b)
    assert "left as it is" in allowed.result("Say why this host is not restored", "aks-managed")["msg"]
    assert not [name for name, _res in allowed.tasks("aks-managed") if "Apply the Kueue queue configuration" in name]
    assert "fleet-only-a" not in _cluster_queues(kube_a)

    # uninstall.yml over both hosts without the confirmation: refused, nothing read or changed on either.
    before = {"a": rbac.snapshot(kube_a), "b": rbac.snapshot(kube_b)}
    unconfirmed = run_playbook(UNINSTALL, inventory=inv, extravars={"kueue_backup_dir": str(tmp_path / "un")})
    assert unconfirmed.rc != 0, unconfirmed
    message = " ".join(unconfirmed.failure_messages("aks-managed") + unconfirmed.failure_messages("aks-oss"))
    assert "2 clusters" in message and "kueue_confirm_hosts=aks-managed,aks-oss" in message, message
    for host in ("aks-managed", "aks-oss"):
        assert not [n for n, _r in unconfirmed.tasks(host) if "Detect" in n or "Back up" in n], host
    assert not os.path.exists(str(tmp_path / "un"))

    # Confirmed, one cluster at a time: the first (A) fails (its backup folder is a file's child), the run stops, and
    # the second (B) is not touched.
    a_file = tmp_path / "not-a-folder"
    a_file.write_text("x")
    serial = yaml.safe_load(yaml.safe_dump(inventory))
    serial["kueue_clusters"]["hosts"]["aks-managed"]["kueue_backup_dir"] = str(a_file / "backups")
    serial["kueue_clusters"]["hosts"]["aks-oss"]["kueue_backup_dir"] = str(tmp_path / "b-backups")
    serial_inv = tmp_path / "fleet-serial.yml"
    serial_inv.write_text(yaml.safe_dump(serial))
    stopped = run_playbook(UNINSTALL, inventory=str(serial_inv),
                           extravars={"kueue_confirm_hosts": ["aks-oss", "aks-managed"]})
    assert stopped.rc != 0 and stopped.host_stats("aks-managed").get("failures") == 1, stopped
    assert not [n for n, _r in stopped.tasks("aks-oss") if "Detect" in n or "Back up" in n or "Uninstall" in n]
    assert rbac.snapshot(kube_b) == before["b"] and not os.path.exists(str(tmp_path / "b-backups"))
    assert rbac.snapshot(kube_a) == before["a"]
