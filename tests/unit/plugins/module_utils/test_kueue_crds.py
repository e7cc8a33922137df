"""kueue_crds: what a Kueue CRD says of its versions (pure), and its one reader on a stand-in cluster."""
from __future__ import annotations

import pytest

from ansible_collections.kueueops.aks.plugins.module_utils.kueue import kueue_crds as kc
from tests.unit.fakes import FakeCluster
from tests.unit.plugins.module_utils.test_storage_migration import crd


@pytest.mark.parametrize("stored, needed", [(["v1beta1", "v1beta2"], True), (["v1beta1"], True),
                                            (["v1beta2"], False)])
def test_needs_migration(stored, needed):
    assert kc.needs_migration(crd(stored)) is needed
    assert kc.crd_state(crd(stored))["storage_version"] == "v1beta2"


def test_kueue_crds_keeps_only_kueues_group_sorted():
    other = {"metadata": {"name": "jobs.example.com"}, "spec": {"group": "example.com"}}
    listing = FakeCluster(collections={"/apis/apiextensions.k8s.io/v1/customresourcedefinitions": [
        crd(["v1beta2"], name="workloads.kueue.x-k8s.io"), other, crd(["v1beta2"])]})
    assert [c["metadata"]["name"] for c in kc.kueue_crds(listing)] == [
        "clusterqueues.kueue.x-k8s.io", "workloads.kueue.x-k8s.io"]
