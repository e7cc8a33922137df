"""A fleet in one run (issue 7): two control planes on different ports, one inventory, one
`ansible-playbook` run with forks, each cluster with its own install method: the session
cluster behind the ARM emulator takes the AKS managed extension, a second cluster takes Helm."""
from __future__ import annotations

import os

import yaml
from kubernetes import client, config

from tests.harness.cluster import Cluster, run_dir

from .ansible import REPO, run_playbook
from .kubeutil import delete_namespaces

SITE = os.path.join(REPO, "playbooks", "site.yml")
QUEUES = ["-e", "@" + os.path.join(REPO, "playbooks", "vars", "queues.yml"), "--forks", "2"]


def test_two_clusters_two_install_methods_one_run(cluster, arm, tmp_path):
    second = Cluster(run_dir().rstrip("/") + "-fleet")
    second.up()
    try:
        inventory = {"kueue_clusters": {
            "vars": {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}",
                     "kueue_smoke_test": True},
            "hosts": {
                "aks-managed": {
                    "kueue_install_method": "extension",
                    "kueue_aks_resource_group": os.environ["AKS_RESOURCE_GROUP"],
                    "kueue_aks_cluster_name": os.environ["AKS_CLUSTER_NAME"],
                    "kueue_aks_kubeconfig_dest": str(tmp_path / "aks-managed.kubeconfig")},
                "aks-oss": {
                    "kueue_install_method": "helm",
                    "kueue_kubeconfig": second.kubeconfig,
                    "kueue_helm_chart_ref": second.chart_ref, "kueue_helm_plain_http": True,
                    "kueue_version": "latest"}}}}
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
    finally:
        second.down()
        cleanup = run_playbook(os.path.join(REPO, "playbooks", "uninstall.yml"), inventory=str(tmp_path / "fleet.yml"),
                               extravars={"kueue_backup_dir": str(tmp_path / "backups"), "kueue_target_hosts": "aks-managed"})
        assert cleanup.rc == 0, cleanup
        delete_namespaces(config.new_client_from_config(cluster.kubeconfig), ["team-vision", "team-nlp"], wait=False)
