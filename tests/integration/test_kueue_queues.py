"""kueueops.aks.kueue_queues end to end (issue 4): the real module through real
ansible-playbook against the real local control plane running the real Kueue 0.19.2
(its CRD schemas, CEL rules, conversion and validating webhooks, and controller).

Every object these tests create is named ``kq-*`` (namespaces ``kq-*``) and
removed afterwards.
"""
from __future__ import annotations

import base64
import copy
import os
import socket
import time

import pytest
import yaml
from kubernetes import client

from .ansible import run_playbook
from .kubeutil import condition, delete_kueue_objects, kueue_plurals, resource_versions, wait_for

GROUP = "kueue.x-k8s.io"
PLURALS = kueue_plurals("Topology", "ResourceFlavor", "Cohort", "AdmissionCheck", "WorkloadPriorityClass", "ClusterQueue",
                        "LocalQueue")
V2 = GROUP + "/v1beta2"
V1 = GROUP + "/v1beta1"


# ---------------------------------------------------------------- fixtures
def _delete_ours(kube):
    core = client.CoreV1Api(kube)
    delete_kueue_objects(kube, PLURALS, lambda _kind, meta: meta["name"].startswith("kq-")
                         or meta.get("namespace", "").startswith("kq-"))
    wait_for("kq- objects to be gone", lambda: not ours(kube), timeout=60)
    for ns in core.list_namespace().items:
        if ns.metadata.name.startswith("kq-") and not ns.metadata.deletion_timestamp:
            core.delete_namespace(ns.metadata.name)
    wait_for("kq- namespaces to be gone",
             lambda: not [n for n in core.list_namespace().items if n.metadata.name.startswith("kq-")], timeout=120)


@pytest.fixture
def clean(kueue):
    _delete_ours(kueue)
    yield kueue
    _delete_ours(kueue)


def ours(kube):
    """{(kind, namespace, name): resourceVersion} of every kq- Kueue object."""
    return dict((key, rv) for key, rv in all_kueue_versions(kube).items()
                if key[2].startswith("kq-") or key[1].startswith("kq-"))


def all_kueue_versions(kube):
    """resourceVersion of EVERY Kueue object in the cluster (not only ours)."""
    return resource_versions(kube, PLURALS)


def get(kube, kind, name, namespace=None):
    custom = client.CustomObjectsApi(kube)
    if namespace:
        return custom.get_namespaced_custom_object(GROUP, "v1beta2", namespace, PLURALS[kind], name)
    return custom.get_cluster_custom_object(GROUP, "v1beta2", PLURALS[kind], name)


def play(*tasks):
    return [{"name": "kueue_queues", "hosts": "local", "gather_facts": False,
             "module_defaults": {"kueueops.aks.kueue_queues": {"kubeconfig": "{{ kueue_kubeconfig }}"}},
             "tasks": list(tasks)}]


def queues_task(name="Apply queues", ignore_errors=False, **args):
    task = {"name": name, "kueueops.aks.kueue_queues": args}
    if ignore_errors:
        task["ignore_errors"] = True
    return task


# --------------------------------------------------------------- the example
def quota(name, nominal, borrowing=None, lending=None):
    out = {"name": name, "nominalQuota": nominal}
    if borrowing is not None:
        out["borrowingLimit"] = borrowing
    if lending is not None:
        out["lendingLimit"] = lending
    return out


