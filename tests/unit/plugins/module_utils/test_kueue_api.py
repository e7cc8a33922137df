# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/module_utils/kueue/kueue_api.py: the one model of Kueue's kinds (no cluster)."""

import pytest

from ansible_collections.kueueops.aks.plugins.module_utils.kueue import kueue_api as api


def test_dependency_order_puts_what_an_object_names_before_it():
    rank = api.kind_rank
    # A MultiKueueCluster names a Secret, a MultiKueueConfig its clusters, an AdmissionCheck a MultiKueueConfig or a
    # ProvisioningRequestConfig, a ResourceFlavor a Topology, a ClusterQueue flavors, checks and a cohort, a
    # LocalQueue its ClusterQueue.
    for referenced, referrer in (('Secret', 'MultiKueueCluster'), ('MultiKueueCluster', 'MultiKueueConfig'),
                                 ('MultiKueueConfig', 'AdmissionCheck'), ('ProvisioningRequestConfig', 'AdmissionCheck'),
                                 ('Topology', 'ResourceFlavor'), ('ResourceFlavor', 'ClusterQueue'),
                                 ('AdmissionCheck', 'ClusterQueue'), ('Cohort', 'ClusterQueue'),
                                 ('ClusterQueue', 'LocalQueue')):
        assert rank(referenced) < rank(referrer), (referenced, referrer)
    # The backup file numbers follow the same order, without repeats.
    numbers = [k.number for k in api.KINDS]
    assert numbers == sorted(set(numbers))
    with pytest.raises(ValueError):
        rank('Workload')


def test_the_derived_tables_agree_with_the_kinds():
    assert api.KIND_ORDER == tuple(k.name for k in api.KINDS)
    assert set(api.PLURALS) == set(api.KIND_ORDER) == set(api.BY_NAME)
    assert all(api.PLURALS[k.name] == k.plural and k.plural.islower() and k.plural.startswith(k.name.lower()[:5])
               for k in api.KINDS)
    assert len(set(api.PLURALS.values())) == len(api.KINDS)
    assert api.NAMESPACED == frozenset(['Secret', 'LocalQueue'])
    assert api.CORE_KINDS == {'Secret': 'v1'}
    assert 'Secret' not in api.KUEUE_KINDS and len(api.KUEUE_KINDS) == len(api.KINDS) - 1
    assert set(api.ALPHA_KINDS) <= set(api.KUEUE_KINDS)
    # Kueue's CRDs: every Kueue kind of a configuration, and Workloads; sorted, once each.
    assert list(api.CRD_PLURALS) == sorted(set(api.CRD_PLURALS))
    assert set(api.CRD_PLURALS) == set(api.PLURALS[k] for k in api.KUEUE_KINDS) | {'workloads'}


def test_obj_key_and_labels():
    lq = {'kind': 'LocalQueue', 'metadata': {'name': 'lq', 'namespace': 'team'}}
    cq = {'kind': 'ClusterQueue', 'metadata': {'name': 'cq'}}
    assert api.obj_key(lq) == ('LocalQueue', 'team', 'lq')
    assert api.obj_key(cq) == ('ClusterQueue', '', 'cq')
    # A manifest without metadata or name still has a key (sortable, with the others).
    assert api.obj_key({'kind': 'Cohort'}) == ('Cohort', '', '')
    assert api.obj_key({'kind': 'Cohort', 'metadata': {'name': None, 'namespace': None}}) == ('Cohort', '', '')
    assert sorted([api.obj_key(lq), api.obj_key({'kind': 'LocalQueue'})])
    assert api.obj_label(lq) == 'LocalQueue team/lq'
    assert api.obj_label(cq) == 'ClusterQueue cq'
    assert api.key_label(('ResourceFlavor', '', 'rf')) == 'ResourceFlavor rf'


def test_strip_server_metadata_keeps_what_the_user_wrote():
    meta = {'name': 'cq', 'uid': 'u', 'resourceVersion': '7', 'generation': 2, 'creationTimestamp': 't',
            'managedFields': [{}], 'selfLink': '/x', 'deletionTimestamp': 't', 'deletionGracePeriodSeconds': 0,
            'ownerReferences': [{'uid': 'o'}], 'labels': {'team': 'a'},
            'annotations': {api.LAST_APPLIED: '{}', 'keep': 'me'}}
    api.strip_server_metadata(meta)
    # A manifest keeps its ownerReferences (the user wrote them); the server's bookkeeping is gone.
    assert meta == {'name': 'cq', 'ownerReferences': [{'uid': 'o'}], 'labels': {'team': 'a'},
                    'annotations': {'keep': 'me'}}
    # An export drops them too (they name uids that do not survive a reinstall), and an annotations left empty.
    meta['annotations'] = {api.LAST_APPLIED: '{}'}
    api.strip_server_metadata(meta, api.EXPORT_METADATA)
    assert meta == {'name': 'cq', 'labels': {'team': 'a'}}
    assert set(api.EXPORT_METADATA) - set(api.SERVER_METADATA) == {'ownerReferences'}


def test_condition_reads_status_conditions_by_type():
    obj = {'status': {'conditions': [{'type': 'Active', 'status': 'False', 'reason': 'FlavorNotFound'},
                                     {'type': 'Admitted', 'status': 'True'}]}}
    assert api.condition(obj, 'Active')['reason'] == 'FlavorNotFound'
    assert api.condition(obj, 'Finished') is None
    assert api.condition_true(obj, 'Admitted') is True
    assert api.condition_true(obj, 'Active') is False
    for empty in (None, {}, {'status': None}, {'status': {'conditions': None}}):
        assert api.condition(empty, 'Active') is None
        assert api.condition_true(empty, 'Active') is False
