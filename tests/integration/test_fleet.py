"""A fleet in one run (issue 7): two control planes on different ports, one inventory, one
`ansible-playbook` run with forks, each cluster with its own install method: the session
cluster behind the ARM emulator takes the AKS managed extension, a second cluster takes Helm.
Then Day 2 on the fleet (issue 15): playbooks/upgrade.yml cluster by cluster (serial 1), a target the
first cluster refuses stopping the run before the second is touched, then both upgraded."""
from __future__ import annotations

import os

import yaml
from kubernetes import client, config

from tests.harness.cluster import Cluster, run_dir

from .ansible import REPO, run_playbook
from .kubeutil import delete_namespaces, helm_revision

SITE = os.path.join(REPO, "playbooks", "site.yml")
UPGRADE = os.path.join(REPO, "playbooks", "upgrade.yml")
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
    finally:
        second.down()
        cleanup = run_playbook(os.path.join(REPO, "playbooks", "uninstall.yml"), inventory=str(tmp_path / "fleet.yml"),
                               extravars={"kueue_backup_dir": str(tmp_path / "backups"), "kueue_target_hosts": "aks-managed"})
        assert cleanup.rc == 0, cleanup
        delete_namespaces(config.new_client_from_config(cluster.kubeconfig), ["team-vision", "team-nlp"], wait=False)