def example_config():
    """What a platform team writes: on-demand and spot CPU flavors, a GPU flavor with node labels and a
    toleration, two teams' ClusterQueues sharing a Cohort with borrowing/lending limits and fair sharing,
    three priority classes, a LocalQueue per team namespace."""
    flavors = [
        {"apiVersion": V2, "kind": "ResourceFlavor", "metadata": {"name": "kq-on-demand"},
         "spec": {"nodeLabels": {"kubernetes.azure.com/scalesetpriority": "regular"}}},
        {"apiVersion": V2, "kind": "ResourceFlavor", "metadata": {"name": "kq-spot"},
         "spec": {"nodeLabels": {"kubernetes.azure.com/scalesetpriority": "spot"},
                  "tolerations": [{"key": "kubernetes.azure.com/scalesetpriority", "operator": "Equal",
                                   "value": "spot", "effect": "NoSchedule"}]}},
        {"apiVersion": V2, "kind": "ResourceFlavor", "metadata": {"name": "kq-gpu-a100"},
         "spec": {"nodeLabels": {"accelerator": "nvidia-a100"},
                  "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}},
    ]
    cohort = [{"apiVersion": V2, "kind": "Cohort", "metadata": {"name": "kq-research"},
               "spec": {"fairSharing": {"weight": "1"}}}]

    def team_cq(team, cpu, gpus):
        return {"apiVersion": V2, "kind": "ClusterQueue", "metadata": {"name": "kq-team-%s" % team},
                "spec": {"cohortName": "kq-research", "namespaceSelector": {},
                         "queueingStrategy": "BestEffortFIFO",
                         "fairSharing": {"weight": "1"},
                         "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
                         "resourceGroups": [
                             {"coveredResources": ["cpu", "memory"],
                              "flavors": [{"name": "kq-on-demand", "resources": [
                                  quota("cpu", cpu, borrowing=cpu // 2, lending=cpu // 4),
                                  quota("memory", "%dGi" % (cpu * 4), lending="%dGi" % cpu)]},
                                  {"name": "kq-spot", "resources": [
                                      quota("cpu", cpu * 2), quota("memory", "%dGi" % (cpu * 8))]}]},
                             {"coveredResources": ["nvidia.com/gpu"],
                              "flavors": [{"name": "kq-gpu-a100", "resources": [
                                  quota("nvidia.com/gpu", gpus, borrowing=gpus)]}]}]}}

    cqs = [team_cq("a", 32, 4), team_cq("b", 16, 2)]
    priorities = [{"apiVersion": V2, "kind": "WorkloadPriorityClass", "metadata": {"name": "kq-%s" % n},
                   "value": v, "description": "%s priority" % n}
                  for n, v in (("low", 100), ("medium", 1000), ("high", 10000))]
    lqs = [{"apiVersion": V2, "kind": "LocalQueue", "metadata": {"name": "kq-user-queue", "namespace": "kq-team-%s" % t},
            "spec": {"clusterQueue": "kq-team-%s" % t}} for t in ("a", "b")]
    return flavors + cohort + cqs + priorities + lqs


def test_example_applies_goes_active_is_idempotent_and_prunes(clean):
    kube = clean
    config = example_config()
    started = time.time()
    first = run_playbook(play(queues_task(resources=config, create_namespaces=True, timeout=120)))
    first_seconds = time.time() - started
    assert first.rc == 0, first.stdout[-3000:]
    res = first.result("Apply queues")
    assert res["changed"] is True and first.changed == 1
    assert res["api_version"] == V2
    assert res["counts"]["ClusterQueue"] == {"created": 2, "updated": 0, "unchanged": 0, "pruned": 0}
    assert res["counts"]["LocalQueue"]["created"] == 2
    assert sorted(res["namespaces_created"]) == ["kq-team-a", "kq-team-b"]
    assert res["not_active"] == []
    for name in ("kq-team-a", "kq-team-b"):
        assert condition(get(kube, "ClusterQueue", name), "Active") == "True"
        assert condition(get(kube, "LocalQueue", "kq-user-queue", "kq-" + name[3:]), "Active") == "True"
    before = ours(kube)
    assert len(before) == 11

    # Second run: nothing changes, nothing is written.
    second = run_playbook(play(queues_task(resources=config, create_namespaces=True, timeout=120)))
    assert second.rc == 0, second.stdout[-3000:]
    assert second.changed == 0 and second.host_stats()["changed"] == 0
    res2 = second.result("Apply queues")
    assert all(c["created"] == c["updated"] == 0 for c in res2["counts"].values())
    assert ours(kube) == before

    # Check mode + diff of a prune: reports, writes nothing.
    smaller = [o for o in config if not (o["kind"] == "LocalQueue" and o["metadata"]["namespace"] == "kq-team-b")]
    check = run_playbook(play(queues_task(resources=smaller, prune=True)), check=True, diff=True)
    assert check.rc == 0, check.stdout[-3000:]
    cres = check.result("Apply queues")
    assert cres["changed"] is True
    assert cres["pruned"] == [{"kind": "LocalQueue", "namespace": "kq-team-b", "name": "kq-user-queue"}]
    assert ours(kube) == before

    assert [(d["before_header"], d["after_header"]) for d in cres["diff"]] == [
        ("LocalQueue kq-team-b/kq-user-queue (live)", "(pruned)")]

    # Prune for real: exactly the removed LocalQueue goes; nothing else is written; --diff shows it as check mode did.
    pruned = run_playbook(play(queues_task(resources=smaller, prune=True)), diff=True)
    assert pruned.rc == 0, pruned.stdout[-3000:]
    pres = pruned.result("Apply queues")
    assert pres["changed"] is True
    assert pres["changed_objects"] == [{"kind": "LocalQueue", "namespace": "kq-team-b", "name": "kq-user-queue",
                                        "action": "pruned"}]
    assert [(d["before_header"], d["after_header"]) for d in pres["diff"]] == [
        ("LocalQueue kq-team-b/kq-user-queue (live)", "(pruned)")]
    assert pres["diff"][0]["before"]["metadata"]["name"] == "kq-user-queue" and pres["diff"][0]["after"] == {}
    after = ours(kube)
    expected = dict(before)
    del expected[("LocalQueue", "kq-team-b", "kq-user-queue")]
    assert after == expected
    print("first apply of the example: %.1fs" % first_seconds)


def test_check_mode_diff_and_hold_admission(clean):
    kube = clean
    config = example_config()
    assert run_playbook(play(queues_task(resources=config, create_namespaces=True, timeout=120))).rc == 0
    before = ours(kube)
    changed = copy.deepcopy(config)
    cq_a = [o for o in changed if o["metadata"]["name"] == "kq-team-a"][0]
    cq_a["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = 40

    check = run_playbook(play(queues_task(resources=changed)), check=True, diff=True)
    assert check.rc == 0, check.stdout[-3000:]
    res = check.result("Apply queues")
    assert res["changed"] is True
    assert res["changed_objects"] == [{"kind": "ClusterQueue", "name": "kq-team-a", "action": "updated"}]
    assert len(res["diff"]) == 1
    rg = res["diff"][0]
    assert rg["before"]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] == "32"
    assert rg["after"]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] == "40"
    assert ours(kube) == before

    held = run_playbook(play(queues_task(resources=changed, hold_admission=True, timeout=120)))
    assert held.rc == 0, held.stdout[-3000:]
    hres = held.result("Apply queues")
    assert sorted(hres["held"]) == ["kq-team-a", "kq-team-b"]
    live = get(kube, "ClusterQueue", "kq-team-a")
    assert live["spec"].get("stopPolicy", "None") == "None"
    assert condition(live, "Active") == "True"
    assert str(live["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"]) == "40"
    # the hold leaves no field ownership behind: the next run is a no-op
    again = run_playbook(play(queues_task(resources=changed, hold_admission=True)))
    assert again.rc == 0 and again.changed == 0, again.stdout[-3000:]


def test_v1beta1_input_is_converted_on_a_v1beta2_cluster(clean):
    kube = clean
    v1 = [
        {"apiVersion": V1, "kind": "ResourceFlavor", "metadata": {"name": "kq-default"}},
        {"apiVersion": V1, "kind": "AdmissionCheck", "metadata": {"name": "kq-prov"},
         "spec": {"controllerName": "kueueops.test/no-such-controller", "retryDelayMinutes": 15}},
        {"apiVersion": V1, "kind": "ClusterQueue", "metadata": {"name": "kq-legacy"},
         "spec": {"cohort": "kq-implicit", "namespaceSelector": {},
                  "admissionChecks": ["kq-prov"],
                  "flavorFungibility": {"whenCanBorrow": "Borrow", "whenCanPreempt": "Preempt"},
                  "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                      {"name": "kq-default", "resources": [{"name": "cpu", "nominalQuota": "4",
                                                            "borrowingLimit": "2"}]}]}]}},
    ]
    # The admission check has no controller here, so the ClusterQueue cannot become Active: the
    # wait reports the reason and fails. (A provisioning-request check is refused before any write
    # here, the cluster serving no ProvisioningRequest API: _bad_cases.)
    result = run_playbook(play(queues_task(resources=v1, timeout=20)))
    assert result.rc != 0
    res = result.result("Apply queues")
    assert res["api_version"] == V2
    assert res["implicit_cohorts"] == ["kq-implicit"]
    msg = res["msg"]
    assert "ClusterQueue kq-legacy" in msg and "did not become Active" in msg, msg
    assert [n["name"] for n in res["not_active"]] == ["kq-legacy"]
    assert "AdmissionCheck" in res["not_active"][0]["reason"], res["not_active"]
    cq = get(kube, "ClusterQueue", "kq-legacy")
    assert cq["spec"]["cohortName"] == "kq-implicit"
    assert cq["spec"]["admissionChecksStrategy"] == {"admissionChecks": [{"name": "kq-prov"}]}
    assert cq["spec"]["flavorFungibility"]["whenCanBorrow"] == "MayStopSearch"
    assert cq["spec"]["flavorFungibility"]["whenCanPreempt"] == "MayStopSearch"
    # the same v1beta1 input again is a no-op
    again = run_playbook(play(queues_task(resources=v1, wait=False)))
    assert again.rc == 0 and again.changed == 0, again.stdout[-3000:]


