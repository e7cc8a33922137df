"""The capacity check (issue 16, items 2 and 3) on the local control plane: kueue_capacity_info, the role's
configure_queues (kueue_capacity_check) and playbooks/status.yml, against Node objects registered in the real API
server, and the AKS agent pools of the ARM emulator.

Nodes: no kubelet is needed to count capacity. The module fixture creates Nodes (labels, taints) and writes their
``status.allocatable`` through the status subresource, as a kubelet does. Nothing schedules onto them: the harness
runs no scheduler, its node agent binds only the Kueue manager's Pods to its own Node (``kueueops-local``) and
refreshes only that Node, and kube-controller-manager runs without the node lifecycle controller (so no taint is
added to Nodes that never send a heartbeat). kube-apiserver's TaintNodesByCondition admission taints each new Node
``node.kubernetes.io/not-ready:NoSchedule``; the fixture sets the Node Ready and its taints as the lifecycle
controller leaves a Ready Node. They are deleted after the module.

Three ansible-playbook runs for the whole file, on one Kueue install (the module fixture ``kueue``):
1. kueue_capacity_info tasks in one play: a declared configuration with a flavor selecting no node, an over-committed
   GPU flavor and a Topology level no node carries (three findings, the ratios and the queues); a correct one (no
   finding); and the agent pools of the ARM emulator, where a GPU pool scaled to zero (count 0, autoscaler max 3)
   gives the flavor that selected no node its three GPUs (counted at the maximum, and said so);
2. configure_queues.yml with ``kueue_capacity_check: strict`` on the faulty configuration: fails, naming the flavor,
   resource, quota and what the nodes offer, before anything is written (the cluster snapshot is unchanged);
3. configure_queues.yml with the correct configuration (applied, no capacity warning), then status.yml in the same
   run: the capacity table of the live configuration;
4. (issue 40) site.yml in check mode on the Helm path with the AKS cluster named (kueue_aks_resource_group,
   kueue_aks_cluster_name, which the Helm path used to refuse): the install entry point accepts them without implying
   the managed extension, and the capacity check of configure_queues reads the agent pools from the ARM emulator, so
   the flavor of the GPU pool scaled to zero is counted at the pool's autoscaler maximum instead of "selects no
   node"; nothing written in the cluster or in ARM.
"""
from __future__ import annotations

import os

import pytest
from kubernetes import client

from tests.reliability import rbac

from .ansible import REPO, run_playbook
from .kubeutil import delete_kueue_objects, kueue_plurals

V = "kueue.x-k8s.io/v1beta2"
POOL = "capacity.kueueops.io/pool"
TEST_LABEL = "capacity.kueueops.io/test"
GPU_TAINT = {"key": "sku", "value": "gpu", "effect": "NoSchedule"}
NODES = [
    ("cap-cpu-1", {POOL: "cpu"}, {"cpu": "3860m", "memory": "12Gi", "pods": "110"}, []),
    ("cap-cpu-2", {POOL: "cpu"}, {"cpu": "3860m", "memory": "12Gi", "pods": "110"}, []),
    ("cap-gpu-1", {POOL: "gpu", "kubernetes.azure.com/accelerator": "nvidia"},
     {"cpu": "23", "memory": "200Gi", "nvidia.com/gpu": "2", "pods": "30"}, [GPU_TAINT]),
]
PLURALS = kueue_plurals("Topology", "ResourceFlavor", "ClusterQueue", "LocalQueue")
GPU_TOLERATION = dict(GPU_TAINT, operator="Equal")


def flavor(name, labels, **spec):
    return {"apiVersion": V, "kind": "ResourceFlavor", "metadata": {"name": name},
            "spec": dict({"nodeLabels": labels}, **spec)}


def group(resources, *flavors):
    return {"coveredResources": resources, "flavors": [
        {"name": name, "resources": [{"name": r, "nominalQuota": q} for r, q in quotas.items()]}
        for name, quotas in flavors]}


