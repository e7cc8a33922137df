"""module_utils/capacity/capacity.py: the capacity check (issue 16, item 2) on fakes of its inputs (pure logic)."""
from decimal import Decimal

import pytest

from ansible_collections.kueueops.aks.plugins.module_utils.capacity import capacity as c
from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import KueueOpsError, ModuleFailure
from ansible_collections.kueueops.aks.plugins.module_utils.kueue.report import capacity_lines
from tests.unit.fakes import FakeCluster

V = "kueue.x-k8s.io/v1beta2"


def node(name, labels, alloc, taints=(), cordoned=False):
    return {"metadata": {"name": name, "labels": dict(labels, **{"kubernetes.io/hostname": name})},
            "spec": dict({"taints": list(taints)}, **({"unschedulable": True} if cordoned else {})),
            "status": {"allocatable": alloc}}


def flavor(name, labels=None, tolerations=(), topology=None):
    spec = {"nodeLabels": labels or {}}
    if tolerations:
        spec["tolerations"] = list(tolerations)
    if topology:
        spec["topologyName"] = topology
    return {"apiVersion": V, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": spec}


def cq(name, flavors, cohort=None):
    """flavors: {flavor: {resource: nominal or (nominal, borrowingLimit, lendingLimit)}}"""
    groups = []
    for fname, resources in flavors.items():
        res = []
        for rname, value in resources.items():
            nominal, borrow, lend = value if isinstance(value, tuple) else (value, None, None)
            entry = {"name": rname, "nominalQuota": nominal}
            if borrow is not None:
                entry["borrowingLimit"] = borrow
            if lend is not None:
                entry["lendingLimit"] = lend
            res.append(entry)
        groups.append({"coveredResources": sorted(resources), "flavors": [{"name": fname, "resources": res}]})
    spec = {"resourceGroups": groups}
    if cohort:
        spec["cohortName"] = cohort
    return {"apiVersion": V, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}


def kinds(result, kind):
    return [f for f in result["findings"] if f["kind"] == kind]


GPU_NODE = node("gpu-1", {"pool": "gpu"}, {"cpu": "23", "memory": "200Gi", "nvidia.com/gpu": "2"})
CPU_NODES = [node("cpu-%d" % i, {"pool": "cpu"}, {"cpu": "3860m", "memory": "12Gi"}) for i in (1, 2)]


def test_a_correct_configuration_has_no_finding():
    objects = [flavor("cpu", {"pool": "cpu"}), flavor("gpu", {"pool": "gpu"}),
               cq("a", {"cpu": {"cpu": "7", "memory": "24Gi"}, "gpu": {"nvidia.com/gpu": 2}})]
    result = c.check(CPU_NODES + [GPU_NODE], objects)
    assert result["findings"] == [] and c.problems(result) == []
    rows = dict((r["resource"], r) for r in result["flavors"][0]["resources"])
    assert rows["cpu"]["allocatable"] == "7.72" and rows["cpu"]["nominal"] == "7"
    assert rows["memory"]["allocatable"] == "24Gi" and rows["memory"]["ratio"] == 1.0
    assert result["flavors"][0]["nodes"] == ["cpu-1", "cpu-2"] and result["flavors"][0]["node_count"] == 2


def test_a_flavor_selecting_no_node_names_its_labels_and_the_quota_lost():
    result = c.check(CPU_NODES, [flavor("gpu", {"pool": "gpu", "zone": "a"}), cq("a", {"gpu": {"nvidia.com/gpu": 4}})])
    (found,) = kinds(result, "no-nodes")
    assert found["flavor"] == "gpu" and found["severity"] == "warning"
    assert "pool=gpu, zone=a" in found["message"] and "nvidia.com/gpu 4" in found["message"]
    # no ratio without nodes, and no second finding for the same cause
    assert [f["kind"] for f in result["findings"]] == ["no-nodes"]


def test_over_commit_ratio_per_resource_names_the_queues_and_the_nodes():
    objects = [flavor("gpu", {"pool": "gpu"}), cq("a", {"gpu": {"nvidia.com/gpu": 4}}), cq("b", {"gpu": {"nvidia.com/gpu": 2}})]
    result = c.check([GPU_NODE], objects)
    (found,) = kinds(result, "over-commit")
    assert found["resource"] == "nvidia.com/gpu"
    assert "nominal quota 6 (a 4, b 2) is 3.00x what its nodes offer, 2 (node gpu-1)" in found["message"]
    assert result["flavors"][0]["resources"][0]["ratio"] == 3.0


def test_quota_of_a_resource_the_nodes_do_not_have():
    result = c.check(CPU_NODES, [flavor("cpu", {"pool": "cpu"}), cq("a", {"cpu": {"nvidia.com/gpu": 1, "cpu": 1}})])
    (found,) = kinds(result, "missing-resource")
    assert found["resource"] == "nvidia.com/gpu" and "have no nvidia.com/gpu" in found["message"]
    assert not kinds(result, "over-commit")


def test_topology_levels_no_selected_node_carries_and_a_missing_topology():
    topo = {"apiVersion": V, "kind": "Topology", "metadata": {"name": "t"},
            "spec": {"levels": [{"nodeLabel": "cloud.example/rack"}, {"nodeLabel": "kubernetes.io/hostname"}]}}
    result = c.check(CPU_NODES, [topo, flavor("cpu", {"pool": "cpu"}, topology="t"),
                                 flavor("cpu2", {"pool": "cpu"}, topology="nope")])
    messages = [f["message"] for f in kinds(result, "topology")]
    assert len(messages) == 2
    assert "Topology t level cloud.example/rack" in messages[0] and "ResourceFlavor cpu carries" in messages[0]
    assert "names Topology nope, which does not exist" in messages[1]
    assert result["flavors"][0]["topology"] == {"name": "t", "missing_levels": ["cloud.example/rack"]}


def test_taints_not_tolerated_are_noted_and_cordoned_nodes_left_out():
    taint = {"key": "sku", "value": "gpu", "effect": "NoSchedule"}
    nodes = [node("g1", {"pool": "gpu"}, {"nvidia.com/gpu": "1"}, [taint]),
             node("g2", {"pool": "gpu"}, {"nvidia.com/gpu": "8"}, cordoned=True),
             node("g3", {"pool": "gpu"}, {"nvidia.com/gpu": "1"}, [dict(taint, effect="PreferNoSchedule")])]
    result = c.check(nodes, [flavor("gpu", {"pool": "gpu"}), cq("a", {"gpu": {"nvidia.com/gpu": 2}})])
    assert result["findings"] == []
    assert result["flavors"][0]["untolerated_taints"] == ["sku=gpu:NoSchedule on node g1"]
    assert any("node g2 is cordoned" in n for n in result["notes"])
    toleration = {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
    tolerated = flavor("gpu", {"pool": "gpu"}, tolerations=[toleration])
    assert c.check(nodes, [tolerated])["flavors"][0]["untolerated_taints"] == []


@pytest.mark.parametrize("toleration,tolerated", [
    ({"key": "sku", "operator": "Exists"}, True),
    ({"operator": "Exists"}, True),
    ({"key": "sku", "value": "cpu"}, False),
    ({"key": "sku", "value": "gpu", "effect": "NoExecute"}, False),
    ({"key": "other", "operator": "Exists"}, False),
])
def test_tolerations_match_as_kubernetes_matches_them(toleration, tolerated):
    assert c.tolerates(toleration, {"key": "sku", "value": "gpu", "effect": "NoSchedule"}) is tolerated


def test_borrowing_reach_follows_the_cohort_limits():
    objects = [flavor("gpu", {"pool": "gpu"}),
               cq("vision", {"gpu": {"nvidia.com/gpu": (8, 4, None)}}, cohort="research"),
               cq("nlp", {"gpu": {"nvidia.com/gpu": (4, None, 2)}}, cohort="research"),
               cq("alone", {"gpu": {"nvidia.com/gpu": 1}})]
    node8 = node("g", {"pool": "gpu"}, {"nvidia.com/gpu": "16"})
    queues = dict((q["owner"], q) for q in c.check([node8], objects)["flavors"][0]["resources"][0]["queues"])
    assert queues["ClusterQueue vision"]["max_with_borrowing"] == "10"  # 8 + min(4, nlp lends 2)
    assert queues["ClusterQueue nlp"]["max_with_borrowing"] == "12"  # 4 + all 8 of vision (no limits)
    assert queues["ClusterQueue alone"]["max_with_borrowing"] == "1"
    assert queues["ClusterQueue vision"]["borrowing_limit"] == "4" and queues["ClusterQueue nlp"]["lending_limit"] == "2"


def test_a_cohorts_own_quota_counts_and_hierarchy_is_one_pool():
    cohort = {"apiVersion": V, "kind": "Cohort", "metadata": {"name": "child"},
              "spec": {"parentName": "root", "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                  {"name": "cpu", "resources": [{"name": "cpu", "nominalQuota": "4"}]}]}]}}
    objects = [flavor("cpu", {"pool": "cpu"}), cohort, cq("a", {"cpu": {"cpu": "2"}}, cohort="child")]
    row = c.check(CPU_NODES, objects)["flavors"][0]["resources"][0]
    assert row["nominal"] == "6"
    assert dict((q["owner"], q.get("max_with_borrowing")) for q in row["queues"]) == {
        "ClusterQueue a": "6", "Cohort child": None}


AKS_POOLS = [
    {"name": "gpu", "vmSize": "Standard_NC24ads_A100_v4", "count": 0, "enableAutoScaling": True, "minCount": 0,
     "maxCount": 3, "maxPods": 30, "nodeLabels": {"sku": "a100"}, "nodeTaints": ["sku=gpu:NoSchedule"], "mode": "User"},
    {"name": "spot", "vmSize": "Standard_D16s_v5", "count": 1, "enableAutoScaling": False, "maxPods": 110,
     "scaleSetPriority": "Spot"},
    {"name": "odd", "vmSize": "Standard_Weird_v9", "count": 2, "maxPods": 110},
]


def test_agent_pools_scaled_to_zero_count_at_their_autoscaler_maximum():
    objects = [flavor("gpu", {"kubernetes.azure.com/agentpool": "gpu", "sku": "a100"}),
               cq("a", {"gpu": {"nvidia.com/gpu": 3, "cpu": 10}})]
    result = c.check([], objects, AKS_POOLS)
    entry = result["flavors"][0]
    assert entry["pools"] == ["gpu"] and entry["node_count"] == 3
    rows = dict((r["resource"], r) for r in entry["resources"])
    assert rows["nvidia.com/gpu"]["allocatable"] == "3" and rows["nvidia.com/gpu"]["ratio"] == 1.0
    # 24 cores: AKS publishes no CPU reservation for that count, so cpu is unknown, not guessed
    assert rows["cpu"]["allocatable"] == "unknown"
    assert [f["kind"] for f in result["findings"]] == ["unknown"] and c.problems(result) == []
    assert any("counted at its autoscaler maximum 3 (0 node(s) now, minimum 0)" in n for n in result["notes"])
    assert entry["untolerated_taints"] == ["sku=gpu:NoSchedule on pool gpu"]


def test_an_unknown_vm_size_is_allocatable_unknown():
    result = c.check([], [flavor("odd", {"agentpool": "odd"}), cq("a", {"odd": {"cpu": 4}})], AKS_POOLS)
    assert result["flavors"][0]["resources"][0]["allocatable"] == "unknown"
    assert any("allocatable unknown: VM size Standard_Weird_v9" in n for n in result["notes"])
    assert not c.problems(result)


def test_spot_pools_carry_the_spot_label_and_taint_and_nodes_of_a_pool_give_its_allocatable():
    spot_node = node("aks-spot-0", {"kubernetes.azure.com/agentpool": "spot",
                                    "kubernetes.azure.com/scalesetpriority": "spot"}, {"cpu": "15", "memory": "60Gi"})
    objects = [flavor("spot", {"kubernetes.azure.com/scalesetpriority": "spot"}), cq("a", {"spot": {"cpu": 20}})]
    result = c.check([spot_node], objects, AKS_POOLS)
    (found,) = result["findings"]
    assert found["kind"] == "over-commit" and "15 (pool spot x1)" in found["message"]
    assert result["flavors"][0]["nodes"] == [] and result["flavors"][0]["pools"] == ["spot"]
    assert "kubernetes.azure.com/scalesetpriority=spot:NoSchedule on pool spot" in \
        c.check([], objects, AKS_POOLS)["flavors"][0]["untolerated_taints"]


def test_aks_allocatable_follows_the_published_formula():
    # D4s_v5: 4 vCPU, 16 GiB; 30 pods: 20*30+50 = 650 MiB kube-reserved, 100 MiB eviction
    alloc, unknown = c.aks_allocatable("Standard_D4s_v5", 30)
    assert unknown == [] and alloc["cpu"] == Decimal("3.86")
    assert alloc["memory"] == 16 * c.GIB - 750 * c.MIB
    # 25% bound: 2 vCPU, 8 GiB, 250 pods -> 5050 MiB > 2 GiB, so 2 GiB
    alloc, unknown = c.aks_allocatable("Standard_D2s_v5", 250)
    assert alloc["memory"] == 6 * c.GIB - 100 * c.MIB
    assert c.aks_allocatable("Standard_D4s_v5", None)[1] == ["memory"]
    assert c.aks_allocatable("nope", 30) == (None, ["cpu", "memory", "nvidia.com/gpu"])


def test_overlay_puts_the_declared_objects_in_place_of_the_live_ones():
    live = [flavor("a", {"x": "1"}), flavor("b")]
    declared = [flavor("a", {"x": "2"}), flavor("c"), "not an object", {"kind": "ResourceFlavor"}]
    out = dict((o["metadata"]["name"], o) for o in c.overlay(live, declared))
    assert sorted(out) == ["a", "b", "c"] and out["a"]["spec"]["nodeLabels"] == {"x": "2"}


def test_unreadable_quantities_are_left_to_the_apply():
    bad = cq("a", {"f": {"cpu": "lots"}})
    assert c.quota_entries(bad) == []


def test_params_refused_before_anything_is_read():
    with pytest.raises(KueueOpsError) as err:
        c.check_params({"resource_group": "rg", "cluster_name": None})
    assert err.value.field == "cluster_name"
    c.check_params({"resources": ["x"]})  # left to kueue_queues, which names it
    with pytest.raises(KueueOpsError) as err:
        c.declared_objects({"src": "/nonexistent/queues.yaml"})
    assert err.value.field == "src" and "does not exist" in err.value.message()


def test_gather_strict_fails_with_every_finding(monkeypatch):
    monkeypatch.setattr(c, "Cluster", lambda api: FakeCluster(collections={"/api/v1/nodes": [GPU_NODE]}))
    monkeypatch.setattr(c, "live_objects", lambda api, notes: [flavor("gpu", {"pool": "gpu"})])
    params = {"resources": [cq("a", {"gpu": {"nvidia.com/gpu": 4}})], "src": None, "strict": False,
              "resource_group": None, "cluster_name": None}
    result = c.gather(None, params)
    assert result["configuration"] == "declared" and not result["ok"] and result["agent_pools"] is None
    assert any("2.00x" in line for line in result["report"])
    with pytest.raises(ModuleFailure) as err:
        c.gather(None, dict(params, strict=True))
    msg = err.value.result["msg"]
    assert msg.startswith("strict: 1 capacity finding(s)") and "gpu, nvidia.com/gpu" in msg and "Fix:" in msg
    read = []
    result = c.gather(None, dict(params, resource_group="rg", cluster_name="aks"),
                      lambda p: read.append(p) or {"properties": {"agentPoolProfiles": AKS_POOLS}})
    assert result["agent_pools"] == ["gpu", "spot", "odd"] and len(read) == 1


def test_report_lines():
    result = c.check([GPU_NODE], [flavor("gpu", {"pool": "gpu"}), cq("a", {"gpu": {"nvidia.com/gpu": 4}})])
    lines = capacity_lines(result, "aks-1")
    assert lines[0] == "aks-1: Capacity of 1 ResourceFlavor(s): 1 warning(s)"
    assert any(line.split() == ["gpu", "1", "node(s)", "nvidia.com/gpu", "2", "4", "2.00x", "a", "4"] for line in lines)