def test_v1alpha1_cohort_and_topology_are_converted(clean):
    """Manifests written for Kueue 0.13 and older: a v1alpha1 Cohort (spec.parent) and Topology are
    stored at the served version (parent -> parentName), and the same input again changes nothing."""
    kube = clean
    alpha = GROUP + "/v1alpha1"
    manifests = [
        {"apiVersion": alpha, "kind": "Topology", "metadata": {"name": "kq-blocks"},
         "spec": {"levels": [{"nodeLabel": "cloud.provider.com/topology-block"},
                             {"nodeLabel": "kubernetes.io/hostname"}]}},
        {"apiVersion": alpha, "kind": "Cohort", "metadata": {"name": "kq-org"}, "spec": {}},
        {"apiVersion": alpha, "kind": "Cohort", "metadata": {"name": "kq-research"},
         "spec": {"parent": "kq-org", "fairSharing": {"weight": "2"}}},
    ]
    first = run_playbook(play(queues_task(resources=manifests, timeout=60)))
    assert first.rc == 0, first.stdout[-3000:]
    res = first.result("Apply queues")
    assert res["api_versions"]["Cohort"] == "v1beta2" and res["api_versions"]["Topology"] == "v1beta2"
    assert res["counts"]["Cohort"]["created"] == 2 and res["counts"]["Topology"]["created"] == 1, res["counts"]
    research = get(kube, "Cohort", "kq-research")
    assert research["spec"]["parentName"] == "kq-org" and "parent" not in research["spec"], research["spec"]
    assert research["spec"]["fairSharing"] == {"weight": "2"}
    assert get(kube, "Topology", "kq-blocks")["spec"] == manifests[0]["spec"]
    again = run_playbook(play(queues_task(resources=manifests, timeout=60)))
    assert again.rc == 0 and again.changed == 0, again.stdout[-3000:]


