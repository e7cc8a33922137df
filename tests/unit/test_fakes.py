"""tests/unit/fakes.py: the one fake cluster of the unit tests answers as kueue_cluster.Cluster does, with its
signatures, so a test that passes on it asks the real one the same thing."""
import inspect

import pytest

from ansible_collections.kueueops.aks.plugins.module_utils.kube import kueue_cluster
from ansible_collections.kueueops.aks.plugins.module_utils.kube.kube_import import ApiException
from tests.unit.fakes import Answers, FakeCluster, Pages, Stream

# What FakeCluster inherits from the real Cluster: built on get, so the canned objects answer them.
INHERITED = {"deployment", "extension_running"}


def test_every_method_of_the_real_cluster_is_faked_with_its_signature():
    real = dict((n, f) for n, f in inspect.getmembers(kueue_cluster.Cluster, inspect.isfunction)
                if not n.startswith("_"))
    assert set(real) >= INHERITED | {"get", "pages", "list", "items", "served", "served_kinds", "create", "apply",
                                     "replace", "patch", "delete", "watch", "request"}
    for name, function in sorted(real.items()):
        faked = getattr(FakeCluster, name)
        if name in INHERITED:
            assert faked is function, name
        else:
            assert faked is not function, "%s is not faked (a fake cluster must never send a request)" % name
            assert list(inspect.signature(faked).parameters) == list(inspect.signature(function).parameters) or \
                name == "request", name


def test_a_list_is_cut_in_pages_as_the_api_server_cuts_it():
    cluster = FakeCluster({"/c": [{"n": i} for i in range(5)]}, resource_version="9")
    assert list(cluster.pages("/c", limit=2)) == [
        ([{"n": 0}, {"n": 1}], {"resourceVersion": "9", "continue": "2", "remainingItemCount": 3}),
        ([{"n": 2}, {"n": 3}], {"resourceVersion": "9", "continue": "4", "remainingItemCount": 1}),
        ([{"n": 4}], {"resourceVersion": "9"})]
    assert cluster.pages_read == ["/c"] * 3 and cluster.calls == [("pages", "/c", {"limit": 2})]
    assert cluster.list("/c") == ([{"n": i} for i in range(5)], "9")
    assert list(FakeCluster({"/c": []}).pages("/c")) == [([], {})]
    assert [len(p) for p, _m in FakeCluster({"/c": list(range(5))}, page_size=3).pages("/c", limit=500)] == [3, 2]


def test_answers_are_copies_given_in_order_and_a_missing_path_is_a_404():
    obj = {"metadata": {"name": "a"}}
    cluster = FakeCluster({"/c": Answers([obj], ApiException(status=410), Pages(([1], {"resourceVersion": "3"})))},
                          {"/o": obj})
    got = cluster.get("/o")
    assert got == obj and got is not obj
    assert cluster.items("/c")[0] is not obj
    with pytest.raises(ApiException):
        cluster.items("/c")
    assert cluster.list("/c") == ([1], "3")
    with pytest.raises(AssertionError, match="no answer left"):
        cluster.items("/c")
    assert cluster.get("/absent") is None
    with pytest.raises(ApiException) as caught:
        cluster.items("/absent")
    assert caught.value.status == 404


def test_the_label_selector_is_applied_and_other_parameters_are_only_recorded():
    def obj(name, **labels):
        return {"metadata": {"name": name, "labels": labels}}
    cluster = FakeCluster({"/c": [obj("a", app="x", tier="1"), obj("b", app="y"), obj("c", tier="2")]})

    def names(**query):
        return [o["metadata"]["name"] for o in cluster.items("/c", **query)]
    assert names(labelSelector="app=x") == ["a"] and names(labelSelector="app==y") == ["b"]
    assert names(labelSelector="app!=x") == ["b", "c"] and names(labelSelector="tier,!app") == ["c"]
    assert names(labelSelector="app=x,tier=2") == [] and names(fieldSelector="metadata.name=a") == ["a", "b", "c"]
    with pytest.raises(AssertionError, match="set-based"):
        names(labelSelector="app in (x, y)")


def test_writes_are_recorded_not_stored_and_a_read_only_cluster_refuses_them():
    cluster = FakeCluster(objects={"/o/a": {"x": 1}, "/o/bad": ApiException(status=409)})
    assert cluster.apply("/o/b", {"y": 2}, "mgr", dry_run=True) == {"y": 2}
    assert cluster.delete("/o/a") is True and cluster.delete("/o/gone") is False
    with pytest.raises(ApiException):
        cluster.create("/o/bad", {})
    assert cluster.get("/o/b") is None and cluster.get("/o/a") == {"x": 1}
    assert cluster.writes == [("apply", "/o/b", {"y": 2}), ("delete", "/o/a", None), ("delete", "/o/gone", None)]
    assert cluster.calls[0] == ("apply", "/o/b", {"fieldManager": "mgr", "dryRun": "All"})
    with pytest.raises(AssertionError, match="nothing may be written"):
        FakeCluster(writable=False).patch("/o/a", {})
    with pytest.raises(ConnectionRefusedError):
        FakeCluster(error=ConnectionRefusedError()).get("/o/a")


def test_whole_lists_discovery_and_the_inherited_reads():
    cluster = FakeCluster({"/c": [1]}, {"/apis/apps/v1/namespaces/ns/deployments/kueue-extension": {"kind": "D"}},
                          served={"g/v1": {"things": "Thing", "things/status": "Thing"}}, whole_lists=False)
    with pytest.raises(AssertionError, match="page by page"):
        cluster.items("/c")
    assert cluster.served("g/v1") == {"things", "things/status"} and cluster.served_kinds("g/v1") == {"Thing"}
    assert cluster.served("other/v1") is None and cluster.served_kinds("other/v1") is None
    assert cluster.extension_running("ns") is True and cluster.extension_running("elsewhere") is False
    with pytest.raises(AssertionError, match="sends no request"):
        cluster.request("GET", "/c")


def test_each_watch_gets_its_stream_and_the_caller_closes_it():
    gone = ApiException(status=410)
    cluster = FakeCluster(watches=Answers([{"type": "ADDED"}], gone, Stream([{"type": "DELETED"}])))
    first = cluster.watch("/c", "5", 30, labelSelector="a=b")
    assert list(first) == [{"type": "ADDED"}] and not first.closed
    first.close()
    with pytest.raises(ApiException):
        list(cluster.watch("/c", "6", 30))
    assert list(cluster.watch("/c", "7", 30)) == [{"type": "DELETED"}]
    assert cluster.events_read == 2 and [s.closed for s in cluster.streams] == [True, False, False]
    assert cluster.calls[0] == ("watch", "/c", {"labelSelector": "a=b", "resourceVersion": "5", "timeoutSeconds": 30})
    with pytest.raises(AssertionError, match="no watch answer"):
        FakeCluster().watch("/c", "1", 1)
