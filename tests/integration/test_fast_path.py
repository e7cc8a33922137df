"""No dry-run for what is already applied (issue 17, item 1): module_utils/kueue/managed_fields.py decides "an apply
would change nothing" from the live object; these tests hold it to the real API server, the real CRD schemas
and the real Kueue 0.19.2 webhooks and controller.

- Safety, on generated configurations and edits (hypothesis): the local decision never answers "unchanged" where
  the server-side dry-run answers "changed"; and an object re-declared as it was applied is found unchanged
  locally (the fast path is not a path nobody takes).
- End to end through ansible-playbook: a re-run of the example configuration sends no dry-run and writes
  nothing; an object another manager edited, one declared at another API version, a newly declared field and
  hold_admission each fall back to the dry-run and converge.

Every object is named ``kq-*`` (as in test_kueue_queues.py, whose clean-up this file uses) and removed afterwards.
"""
from __future__ import annotations

import copy
import itertools

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from kubernetes import client

from .ansible import run_playbook
from .kubeutil import wait_for
from .test_kueue_queues import _apply_module, _delete_ours, example_config, ours, play, queues_task

GROUP = "kueue.x-k8s.io"
V2 = GROUP + "/v1beta2"
V1 = GROUP + "/v1beta1"
PREFIX = "kq-fp-"  # the generated objects


@pytest.fixture
def clean(kueue):
    _delete_ours(kueue)
    yield kueue
    _delete_ours(kueue)


# ---------------------------------------------------------------- generated configurations
QUANTITY = st.sampled_from(["1", "2", "500m", "1500m", "8", "16"])
MEMORY = st.sampled_from(["1Gi", "1024Mi", "2Gi", "512Mi", "4Gi"])


@st.composite
def flavor(draw):
    bare = draw(st.sampled_from([None, None, None, "no spec", "empty spec"]))
    if bare:  # a flavor that only names itself: no spec at all, or an empty one
        return {"apiVersion": V2, "kind": "ResourceFlavor", "metadata": {"name": PREFIX + "rf"},
                **({} if bare == "no spec" else {"spec": {}})}
    spec = {}
    spec["nodeLabels"] = draw(st.dictionaries(st.sampled_from(["pool", "zone", "gpu"]),
                                              st.sampled_from(["a", "b", "c"]), min_size=1, max_size=2))
    if draw(st.booleans()):
        keys = draw(st.lists(st.sampled_from(["t1", "t2", "t3"]), min_size=1, max_size=3, unique=True))
        spec["tolerations"] = [{"key": k, "operator": "Exists", "effect": "NoSchedule"} for k in keys]
    return {"apiVersion": V2, "kind": "ResourceFlavor", "metadata": {"name": PREFIX + "rf"}, "spec": spec}


@st.composite
def cluster_queue(draw):
    spec = {"resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [{
        "name": PREFIX + "rf",
        "resources": [{"name": "cpu", "nominalQuota": draw(QUANTITY)},
                      {"name": "memory", "nominalQuota": draw(MEMORY)}]}]}]}
    if draw(st.booleans()):
        spec["cohortName"] = PREFIX + draw(st.sampled_from(["c1", "c2"]))
        if draw(st.booleans()):
            spec["resourceGroups"][0]["flavors"][0]["resources"][0]["borrowingLimit"] = draw(QUANTITY)
    if draw(st.booleans()):
        spec["namespaceSelector"] = draw(st.sampled_from([{}, {"matchLabels": {"team": "a"}}]))
    if draw(st.booleans()):
        spec["queueingStrategy"] = draw(st.sampled_from(["BestEffortFIFO", "StrictFIFO"]))
    if draw(st.booleans()):
        spec["preemption"] = {"withinClusterQueue": draw(st.sampled_from(["Never", "LowerPriority"]))}
    meta = {"name": PREFIX + "cq"}
    if draw(st.booleans()):
        meta["labels"] = {"team": draw(st.sampled_from(["a", "b"]))}
    return {"apiVersion": V2, "kind": "ClusterQueue", "metadata": meta, "spec": spec}


@st.composite
def cohort(draw):
    spec = {}
    if draw(st.booleans()):
        spec["parentName"] = PREFIX + "root"
    if draw(st.booleans()):
        spec["fairSharing"] = {"weight": draw(st.sampled_from(["1", "2", "500m", "0.5"]))}
    return {"apiVersion": V2, "kind": "Cohort", "metadata": {"name": PREFIX + "cohort"}, "spec": spec}