def queue(name, *groups):
    return {"apiVersion": V, "kind": "ClusterQueue", "metadata": {"name": name},
            "spec": {"namespaceSelector": {}, "resourceGroups": list(groups)}}


# A flavor selecting no node (cap-none), an over-committed GPU flavor (cap-gpu: 8 asked, 2 on cap-gpu-1), a
# Topology level no node of its flavor carries (capacity.kueueops.io/rack).
FAULTY = [
    {"apiVersion": V, "kind": "Topology", "metadata": {"name": "cap-topology"},
     "spec": {"levels": [{"nodeLabel": "capacity.kueueops.io/rack"}, {"nodeLabel": "kubernetes.io/hostname"}]}},
    flavor("cap-cpu", {POOL: "cpu"}, topologyName="cap-topology"),
    flavor("cap-gpu", {POOL: "gpu"}, tolerations=[GPU_TOLERATION]),
    flavor("cap-none", {POOL: "gpuzero"}, tolerations=[GPU_TOLERATION]),
    queue("cap-team", group(["cpu", "memory"], ("cap-cpu", {"cpu": "6", "memory": "20Gi"})),
          group(["nvidia.com/gpu"], ("cap-gpu", {"nvidia.com/gpu": 8}), ("cap-none", {"nvidia.com/gpu": 3}))),
]
CORRECT = [
    flavor("cap-cpu", {POOL: "cpu"}),
    flavor("cap-gpu", {POOL: "gpu"}, tolerations=[GPU_TOLERATION]),
    queue("cap-ok", group(["cpu", "memory"], ("cap-cpu", {"cpu": "7", "memory": "24Gi"})),
          group(["nvidia.com/gpu"], ("cap-gpu", {"nvidia.com/gpu": 2}))),
]
# The GPU pool the emulator reports (ManagedClusterAgentPoolProfile), scaled to zero: no Node of it exists.
ZERO_POOL = {"name": "gpuzero", "vmSize": "Standard_NC24ads_A100_v4", "count": 0, "enableAutoScaling": True,
             "minCount": 0, "maxCount": 3, "maxPods": 30, "nodeLabels": {POOL: "gpuzero"},
             "nodeTaints": ["sku=gpu:NoSchedule"]}
CONFIGURE = os.path.join(REPO, "playbooks", "configure_queues.yml")
STATUS = os.path.join(REPO, "playbooks", "status.yml")
CAPACITY_TASK = "Check the declared quotas against the nodes"
STATUS_TASK = "Check the live quotas against the nodes"


def _ours(kind, meta):
    return meta["name"].startswith("cap-")


@pytest.fixture(scope="module")
def nodes(kueue):
    core = client.CoreV1Api(kueue)
    for name, labels, allocatable, taints in NODES:
        node_labels = dict(labels, **{TEST_LABEL: "true", "kubernetes.io/hostname": name})
        core.create_node({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": node_labels},
                          "spec": {"taints": taints}})
        core.patch_node_status(name, {"status": {"capacity": allocatable, "allocatable": allocatable, "conditions": [
            {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "registered by test_capacity"}]}})
        # kube-apiserver's TaintNodesByCondition admission taints every new Node not-ready:NoSchedule; the node
        # lifecycle controller (not run here) removes it once the Node is Ready: the Node's taints as on a cluster.
        core.patch_node(name, {"spec": {"taints": taints}})
    try:
        yield kueue
    finally:
        delete_kueue_objects(kueue, PLURALS, _ours)
        for name, *_rest in NODES:
            try:
                core.delete_node(name)
            except client.exceptions.ApiException as exc:
                if exc.status != 404:
                    raise


def _kinds(result):
    return sorted((f["kind"], f["flavor"], f["resource"]) for f in result["findings"] if f["severity"] == "warning")