def _bad_cases():
    base_cq = {"apiVersion": V2, "kind": "ClusterQueue", "metadata": {"name": "kq-bad"},
               "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                   {"name": "kq-on-demand", "resources": [{"name": "cpu", "nominalQuota": "4"}]}]}]}}

    def cq_with(mutate):
        obj = copy.deepcopy(base_cq)
        mutate(obj)
        return obj

    def set_(path, value):
        def mutate(obj):
            target = obj
            for part in path[:-1]:
                target = target[part]
            target[path[-1]] = value
        return mutate

    res0 = ["spec", "resourceGroups", 0, "flavors", 0, "resources", 0]
    return {
        "schema-enum": ([cq_with(set_(["spec", "queueingStrategy"], "Sideways"))],
                        "ClusterQueue kq-bad", "spec.queueingStrategy"),
        "schema-unknown-field": ([cq_with(set_(["spec", "colour"], "blue"))], "ClusterQueue kq-bad", "spec.colour"),
        # Kueue's CEL rule sits at spec; the message names the field it is about (issue 20)
        "cel-borrowing-without-cohort": ([cq_with(set_(res0 + ["borrowingLimit"], "2"))], "ClusterQueue kq-bad",
                                         "spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit: "
                                         "borrowingLimit needs a cohort"),
        "dangling-localqueue": ([{"apiVersion": V2, "kind": "LocalQueue",
                                  "metadata": {"name": "kq-orphan", "namespace": "kq-team-a"},
                                  "spec": {"clusterQueue": "kq-nowhere"}}],
                                "LocalQueue kq-team-a/kq-orphan", "spec.clusterQueue"),
        "cohort-cycle": ([{"apiVersion": V2, "kind": "Cohort", "metadata": {"name": "kq-c1"},
                           "spec": {"parentName": "kq-c2"}},
                          {"apiVersion": V2, "kind": "Cohort", "metadata": {"name": "kq-c2"},
                           "spec": {"parentName": "kq-c1"}}],
                         "Cohort kq-c1", "spec.parentName: cohort cycle kq-c1 -> kq-c2 -> kq-c1"),
        "bad-quantity": ([cq_with(set_(res0 + ["nominalQuota"], "4 cores"))], "ClusterQueue kq-bad",
                         "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota"),
        "missing-namespace": ([{"apiVersion": V2, "kind": "LocalQueue",
                                "metadata": {"name": "kq-q", "namespace": "kq-does-not-exist"},
                                "spec": {"clusterQueue": "kq-team-a"}}],
                              "LocalQueue kq-does-not-exist/kq-q", "metadata.namespace"),
        "aks-name-on-managed-cluster": ([{"apiVersion": V2, "kind": "ResourceFlavor",
                                          "metadata": {"name": "aks-cpu"}}],
                                        "ResourceFlavor aks-cpu", "metadata.name"),
        # this cluster serves no autoscaling.x-k8s.io ProvisioningRequest API
        "provisioning-request-without-api": ([{"apiVersion": V2, "kind": "AdmissionCheck",
                                               "metadata": {"name": "kq-prov"},
                                               "spec": {"controllerName": "kueue.x-k8s.io/provisioning-request"}}],
                                             "AdmissionCheck kq-prov", "autoscaling.x-k8s.io/v1 provisioningrequests"),
    }


def test_bad_input_fails_naming_object_and_field_and_writes_nothing(clean):
    kube = clean
    config = example_config()
    assert run_playbook(play(queues_task(resources=config, create_namespaces=True, timeout=120))).rc == 0
    # A valid change rides along with every bad input: it must not be written either.
    changed = copy.deepcopy(config)
    [o for o in changed if o["metadata"]["name"] == "kq-team-b"][0]["spec"]["resourceGroups"][0]["flavors"][0][
        "resources"][0]["nominalQuota"] = 20
    changed.append({"apiVersion": V2, "kind": "ResourceFlavor", "metadata": {"name": "kq-new-flavor"}})
    before = all_kueue_versions(kube)

    cases = _bad_cases()
    tasks = []
    for name, (bad, _obj, _field) in cases.items():
        args = {"resources": changed + bad, "timeout": 60}
        if name == "aks-name-on-managed-cluster":
            args["aks_extension"] = True
        tasks.append(queues_task(name="bad %s" % name, ignore_errors=True, **args))
    started = time.time()
    result = run_playbook(play(*tasks))
    elapsed = time.time() - started
    assert result.rc == 0, result.stdout[-3000:]  # every failure was ignored
    for name, (_bad, obj, field) in cases.items():
        res = result.result("bad %s" % name)
        assert res.get("failed"), (name, res)
        # ansible-core 2.19 attaches an error summary to every failure; it holds a
        # traceback only when tracebacks are enabled: the message itself never does.
        assert "Traceback" not in res["msg"], (name, res["msg"])
        assert res.get("exception") in (None, "(traceback unavailable)"), (name, res.get("exception"))
        assert obj in res["msg"] and field in res["msg"], (name, res["msg"])
        assert res["problems"], name
        assert any(p["object"] == obj for p in res["problems"]), (name, res["problems"])
    assert all_kueue_versions(kube) == before
    print("%d bad inputs judged in %.1fs" % (len(cases), elapsed))


def test_all_problems_reported_together(clean):
    kube = clean
    before = all_kueue_versions(kube)
    cases = _bad_cases()
    resources = []
    for name in ("dangling-localqueue", "cohort-cycle", "bad-quantity", "missing-namespace"):
        resources.extend(cases[name][0])
    result = run_playbook(play(queues_task(resources=resources, ignore_errors=True)))
    res = result.result("Apply queues")
    assert res.get("failed")
    objects = set(p["object"] for p in res["problems"])
    assert {"LocalQueue kq-team-a/kq-orphan", "Cohort kq-c1", "ClusterQueue kq-bad",
            "LocalQueue kq-does-not-exist/kq-q"} <= objects, res["problems"]
    assert all_kueue_versions(kube) == before


def test_state_absent_deletes_in_reverse_order(clean):
    kube = clean
    config = example_config()
    assert run_playbook(play(queues_task(resources=config, create_namespaces=True, timeout=120))).rc == 0
    gone = run_playbook(play(queues_task(resources=config, state="absent", timeout=120)))
    assert gone.rc == 0, gone.stdout[-3000:]
    res = gone.result("Apply queues")
    assert [o["kind"] for o in res["changed_objects"]][:2] == ["LocalQueue", "LocalQueue"]
    assert res["changed_objects"][-1]["kind"] == "ResourceFlavor"
    wait_for("objects deleted", lambda: not ours(kube), timeout=60)
    again = run_playbook(play(queues_task(resources=config, state="absent")))
    assert again.rc == 0 and again.changed == 0


# ------------------------------------------------------------- concurrency (issue 8)
def _apply_module():
    """module_utils/queues/apply.py as Ansible loads it (the collection linked into the venv's collections folder)."""
    import sys

    from .ansible import COLLECTIONS
    if COLLECTIONS not in sys.path:
        sys.path.insert(0, COLLECTIONS)
    from ansible_collections.kueueops.aks.plugins.module_utils.queues import apply
    return apply


def _run_in_process(kube, resources, seam=None):
    """kueue_queues' engine in this process against the real API server; ``seam(engine)`` runs
    after validation (every dry-run done) and before the first write: another writer's moment."""
    apply = _apply_module()
    original = apply.QueueEngine.dry_run_all

    def dry_run_all(engine, *args, **kwargs):
        out = original(engine, *args, **kwargs)
        if seam:
            seam(engine)
        return out

    apply.QueueEngine.dry_run_all = dry_run_all
    try:
        return apply.run(kube, {"resources": resources, "create_namespaces": True, "wait": False, "timeout": 60,
                                "state": "present", "kueue_namespace": "kueue-system"})
    finally:
        apply.QueueEngine.dry_run_all = original


def test_a_write_between_validation_and_apply_is_not_overwritten(clean):
    """Run A validated the configuration; then another writer (run B, another configuration) changed a
    ClusterQueue; A's write of it fails with a clear conflict message and B's version stays. When B
    wrote exactly what A wants (two runs, same configuration), A succeeds."""
    apply = _apply_module()
    kube = clean
    config = example_config()
    first = run_playbook(play(queues_task(resources=config, create_namespaces=True)))
    assert first.rc == 0, first
    mine = copy.deepcopy(config)
    cq_a = [o for o in mine if o["metadata"]["name"] == "kq-team-a"][0]
    cq_a["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = 40
    theirs = copy.deepcopy(cq_a)
    theirs["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = 48

    def other_writer(body):
        def write(engine):
            engine.server_apply(body)
        return write

    with pytest.raises(apply.QueueProblems) as info:
        _run_in_process(kube, mine, seam=other_writer(theirs))
    text = info.value.message()
    assert "ClusterQueue kq-team-a" in text and "changed by another writer after this run read it" in text, text
    live = get(kube, "ClusterQueue", "kq-team-a")
    assert str(live["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"]) == "48"

    # The same configuration written in between: no conflict, the run succeeds.
    result = _run_in_process(kube, mine, seam=other_writer(cq_a))
    assert result["changed"] is True
    live = get(kube, "ClusterQueue", "kq-team-a")
    assert str(live["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"]) == "40"


def test_two_runs_at_once(clean):
    """Two configure_queues runs at the same moment: with the same configuration both succeed; with
    configurations that disagree, every object ends as one of the two runs wrote it, and a run that lost
    a race says which object and why (never a silent overwrite of a write it did not validate)."""
    import threading

    kube = clean
    config = example_config()
    results = [None, None]

    def run(index, resources):
        results[index] = run_playbook(play(queues_task(resources=resources, create_namespaces=True)))

    threads = [threading.Thread(target=run, args=(i, config)) for i in range(2)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert all(r.rc == 0 for r in results), results
    again = run_playbook(play(queues_task(resources=config, create_namespaces=True)))
    assert again.rc == 0 and again.changed == 0, again

    other = copy.deepcopy(config)
    for obj in other:
        if obj["kind"] == "ClusterQueue":
            obj["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = 64
    mine = copy.deepcopy(config)
    for obj in mine:
        if obj["kind"] == "ClusterQueue":
            obj["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = 8
    threads = [threading.Thread(target=run, args=(0, mine)), threading.Thread(target=run, args=(1, other))]
    [t.start() for t in threads]
    [t.join() for t in threads]
    for result in results:
        if result.rc != 0:
            assert "changed by another writer after this run read it" in " ".join(result.failure_messages()), result
    for name in ("kq-team-a", "kq-team-b"):
        cpu = get(kube, "ClusterQueue", name)["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]
        assert str(cpu["nominalQuota"]) in ("8", "64"), cpu


# ------------------------------------------------------------------ MultiKueue (issue 18, the manager side)
MK_TOKEN = "kq-mk-token-" + os.urandom(8).hex()


def _dead_loopback_port():
    """A loopback port nothing listens on (MultiKueue dials it and fails: the MultiKueueClusters stay inactive; the
    lead's 3-cluster test proves Active and dispatch)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _worker_kubeconfig(user=None):
    return yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "w", "cluster": {"server": "https://127.0.0.1:%d" % _dead_loopback_port(),
                                               "certificate-authority-data": "Q0EtZGF0YQ=="}}],
        "users": [{"name": "w", "user": user or {"token": MK_TOKEN}}],
        "contexts": [{"name": "w", "context": {"cluster": "w", "user": "w"}}], "current-context": "w"})


def _mk_state(kube):
    """{(kind, name): (resourceVersion, labels)} of the kq- MultiKueue wiring, its Secrets and kq- ClusterQueues."""
    custom = client.CustomObjectsApi(kube)
    out = {}
    for kind, plural in (("MultiKueueCluster", "multikueueclusters"), ("MultiKueueConfig", "multikueueconfigs"),
                         ("AdmissionCheck", "admissionchecks"), ("ClusterQueue", "clusterqueues")):
        for item in custom.list_cluster_custom_object(GROUP, "v1beta2", plural)["items"]:
            if item["metadata"]["name"].startswith("kq-"):
                out[(kind, item["metadata"]["name"])] = (item["metadata"]["resourceVersion"],
                                                         item["metadata"].get("labels") or {})
    for item in client.CoreV1Api(kube).list_namespaced_secret("kueue-system").items:
        if item.metadata.name.startswith("kq-"):
            out[("Secret", item.metadata.name)] = (item.metadata.resource_version, item.metadata.labels or {})
    return out


def _delete_mk(kube):
    custom = client.CustomObjectsApi(kube)
    for plural in ("multikueueconfigs", "multikueueclusters"):
        for item in custom.list_cluster_custom_object(GROUP, "v1beta2", plural)["items"]:
            if item["metadata"]["name"].startswith("kq-"):
                custom.delete_cluster_custom_object(GROUP, "v1beta2", plural, item["metadata"]["name"])
    core = client.CoreV1Api(kube)
    for item in core.list_namespaced_secret("kueue-system").items:
        if item.metadata.name.startswith("kq-"):
            core.delete_namespaced_secret(item.metadata.name, "kueue-system")


def test_multikueue_option_wires_prunes_its_own_and_refuses_insecure_kubeconfigs(clean):
    kube = clean
    base = [{"apiVersion": V2, "kind": "ResourceFlavor", "metadata": {"name": "kq-mk-flavor"}},
            {"apiVersion": V2, "kind": "ClusterQueue", "metadata": {"name": "kq-mk-cq"},
             "spec": {"namespaceSelector": {}, "admissionChecksStrategy": {"admissionChecks": []},
                      "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                          {"name": "kq-mk-flavor", "resources": [{"name": "cpu", "nominalQuota": "4"}]}]}]}}]
    workers = [{"name": "kq-worker-1", "kubeconfig": _worker_kubeconfig()},
               {"name": "kq-worker-2", "kubeconfig": _worker_kubeconfig()}]

    def option(clusters):
        return {"config": "kq-mk", "admission_check": "kq-mk-check", "cluster_queues": ["kq-mk-cq"],
                "clusters": clusters}

    labels = {"app.kubernetes.io/managed-by": "kueueops", "kueueops.aks/multikueue": "kq-mk"}
    try:
        # The workers are unreachable, so the ClusterQueue stays inactive (its check has no usable cluster): no wait.
        first = run_playbook(play(queues_task(name="Wire", resources=base, multikueue=option(workers), wait=False),
                                  queues_task(name="Again", resources=base, multikueue=option(workers), wait=False)))
        assert first.rc == 0, first.stdout[-3000:]
        wired = first.result("Wire")
        assert wired["changed"] is True
        assert wired["multikueue"] == {"config": "kq-mk", "admission_check": "kq-mk-check",
                                       "clusters": ["kq-worker-1", "kq-worker-2"], "cluster_queues": ["kq-mk-cq"],
                                       "pruned_clusters": []}
        assert first.result("Again")["changed"] is False
        state = _mk_state(kube)
        assert {k: v[1] for k, v in state.items() if k[0] != "ClusterQueue"} == {
            ("MultiKueueCluster", "kq-worker-1"): labels, ("MultiKueueCluster", "kq-worker-2"): labels,
            ("MultiKueueConfig", "kq-mk"): labels, ("AdmissionCheck", "kq-mk-check"): labels,
            ("Secret", "kq-mk-kq-worker-1"): labels, ("Secret", "kq-mk-kq-worker-2"): labels}
        custom = client.CustomObjectsApi(kube)
        cluster = custom.get_cluster_custom_object(GROUP, "v1beta2", "multikueueclusters", "kq-worker-2")
        assert cluster["spec"]["clusterSource"]["kubeConfig"] == {"locationType": "Secret",
                                                                  "location": "kq-mk-kq-worker-2"}
        config = custom.get_cluster_custom_object(GROUP, "v1beta2", "multikueueconfigs", "kq-mk")
        assert config["spec"]["clusters"] == ["kq-worker-1", "kq-worker-2"]
        check = get(kube, "AdmissionCheck", "kq-mk-check")
        assert check["spec"]["controllerName"] == "kueue.x-k8s.io/multikueue"
        assert check["spec"]["parameters"] == {"apiGroup": GROUP, "kind": "MultiKueueConfig", "name": "kq-mk"}
        assert get(kube, "ClusterQueue", "kq-mk-cq")["spec"]["admissionChecksStrategy"] == {
            "admissionChecks": [{"name": "kq-mk-check"}]}
        secret = client.CoreV1Api(kube).read_namespaced_secret("kq-mk-kq-worker-1", "kueue-system")
        assert base64.b64decode(secret.data["kubeconfig"]).decode() == workers[0]["kubeconfig"]

        # An exec plugin is refused before any write; check mode with diff shows the prune, REDACTED, writes nothing.
        insecure = [workers[0], {"name": "kq-worker-2", "kubeconfig": _worker_kubeconfig(
            {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "kq-helper", "args": [MK_TOKEN]}})}]
        dry = dict(queues_task(name="Check", resources=base, multikueue=option(workers[:1]), wait=False),
                   check_mode=True, diff=True)
        refused = run_playbook(play(queues_task(name="Insecure", ignore_errors=True, resources=base,
                                                multikueue=option(insecure), wait=False), dry))
        assert refused.rc == 0, refused.stdout[-3000:]
        bad = refused.result("Insecure")
        assert bad.get("failed") and "Traceback" not in bad["msg"]
        assert "multikueue.clusters[1].kubeconfig" in bad["msg"] and "users[0].user.exec" in bad["msg"], bad["msg"]
        assert "kueue_multikueue_worker" in bad["msg"] and "InsecureKubeConfig" in bad["msg"]
        dry_res = refused.result("Check")
        assert dry_res["changed"] is True and dry_res["multikueue"]["pruned_clusters"] == ["kq-worker-2"]
        assert sorted((p["kind"], p["name"]) for p in dry_res["pruned"]) == [
            ("MultiKueueCluster", "kq-worker-2"), ("Secret", "kq-mk-kq-worker-2")]
        secret_diffs = [d for d in dry_res["diff"] if d["before_header"].startswith("Secret")]
        assert secret_diffs and all(d["before"]["data"] == {"kubeconfig": "VALUE_REDACTED_BY_KUEUEOPS"}
                                    for d in secret_diffs)
        assert MK_TOKEN not in refused.stdout and "kq-helper" not in refused.stdout
        assert _mk_state(kube) == state

        # Dropping a worker removes its MultiKueueCluster and Secret, with prune false.
        dropped = run_playbook(play(queues_task(name="Drop", resources=base, multikueue=option(workers[:1]),
                                                prune=False, wait=False)))
        assert dropped.rc == 0, dropped.stdout[-3000:]
        res = dropped.result("Drop")
        assert sorted((p["kind"], p["name"]) for p in res["pruned"]) == [
            ("MultiKueueCluster", "kq-worker-2"), ("Secret", "kq-mk-kq-worker-2")]
        after = _mk_state(kube)
        assert ("MultiKueueCluster", "kq-worker-2") not in after and ("Secret", "kq-mk-kq-worker-2") not in after
        assert ("Secret", "kq-mk-kq-worker-1") in after
        config = custom.get_cluster_custom_object(GROUP, "v1beta2", "multikueueconfigs", "kq-mk")
        assert config["spec"]["clusters"] == ["kq-worker-1"]
        assert MK_TOKEN not in first.stdout + dropped.stdout
    finally:
        _delete_mk(kube)
