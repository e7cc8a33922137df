"""storage_migration: which CRDs need a migration, and what a run reports and refuses (pure parts; the migration
against the real API server and etcd is tests/integration/test_upgrade.py)."""
from __future__ import annotations

import pytest

from ansible_collections.kueueops.aks.plugins.module_utils.upgrade import storage_migration as sm
from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import KueueOpsError
from ansible_collections.kueueops.aks.plugins.module_utils.kube.kueue_cluster import path
from ansible_collections.kueueops.aks.plugins.module_utils.kueue.kueue_crds import storage_version
from tests.unit.fakes import FakeCluster

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def crd(stored, storage="v1beta2", name="clusterqueues.kueue.x-k8s.io"):
    return {"metadata": {"name": name}, "spec": {"group": "kueue.x-k8s.io", "scope": "Cluster",
                                                 "names": {"plural": name.split(".")[0]},
                                                 "versions": [{"name": "v1beta1", "storage": storage == "v1beta1"},
                                                              {"name": "v1beta2", "storage": storage == "v1beta2"}]},
            "status": {"storedVersions": list(stored)}}


def listing(crds, objects):
    """The CRDs, each also read by name, and the same ``objects`` in the collection of each at its storage version."""
    collections = {CRDS: crds}
    for c in crds:
        collections[path("kueue.x-k8s.io/%s" % storage_version(c), c["spec"]["names"]["plural"])] = objects
    return {"objects": dict((CRDS + "/" + c["metadata"]["name"], c) for c in crds), "collections": collections}


def test_check_mode_counts_and_writes_nothing():
    cluster = FakeCluster(**listing([crd(["v1beta1", "v1beta2"]), crd(["v1beta2"], name="cohorts.kueue.x-k8s.io")],
                                    [{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}]))
    report = sm.StorageMigration(cluster, check_mode=True).run()
    assert cluster.writes == [] and report["changed"] is False
    assert [(c["name"], c["objects"], c["needs_migration"]) for c in report["crds"]] == [
        ("clusterqueues.kueue.x-k8s.io", 2, True), ("cohorts.kueue.x-k8s.io", 0, False)]


def test_an_unknown_crd_name_is_refused_before_any_write():
    cluster = FakeCluster(**listing([crd(["v1beta1"])], []))
    with pytest.raises(KueueOpsError) as caught:
        sm.StorageMigration(cluster, crds=["nope.kueue.x-k8s.io"]).run()
    assert caught.value.field == "crds" and cluster.writes == []


class Breaking(FakeCluster):
    """Two CRDs of three objects each, listed one object a page (the run's page_size) with the remainingItemCount the
    API server gives; the connection is refused from the fifth write on."""

    def __init__(self, crds, objects, fail_after):
        FakeCluster.__init__(self, **listing(crds, objects))
        self.fail_after = fail_after

    def replace(self, *args, **kwargs):
        if len(self.writes) >= self.fail_after:
            raise ConnectionRefusedError(111, "Connection refused")
        return FakeCluster.replace(self, *args, **kwargs)


def test_a_run_cut_short_says_how_many_objects_remain_in_every_crd_left():
    crds = [crd(["v1beta1", "v1beta2"]), crd(["v1beta1", "v1beta2"], name="localqueues.kueue.x-k8s.io")]
    cluster = Breaking(crds, [{"metadata": {"name": n}} for n in "abc"], fail_after=4)
    with pytest.raises(sm.MigrationInterrupted) as caught:
        sm.StorageMigration(cluster, page_size=1).run()
    report = caught.value.report
    # clusterqueues: 3 rewritten and trimmed (the patch is the 4th write); localqueues: refused at its first write.
    assert report["trimmed"] == ["clusterqueues.kueue.x-k8s.io"] and report["rewritten"] == 3
    assert report["remaining"] == 3 and report["crds_remaining"] == ["localqueues.kueue.x-k8s.io"]
    msg = caught.value.message()
    assert "stopped at CRD localqueues.kueue.x-k8s.io after rewriting 0 of its 3 objects" in msg
    assert "3 object(s) of 1 CRD(s) remain" in msg and "Fix:" in msg and "run the same task" in msg
    assert "(the API server stopped answering: connection refused)" in msg