@st.composite
def local_queue(draw):
    spec = {"clusterQueue": PREFIX + draw(st.sampled_from(["cq", "other"]))}
    if draw(st.booleans()):
        spec["stopPolicy"] = draw(st.sampled_from(["None", "Hold"]))
    return {"apiVersion": V2, "kind": "LocalQueue", "metadata": {"name": PREFIX + "lq", "namespace": PREFIX + "ns"},
            "spec": spec}


@st.composite
def priority_class(draw):
    obj = {"apiVersion": V2, "kind": "WorkloadPriorityClass", "metadata": {"name": PREFIX + "wpc"},
           "value": draw(st.sampled_from([1, 100, 1000]))}
    if draw(st.booleans()):
        obj["description"] = draw(st.sampled_from(["low", "high"]))
    return obj


def _set_path(obj, path, value):
    target = obj
    for part in path[:-1]:
        target = target[part]
    if value is None:
        target.pop(path[-1], None)
    else:
        target[path[-1]] = value


def _paths(value, prefix=()):
    """Every (path, leaf) of a mapping (lists are leaves: Kueue's lists here are atomic or keyed)."""
    if isinstance(value, dict) and value:
        out = []
        for key, sub in value.items():
            out.extend(_paths(sub, prefix + (key,)))
        return out
    return [(prefix, value)]


