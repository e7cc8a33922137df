"""storage_migration: which CRDs need a migration, and what a run reports and refuses (pure parts; the migration
against the real API server and etcd is tests/integration/test_upgrade.py)."""
from __future__ import annotations

import pytest

from ansible_collections.kueueops.aks.plugins.module_utils import storage_migration as sm
from ansible_collections.kueueops.aks.plugins.module_utils.errors import KueueOpsError


def crd(stored, storage="v1beta2", name="clusterqueues.kueue.x-k8s.io"):
    return {"metadata": {"name": name}, "spec": {"group": "kueue.x-k8s.io", "scope": "Cluster",
                                                 "names": {"plural": name.split(".")[0]},
                                                 "versions": [{"name": "v1beta1", "storage": storage == "v1beta1"},
                                                              {"name": "v1beta2", "storage": storage == "v1beta2"}]},
            "status": {"storedVersions": list(stored)}}


@pytest.mark.parametrize("stored, needed", [(["v1beta1", "v1beta2"], True), (["v1beta1"], True),
                                            (["v1beta2"], False)])
def test_needs_migration(stored, needed):
    assert sm.needs_migration(crd(stored)) is needed
    assert sm.crd_state(crd(stored))["storage_version"] == "v1beta2"


class Cluster(sm.Cluster):
    """A stand-in holding one CRD list and refusing every write (the run must not write in check mode)."""

    def __init__(self, crds, objects):
        self.crds, self.objects, self.writes = crds, objects, []

    def items(self, api_path, timeout=None, **query):
        return self.crds

    def pages(self, api_path, timeout=None, **query):
        yield self.objects, {}

    def replace(self, *args, **kwargs):
        self.writes.append(args)

    def patch(self, *args, **kwargs):
        self.writes.append(args)


def test_check_mode_counts_and_writes_nothing():
    cluster = Cluster([crd(["v1beta1", "v1beta2"]), crd(["v1beta2"], name="cohorts.kueue.x-k8s.io")],
                      [{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}])
    report = sm.StorageMigration(cluster, check_mode=True).run()
    assert cluster.writes == [] and report["changed"] is False
    assert [(c["name"], c["objects"], c["needs_migration"]) for c in report["crds"]] == [
        ("clusterqueues.kueue.x-k8s.io", 2, True), ("cohorts.kueue.x-k8s.io", 0, False)]


def test_an_unknown_crd_name_is_refused_before_any_write():
    cluster = Cluster([crd(["v1beta1"])], [])
    with pytest.raises(KueueOpsError) as caught:
        sm.StorageMigration(cluster, crds=["nope.kueue.x-k8s.io"]).run()
    assert caught.value.field == "crds" and cluster.writes == []