def test_findings_of_kueue_capacity_info_and_the_scaled_to_zero_pool(nodes, arm, arm_control):
    arm_control.agent_pools(ZERO_POOL)
    azure = arm.env()
    aks = {"resource_group": azure["AKS_RESOURCE_GROUP"], "cluster_name": azure["AKS_CLUSTER_NAME"]}
    play = [{"name": "capacity", "hosts": "local", "gather_facts": False, "tasks": [
        {"name": "faulty", "kueueops.aks.kueue_capacity_info": {"resources": FAULTY}},
        {"name": "correct", "kueueops.aks.kueue_capacity_info": {"resources": CORRECT}},
        {"name": "pools", "kueueops.aks.kueue_capacity_info": dict(aks, resources=FAULTY)},
    ]}]
    result = run_playbook(play, env=azure)
    assert result.rc == 0, (result, result.stdout[-3000:])
    faulty = result.result("faulty")
    assert faulty["configuration"] == "declared" and faulty["ok"] is False and faulty["agent_pools"] is None
    assert _kinds(faulty) == [("no-nodes", "cap-none", None), ("over-commit", "cap-gpu", "nvidia.com/gpu"),
                              ("topology", "cap-cpu", None)], faulty["findings"]
    messages = " | ".join(f["message"] for f in faulty["findings"])
    assert "ResourceFlavor cap-none selects no node: no node carries its nodeLabels %s=gpuzero" % POOL in messages
    assert ("ResourceFlavor cap-gpu, nvidia.com/gpu: nominal quota 8 (cap-team 8) is 4.00x what its nodes offer, "
            "2 (node cap-gpu-1)") in messages
    assert "Topology cap-topology level capacity.kueueops.io/rack" in messages
    flavors = dict((f["name"], f) for f in faulty["flavors"])
    assert flavors["cap-cpu"]["nodes"] == ["cap-cpu-1", "cap-cpu-2"]
    assert flavors["cap-cpu"]["topology"] == {"name": "cap-topology", "missing_levels": ["capacity.kueueops.io/rack"]}
    cpu = dict((r["resource"], r) for r in flavors["cap-cpu"]["resources"])
    assert cpu["cpu"]["allocatable"] == "7.72" and cpu["memory"]["allocatable"] == "24Gi"
    assert flavors["cap-gpu"]["untolerated_taints"] == []
    # Each warning reached the play's warnings, naming the flavor, resource, quota and what the nodes offer.
    assert any("4.00x what its nodes offer, 2" in w for w in faulty.get("warnings", [])), faulty.get("warnings")

    correct = result.result("correct")
    assert correct["ok"] is True and correct["findings"] == [] and not correct.get("warnings"), correct
    gpu = correct["flavors"][1]["resources"][0]
    assert (gpu["resource"], gpu["allocatable"], gpu["nominal"], gpu["ratio"]) == ("nvidia.com/gpu", "2", "2", 1.0)

    pools = result.result("pools")
    assert pools["agent_pools"] == ["nodepool1", "gpuzero"]
    assert ("no-nodes", "cap-none", None) not in _kinds(pools), pools["findings"]
    zero = dict((f["name"], f) for f in pools["flavors"])["cap-none"]
    assert zero["pools"] == ["gpuzero"] and zero["node_count"] == 3
    assert zero["resources"] == [{"resource": "nvidia.com/gpu", "allocatable": "3", "nominal": "3", "ratio": 1.0,
                                  "queues": zero["resources"][0]["queues"]}]
    assert any("gpuzero (Standard_NC24ads_A100_v4), counted at its autoscaler maximum 3 (0 node(s) now, minimum 0)"
               in note for note in pools["notes"]), pools["notes"]
    # Read-only in ARM too.
    assert arm_control.writes() == []


def test_strict_fails_before_any_write(nodes):
    before = rbac.snapshot(nodes)
    result = run_playbook(CONFIGURE, extravars={"kueue_resources": FAULTY, "kueue_capacity_check": "strict"})
    assert result.rc != 0 and result.failed == 1, result
    message = result.failure_messages()[0]
    assert message.startswith("strict: 3 capacity finding(s) and the check is strict"), message
    assert "ResourceFlavor cap-gpu, nvidia.com/gpu: nominal quota 8 (cap-team 8) is 4.00x what its nodes offer, 2" \
        in message
    assert "Fix:" in message and "strict is kueue_capacity_check" in message, message
    assert "Traceback" not in result.stdout + result.stderr
    with pytest.raises(AssertionError):
        result.result("Apply the Kueue queue configuration")  # never reached
    assert rbac.snapshot(nodes) == before


