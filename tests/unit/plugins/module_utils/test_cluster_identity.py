"""Unit tests for plugins/module_utils/kube/cluster_identity.py (issue 40): the comparison and the messages (pure logic;
the refusal of another cluster's backup on two real local clusters is in tests/integration/test_fleet.py)."""
from __future__ import annotations

import json

import pytest

from ansible_collections.kueueops.aks.plugins.module_utils.kube import cluster_identity as ci
from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import KueueOpsError
from tests.unit.fakes import FakeCluster

A = {'uid': 'uid-a', 'server': 'https://127.0.0.1:6443', 'context': 'ctx-a', 'resource_id': None, 'name': None}
B = {'uid': 'uid-b', 'server': 'https://127.0.0.2:6443', 'context': 'ctx-b', 'resource_id': None, 'name': None}


def test_read_takes_the_kube_system_uid_and_keeps_the_names():
    cluster = FakeCluster(objects={'/api/v1/namespaces/kube-system': {'metadata': {'name': 'kube-system', 'uid': 'u-1'}}})
    got = ci.read(cluster, server='https://x', context='c', resource_id='/subscriptions/s/x', name='n')
    assert got == {'uid': 'u-1', 'server': 'https://x', 'context': 'c', 'resource_id': '/subscriptions/s/x',
                   'name': 'n'}
    assert cluster.paths() == ['/api/v1/namespaces/kube-system']


def test_read_without_kube_system_names_the_kubeconfig():
    with pytest.raises(KueueOpsError) as err:
        ci.read(FakeCluster())
    assert err.value.field == 'kubeconfig' and 'kube-system' in err.value.message()


def test_same_compares_the_uid_only():
    assert ci.same(A, dict(A, context='renamed', server='https://other'))
    assert not ci.same(A, B)
    assert not ci.same({}, A)
    assert not ci.same(None, A)


def test_check_passes_its_own_cluster_and_refuses_another_naming_both():
    assert ci.check(A, A, 'the backup /b', 'src', 'allow_other_cluster') is True
    with pytest.raises(KueueOpsError) as err:
        ci.check(A, B, 'the backup /b', 'src', 'allow_other_cluster')
    text = err.value.message()
    assert err.value.field == 'src'
    for part in ('context ctx-a', 'uid-a', 'context ctx-b', 'uid-b', 'allow_other_cluster: true', 'nothing was changed'):
        assert part in text, text


def test_check_refuses_a_backup_without_identity_and_allow_lets_both_through():
    with pytest.raises(KueueOpsError) as err:
        ci.check({'server': 'https://old'}, A, 'the backup /b', 'verify_path', 'allow_other_cluster')
    assert 'records no cluster identity' in err.value.message() and 'uid-a' in err.value.message()
    assert ci.check({}, A, 'the backup /b', 'src', 'allow_other_cluster', allow=True) is False
    assert ci.check(B, A, 'the backup /b', 'src', 'allow_other_cluster', allow=True) is False


def test_label_names_the_aks_resource_once():
    rid = '/subscriptions/s/resourceGroups/rg/providers/Microsoft.ContainerService/managedClusters/aks-prod'
    text = ci.label({'uid': 'u', 'resource_id': rid, 'name': 'aks-prod', 'context': 'prod'})
    assert text == 'AKS %s, context prod, kube-system UID u' % rid
    assert ci.label({}) == 'no kube-system UID recorded'


def test_of_backup_reads_the_manifest_and_tells_a_plain_folder(tmp_path):
    assert ci.of_backup(str(tmp_path)) is None
    assert ci.of_backup(None) is None
    (tmp_path / 'manifest.json').write_text(json.dumps({'format': 'something/else', 'cluster': A}))
    assert ci.of_backup(str(tmp_path)) is None
    (tmp_path / 'manifest.json').write_text(json.dumps({'format': 'kueueops.aks/kueue_backup/v1', 'cluster': A}))
    assert ci.of_backup(str(tmp_path)) == A
    (tmp_path / 'manifest.json').write_text(json.dumps({'format': 'kueueops.aks/kueue_backup/v1'}))
    assert ci.of_backup(str(tmp_path)) == {}
    (tmp_path / 'manifest.json').write_text('not json')
    assert ci.of_backup(str(tmp_path)) is None
    assert ci.of_backup(str(tmp_path / 'manifest.json')) is None
