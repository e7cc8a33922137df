"""playbooks/configure_queues.yml and playbooks/status.yml on a Helm-installed Kueue, through real
ansible-playbook: the queue configuration of playbooks/vars/queues.yml applied (then changed=0), and
status.yml's report showing those queues.

It runs in the main suite (.venv's ansible-core) and in hack/compat.sh (.venv-compat, ansible-core 2.16,
the oldest meta/runtime.yml accepts), beside test_site.py and the uninstall/restore round trip, so the
compat job covers the role's configure_queues entry point and the status report as users on 2.16 run them.
"""
from __future__ import annotations

import os

import yaml
from kubernetes import client

from .ansible import REPO, run_playbook
from .kubeutil import delete_namespaces, wait_for

CONFIGURE = os.path.join(REPO, "playbooks", "configure_queues.yml")
STATUS = os.path.join(REPO, "playbooks", "status.yml")
QUEUES_VARS = os.path.join(REPO, "playbooks", "vars", "queues.yml")
QUEUES = ["-e", "@" + QUEUES_VARS]
CONFIG = yaml.safe_load(open(QUEUES_VARS))["kueue_resources"]
PLURALS = {"ResourceFlavor": "resourceflavors", "Cohort": "cohorts", "WorkloadPriorityClass": "workloadpriorityclasses",
           "ClusterQueue": "clusterqueues", "LocalQueue": "localqueues"}


def _remove_queue_objects(kube):
    custom = client.CustomObjectsApi(kube)
    for obj in reversed(CONFIG):
        group, version = obj["apiVersion"].split("/")
        meta = obj["metadata"]
        try:
            if meta.get("namespace"):
                custom.delete_namespaced_custom_object(group, version, meta["namespace"], PLURALS[obj["kind"]], meta["name"])
            else:
                custom.delete_cluster_custom_object(group, version, PLURALS[obj["kind"]], meta["name"])
        except client.exceptions.ApiException as exc:
            if exc.status != 404:
                raise
    core = client.CoreV1Api(kube)
    teams = sorted({o["metadata"]["namespace"] for o in CONFIG if o["metadata"].get("namespace")})
    delete_namespaces(kube, teams, wait=False)

    def gone():
        left = [n.metadata.name for n in core.list_namespace().items if n.metadata.name in teams]
        cqs = custom.list_cluster_custom_object("kueue.x-k8s.io", "v1beta2", "clusterqueues")["items"]
        return not left and not [c for c in cqs if c["metadata"]["name"].startswith("team-")]
    wait_for("the team namespaces and ClusterQueues to be gone", gone, timeout=180)


def test_configure_queues_then_status_report(cluster, kueue, tmp_path):
    try:
        first = run_playbook(CONFIGURE, extra_args=QUEUES)
        assert first.rc == 0, first.stdout[-4000:]
        applied = first.result("Apply the Kueue queue configuration")
        assert applied["changed"] is True
        assert applied.get("not_active", []) == []

        second = run_playbook(CONFIGURE, extra_args=QUEUES)
        assert second.rc == 0 and second.changed == 0, second

        report = tmp_path / "status.md"
        status = run_playbook(STATUS, extravars={"kueue_status_report": str(report)})
        assert status.rc == 0, status.stdout[-4000:]
        shown = status.result("Show the status")["msg"]
        assert shown[0].startswith("local: Kueue v") and "(helm): all " in shown[0], shown[:3]
        for cq in ("team-vision", "team-nlp"):
            row = [line for line in shown if line.strip().startswith(cq + " ")]
            assert row and "research" in row[0] and "cpu-on-demand cpu 0/" in row[0], (cq, shown)
        text = report.read_text()
        assert text.startswith("# Kueue status")
        assert "| team-vision | research |" in text and "| team-nlp | research |" in text, text
    finally:
        _remove_queue_objects(kueue)