@st.composite
def edit(draw, obj):
    """The object as declared next time: the same, a value changed, a quantity respelt, a field dropped or
    added, a list reordered."""
    out = copy.deepcopy(obj)
    how = draw(st.sampled_from(["same", "same", "value", "respell", "drop", "add", "reorder"]))
    leaves = [(p, v) for p, v in _paths(out) if p and p[0] not in ("apiVersion", "kind")
              and p[:2] not in (("metadata", "name"), ("metadata", "namespace"))]
    if how == "value" and leaves:
        path, value = draw(st.sampled_from(leaves))
        if isinstance(value, int):
            _set_path(out, path, value + 1)
        elif path[-1] in ("nominalQuota", "borrowingLimit"):
            _set_path(out, path, "3" if value != "3" else "4")
        elif isinstance(value, str) and path[-1] in ("queueingStrategy",):
            _set_path(out, path, "StrictFIFO" if value == "BestEffortFIFO" else "BestEffortFIFO")
        elif isinstance(value, str) and path[-1] == "stopPolicy":
            _set_path(out, path, "Hold" if value == "None" else "None")
        elif isinstance(value, str) and path[-1] not in ("name", "cohortName", "parentName", "clusterQueue",
                                                         "weight"):
            _set_path(out, path, value + "x" if path[-1] != "withinClusterQueue" else
                      ("Never" if value == "LowerPriority" else "LowerPriority"))
    elif how == "respell" and out["kind"] == "Cohort" and "fairSharing" in out["spec"]:
        out["spec"]["fairSharing"]["weight"] = {"1": "1000m", "2": "2000m", "500m": "0.5", "0.5": "500m"}[
            out["spec"]["fairSharing"]["weight"]]
    elif how == "respell" and out["kind"] == "ClusterQueue":
        res = out["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]
        res["nominalQuota"] = {"1": "1000m", "2": "2000m", "8": "8000m", "16": "16000m", "500m": "0.5",
                               "1500m": "1.5"}[res["nominalQuota"]]
    elif how == "drop" and leaves:
        path, _value = draw(st.sampled_from(leaves))
        if path[-1] not in ("name", "nominalQuota", "coveredResources", "resourceGroups", "value", "flavors"):
            _set_path(out, path, None)
    elif how == "add":
        if out["kind"] == "ClusterQueue":
            out["spec"].setdefault("stopPolicy", "None")
        elif out["kind"] == "ResourceFlavor":
            out.setdefault("spec", {}).setdefault("nodeLabels", {})["extra"] = "yes"
        elif out["kind"] in ("Cohort", "LocalQueue"):
            out.setdefault("metadata", {}).setdefault("labels", {})["extra"] = "yes"
        else:
            out.setdefault("description", "added")
    elif how == "reorder" and out["kind"] == "ResourceFlavor" and len(out.get("spec", {}).get("tolerations") or []) > 1:
        out["spec"]["tolerations"].reverse()
    return how, out


def _other_manager_edit(custom, obj, draw):
    """Sometimes, another manager (kubectl edit) changes a field in between."""
    if obj["kind"] == "ClusterQueue" and draw(st.booleans()):
        custom.patch_cluster_custom_object(GROUP, "v1beta2", "clusterqueues", obj["metadata"]["name"],
                                           {"metadata": {"labels": {"edited": "by-hand"}},
                                            "spec": {"queueingStrategy": "StrictFIFO"}})
        return True
    return False


@pytest.fixture(scope="module")
def engine(kueue):
    apply = _apply_module()
    eng = apply.QueueEngine(kueue)
    eng.discover()
    return eng


def _verdicts(engine, declared):
    """(local reason or None, the dry-run's verdict) for ``declared`` against what is live now."""
    from ansible_collections.kueueops.aks.plugins.module_utils.kueue import kueue_api as api
    from ansible_collections.kueueops.aks.plugins.module_utils.kueue import managed_fields as mf
    from ansible_collections.kueueops.aks.plugins.module_utils.kueue import queues as q

    live = engine.get(api.obj_key(declared))
    local = mf.unchanged_reason(declared, live, engine.manager)
    try:
        dry = engine.server_apply(declared, dry_run=True)
    except client.exceptions.ApiException as exc:
        # An edit Kueue refuses (422, e.g. a borrowingLimit without a cohort), or a conflict with the field
        # another manager now owns (409): not applied, so never "unchanged".
        assert exc.status in (409, 422), exc
        return local, "refused"
    return local, q.apply_changes(dry, live, engine.manager)


NAMES = itertools.count()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(data=st.data())
def test_local_unchanged_is_never_a_change_the_dry_run_sees(clean, engine, data):
    custom = client.CustomObjectsApi(clean)
    kind = data.draw(st.sampled_from(["ResourceFlavor", "ClusterQueue", "WorkloadPriorityClass", "Cohort",
                                      "LocalQueue"]))
    base = data.draw({"ResourceFlavor": flavor(), "ClusterQueue": cluster_queue(), "Cohort": cohort(),
                      "LocalQueue": local_queue(), "WorkloadPriorityClass": priority_class()}[kind])
    # A new name for each example (drawing does not depend on what earlier examples left); the fixture removes
    # them all at the end.
    base["metadata"]["name"] = "%s%s-%d" % (PREFIX, kind.lower(), next(NAMES))
    if kind == "LocalQueue":
        core = client.CoreV1Api(clean)
        if not [n for n in core.list_namespace().items if n.metadata.name == PREFIX + "ns"]:
            core.create_namespace({"metadata": {"name": PREFIX + "ns"}})
    if kind == "ClusterQueue":  # the flavor its quotas name
        engine.server_apply({"apiVersion": V2, "kind": "ResourceFlavor", "metadata": {"name": PREFIX + "rf"},
                             "spec": {"nodeLabels": {"pool": "a"}}})
    engine.server_apply(base)
    # Kueue's controller adds its finalizer (an Update of its own) soon after; decide after it did, too.
    if data.draw(st.booleans()) and kind == "ClusterQueue":
        key = ("ClusterQueue", "", base["metadata"]["name"])
        wait_for("Kueue's finalizer", lambda: engine.get(key)["metadata"].get("finalizers"), timeout=30)
    edited_by_hand = _other_manager_edit(custom, base, data.draw)
    how, declared = data.draw(edit(base))
    local, verdict = _verdicts(engine, declared)
    note("edit=%s by_hand=%s local=%s dry-run=%s" % (how, edited_by_hand, local, verdict))
    if local is None:
        assert verdict == "unchanged", (how, declared)
    if how == "same" and not edited_by_hand:
        # Re-declared as applied: found unchanged without asking the server.
        assert local is None, (local, declared)


def test_a_flavor_that_only_names_itself_is_found_unchanged(clean, engine):
    """A ResourceFlavor declared without spec owns no field, so the API server keeps no managedFields entry of
    this manager for it: the local decision must still find it unchanged, and agree with the dry-run; so must one
    declared with an empty spec (an entry owning spec)."""
    for name, extra in (("bare", {}), ("empty", {"spec": {}})):
        declared = {"apiVersion": V2, "kind": "ResourceFlavor", "metadata": {"name": PREFIX + name}, **extra}
        engine.server_apply(declared)
        assert _verdicts(engine, declared) == (None, "unchanged"), name
        # Another manager's label does not make it changed either (an apply that owns nothing keeps it).
        client.CustomObjectsApi(clean).patch_cluster_custom_object(
            GROUP, "v1beta2", "resourceflavors", PREFIX + name, {"metadata": {"labels": {"by": "hand"}}})
        assert _verdicts(engine, declared) == (None, "unchanged"), name


# ---------------------------------------------------------------- end to end
def test_a_rerun_sends_no_dry_run_and_an_edit_falls_back(clean):
    kube = clean
    config = example_config()
    first = run_playbook(play(queues_task(resources=config, create_namespaces=True, timeout=120)))
    assert first.rc == 0, first.stdout[-3000:]
    assert first.result("Apply queues")["dry_runs"] == len(config)
    before = ours(kube)

    again = run_playbook(play(queues_task(resources=config, create_namespaces=True, timeout=120)))
    assert again.rc == 0 and again.changed == 0, again.stdout[-3000:]
    res = again.result("Apply queues")
    assert res["dry_runs"] == 0, res
    assert all(c["created"] == c["updated"] == 0 and c["unchanged"] > 0 for c in res["counts"].values())
    assert ours(kube) == before

    # Another manager edits a ClusterQueue (kubectl edit): that object alone is dry-run, which finds the
    # conflict; with force it is taken back.
    custom = client.CustomObjectsApi(kube)
    custom.patch_cluster_custom_object(GROUP, "v1beta2", "clusterqueues", "kq-team-a",
                                       {"spec": {"queueingStrategy": "StrictFIFO"}})
    refused = run_playbook(play(queues_task(resources=config, create_namespaces=True, ignore_errors=True)))
    problems = refused.result("Apply queues")["problems"]
    assert [(p["object"], p["field"]) for p in problems] == [("ClusterQueue kq-team-a", "spec.queueingStrategy")]
    restored = run_playbook(play(queues_task(resources=config, create_namespaces=True, force=True, timeout=120)))
    assert restored.rc == 0, restored.stdout[-3000:]
    res = restored.result("Apply queues")
    assert res["dry_runs"] == 1, res
    assert [(o["kind"], o["name"], o["action"]) for o in res["changed_objects"]] == [
        ("ClusterQueue", "kq-team-a", "updated")]
    live = custom.get_cluster_custom_object(GROUP, "v1beta2", "clusterqueues", "kq-team-a")
    assert live["spec"]["queueingStrategy"] == "BestEffortFIFO"

    # A newly declared field is judged by the dry-run; so is an object declared at another API version (here
    # v1beta1, converted to v1beta2 before it is sent), even though it converts to what is applied.
    changed = copy.deepcopy(config)
    flavor_obj = next(o for o in changed if o["metadata"]["name"] == "kq-on-demand")
    flavor_obj["spec"]["nodeLabels"]["tier"] = "standard"
    older = next(o for o in changed if o["kind"] == "WorkloadPriorityClass")
    older["apiVersion"] = V1
    before = ours(kube)
    check = run_playbook(play(queues_task(resources=changed, create_namespaces=True)), check=True)
    assert check.rc == 0, check.stdout[-3000:]
    res = check.result("Apply queues")
    assert res["dry_runs"] == 2, res
    assert [(o["kind"], o["name"]) for o in res["changed_objects"]] == [("ResourceFlavor", "kq-on-demand")]
    assert ours(kube) == before  # check mode wrote nothing
    held = run_playbook(play(queues_task(resources=changed, create_namespaces=True, hold_admission=True,
                                         timeout=120)))
    assert held.rc == 0, held.stdout[-3000:]
    res = held.result("Apply queues")
    # hold_admission writes every ClusterQueue (held, then released) once anything changes: all are dry-run.
    cqs = sorted(o["metadata"]["name"] for o in config if o["kind"] == "ClusterQueue")
    assert res["dry_runs"] == 2 + len(cqs), res
    assert sorted(res["held"]) == cqs
    final = run_playbook(play(queues_task(resources=changed, create_namespaces=True, timeout=120)))
    assert final.rc == 0 and final.changed == 0, final.stdout[-3000:]
    assert final.result("Apply queues")["dry_runs"] == 1  # the priority class declared at v1beta1