def test_configure_queues_warns_nothing_on_a_correct_configuration_and_status_prints_the_table(nodes, tmp_path):
    play = [{"import_playbook": CONFIGURE}, {"import_playbook": STATUS}]
    report_file = tmp_path / "status.md"
    result = run_playbook(play, extravars={"kueue_resources": CORRECT, "kueue_status_fail_on_error": False,
                                           "kueue_status_report": str(report_file)})
    assert result.rc == 0, (result, result.stdout[-3000:])
    declared = result.result(CAPACITY_TASK)
    assert declared["configuration"] == "declared" and declared["ok"] is True and not declared.get("warnings")
    applied = result.result("Apply the Kueue queue configuration")
    assert applied["counts"]["ClusterQueue"]["created"] == 1 and applied["counts"]["ResourceFlavor"]["created"] == 2
    live = result.result(STATUS_TASK)
    assert live["configuration"] == "live"
    ours = [f for f in live["flavors"] if f["name"].startswith("cap-")]
    assert [f["name"] for f in ours] == ["cap-cpu", "cap-gpu"]
    assert not [f for f in live["findings"] if (f["flavor"] or "").startswith("cap-")], live["findings"]
    shown = "\n".join(result.result("Show the capacity")["msg"])
    assert "cap-gpu" in shown and "nvidia.com/gpu" in shown and "1.00x" in shown, shown
    # The report file (kueue_status_report) carries the capacity table too.
    written = report_file.read_text()
    assert "### Capacity" in written and "| cap-gpu |" in written and "1.00x" in written, written


def test_the_helm_install_on_aks_reads_the_agent_pools(nodes, arm, arm_control):
    """Issue 40, item 4: on the Helm path, naming the AKS cluster is allowed (read-only ARM lookups), and the
    capacity check counts the pool scaled to zero. Check mode: the module fixture's Kueue (chart defaults) is not
    re-rendered with the inventory's gates, and nothing is written."""
    arm_control.agent_pools(ZERO_POOL)
    azure = arm.env()
    before = rbac.snapshot(nodes)
    arm_writes = len(arm_control.writes())
    site = os.path.join(REPO, "playbooks", "site.yml")
    # The module fixture's Kueue runs the chart's defaults: the inventory's gates and integrations emptied so the
    # install's plan matches it, and no verify (its expectations are the inventory's; the install is not the point).
    result = run_playbook(site, check=True, env=azure, extravars={
        "kueue_install_method": "helm", "kueue_resources": FAULTY, "kueue_feature_gates": {}, "kueue_integrations": [],
        "kueue_verify": False,
        "kueue_aks_resource_group": azure["AKS_RESOURCE_GROUP"], "kueue_aks_cluster_name": azure["AKS_CLUSTER_NAME"]})
    assert result.rc == 0, (result, result.stdout[-3000:])
    declared = result.result(CAPACITY_TASK)
    assert declared["agent_pools"] == ["nodepool1", "gpuzero"], declared
    zero = dict((f["name"], f) for f in declared["flavors"])["cap-none"]
    assert zero["pools"] == ["gpuzero"] and zero["node_count"] == 3, zero
    # The live configuration is there too (test 3 applied cap-ok): what matters is the flavor of the zero pool.
    kinds = _kinds(declared)
    assert ("no-nodes", "cap-none", None) not in kinds and ("over-commit", "cap-gpu", "nvidia.com/gpu") in kinds, kinds
    assert "Traceback" not in result.stdout + result.stderr
    assert rbac.snapshot(nodes) == before
    assert len(arm_control.writes()) == arm_writes
