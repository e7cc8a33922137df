# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/module_utils/backup/backup.py (no cluster)."""

import copy
import datetime
import errno
import json
import os
import stat

import pytest
import yaml

from ansible_collections.kueueops.aks.plugins.module_utils.backup import backup as b
from ansible_collections.kueueops.aks.plugins.module_utils.kueue import reader as r
from ansible_collections.kueueops.aks.plugins.module_utils.kueue import kueue_api as api
from ansible_collections.kueueops.aks.plugins.module_utils.kueue import queues as q
from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import KueueOpsError
from tests.unit.fakes import FakeCluster

V2 = 'kueue.x-k8s.io/v1beta2'
NOW = datetime.datetime(2025, 6, 1, 12, 0, 0, tzinfo=datetime.timezone.utc)


def live_cq(name, **extra_meta):
    meta = {'name': name, 'uid': 'u-' + name, 'resourceVersion': '42', 'generation': 3,
            'creationTimestamp': '2025-01-01T00:00:00Z', 'selfLink': '/x',
            'managedFields': [{'manager': 'kueueops', 'operation': 'Apply'}],
            'finalizers': ['kueue.x-k8s.io/resource-in-use'],
            'annotations': {'kubectl.kubernetes.io/last-applied-configuration': '{}'}}
    meta.update(extra_meta)
    return {'apiVersion': V2, 'kind': 'ClusterQueue', 'metadata': meta,
            'spec': {'namespaceSelector': {}, 'cohortName': 'research'},
            'status': {'pendingWorkloads': 3, 'conditions': [{'type': 'Active', 'status': 'True'}]}}


def lq(name, namespace, target='team'):
    return {'apiVersion': V2, 'kind': 'LocalQueue', 'metadata': {'name': name, 'namespace': namespace},
            'spec': {'clusterQueue': target}}


def rf(name):
    return {'apiVersion': V2, 'kind': 'ResourceFlavor', 'metadata': {'name': name}, 'spec': {}}


# --------------------------------------------------------------- normalise
def test_normalise_drops_server_fields_status_and_kueue_finalizers():
    obj = live_cq('team', ownerReferences=[{'uid': 'x'}], deletionTimestamp='2025-01-01T00:00:00Z',
                  labels={}, finalizers=['kueue.x-k8s.io/resource-in-use', 'example.com/keep'])
    before = copy.deepcopy(obj)
    out = r.normalise(obj)
    assert obj == before  # the input is untouched
    assert out == {'apiVersion': V2, 'kind': 'ClusterQueue',
                   'metadata': {'name': 'team', 'finalizers': ['example.com/keep']},
                   'spec': {'namespaceSelector': {}, 'cohortName': 'research'}}


def test_normalise_keeps_user_labels_and_annotations_and_fills_kind():
    obj = {'metadata': {'name': 'a', 'labels': {'team': 'x'},
                        'annotations': {'note': 'keep', 'kubectl.kubernetes.io/last-applied-configuration': '{}'}},
           'spec': {}}
    out = r.normalise(obj, 'ResourceFlavor', V2)
    assert out == {'apiVersion': V2, 'kind': 'ResourceFlavor',
                   'metadata': {'name': 'a', 'labels': {'team': 'x'}, 'annotations': {'note': 'keep'}}, 'spec': {}}


def test_normalised_object_is_accepted_by_kueue_queues():
    """The backup's manifests are what kueue_queues reads: no problem, same object."""
    obj = r.normalise(live_cq('team'))
    problems = []
    served = dict((k, 'v1beta2') for k in api.KIND_ORDER)
    out = q.normalise_all([('x', obj)], served, problems)
    assert problems == []
    assert out == [obj]


def test_wpc_top_level_fields_survive():
    obj = {'apiVersion': V2, 'kind': 'WorkloadPriorityClass', 'metadata': {'name': 'p', 'uid': 'u'},
           'value': 100, 'description': 'low'}
    assert r.normalise(obj) == {'apiVersion': V2, 'kind': 'WorkloadPriorityClass', 'metadata': {'name': 'p'},
                                'value': 100, 'description': 'low'}


def test_aks_managed_only_on_extension_clusters():
    assert r.is_aks_managed(rf('aks-default'), True)
    assert not r.is_aks_managed(rf('aks-default'), False)
    assert not r.is_aks_managed(rf('default'), True)


def test_multikueue_secret_refs_both_versions_and_path_ignored():
    v2 = {'kind': 'MultiKueueCluster', 'metadata': {'name': 'w1'},
          'spec': {'clusterSource': {'kubeConfig': {'location': 'w1-secret', 'locationType': 'Secret'}}}}
    v1 = {'kind': 'MultiKueueCluster', 'metadata': {'name': 'w2'}, 'spec': {'kubeConfig': {'location': 'w1-secret'}}}
    path = {'kind': 'MultiKueueCluster', 'metadata': {'name': 'w3'},
            'spec': {'kubeConfig': {'location': '/etc/kc', 'locationType': 'Path'}}}
    profile = {'kind': 'MultiKueueCluster', 'metadata': {'name': 'w4'},
               'spec': {'clusterSource': {'clusterProfileRef': {'name': 'p'}}}}
    assert q.multikueue_secret_refs([v2, v1, path, profile], 'kueue-system') == {
        ('kueue-system', 'w1-secret'): ['w1', 'w2']}


# ------------------------------------------------------------------ layout
def test_file_names_follow_dependency_order_and_restore_tool():
    names = [b.file_name(k) for k in api.KIND_ORDER]
    assert names == sorted(names)
    assert b.file_name('ResourceFlavor') == '10-resourceflavors.yaml'
    assert b.file_name('LocalQueue') == '70-localqueues.yaml'
    assert b.file_name('Secret') == '01-secrets.yaml'
    assert b.file_name('MultiKueueCluster') == '02-multikueueclusters.yaml'
    assert b.file_name('MultiKueueConfig') == '03-multikueueconfigs.yaml'
    # Every kind is a .yaml file that kueue_queues restores, in kueue_queues' own dependency order.
    assert all(n.endswith('.yaml') for n in names)
    assert set(b.restore_tool(k) for k in api.KIND_ORDER) == {'kueueops.aks.kueue_queues'}
    with pytest.raises(ValueError):
        b.file_name('Workload')
    with pytest.raises(ValueError):
        b.restore_tool('Workload')


def test_dump_is_sorted_and_deterministic():
    objs = [lq('b', 'ns2'), lq('a', 'ns2'), lq('z', 'ns1')]
    one = b.dump_objects('LocalQueue', V2, objs)
    two = b.dump_objects('LocalQueue', V2, list(reversed(copy.deepcopy(objs))))
    assert one == two
    docs = [d for d in yaml.safe_load_all(one) if d]
    assert [(d['metadata']['namespace'], d['metadata']['name']) for d in docs] == [
        ('ns1', 'z'), ('ns2', 'a'), ('ns2', 'b')]
    text = one.decode()
    assert text.startswith('# kueueops.aks.kueue_backup: LocalQueue (%s), 3 object(s)' % V2)
    # keys sorted within each document
    assert text.index('apiVersion') < text.index('kind:') < text.index('metadata:') < text.index('spec:')


def test_dump_round_trips_tricky_scalars():
    obj = {'apiVersion': V2, 'kind': 'ResourceFlavor',
           'metadata': {'name': 'x', 'annotations': {'a': '2025-01-01T00:00:00Z', 'b': '1', 'c': 'yes',
                                                     'd': 'long ' * 100, 'e': 'ünï', 'f': 'null'}},
           'spec': {'nodeLabels': {'n': '0x10'}}}
    data = b.dump_objects('ResourceFlavor', V2, [obj])
    assert [d for d in yaml.safe_load_all(data) if d] == [obj]
    assert len(data.decode().splitlines()) < 20  # no folding of long strings


def test_empty_kind_has_a_header_only_file():
    data = b.dump_objects('Topology', V2, [])
    assert [d for d in yaml.safe_load_all(data) if d is not None] == []
    assert data.count(b'\n') == 1


def test_render_and_manifest():
    files = b.render({'LocalQueue': [lq('a', 'ns')], 'ResourceFlavor': [rf('x'), rf('y')], 'Topology': []},
                     {'LocalQueue': V2, 'ResourceFlavor': V2, 'Topology': V2})
    assert [f[0] for f in files] == ['05-topologies.yaml', '10-resourceflavors.yaml', '70-localqueues.yaml']
    manifest = b.build_manifest(files, NOW, {'server': 'https://127.0.0.1:6443'}, {'version': 'v0.19.2'},
                                b.Contents({'LocalQueue': 'v1beta2', 'ResourceFlavor': 'v1beta2', 'Topology': 'v1beta2'},
                                           [], {}, False))
    assert manifest['created'] == '2025-06-01T12:00:00Z'
    assert manifest['counts'] == {'LocalQueue': 1, 'ResourceFlavor': 2, 'Topology': 0}
    assert manifest['files']['10-resourceflavors.yaml']['sha256'] == b.sha256_bytes(files[1][3])
    assert manifest['files']['10-resourceflavors.yaml']['restore_with'] == b.QUEUES_TOOL
    text = b.dump_manifest(manifest)
    assert json.loads(text.decode()) == manifest
    assert text == b.dump_manifest(json.loads(text.decode()))


def test_folder_name_and_image_tag():
    assert b.folder_name('aks prod/1', NOW) == 'aks-prod-1-20250601T120000Z'
    assert b.folder_name(None, NOW) == 'kueue-20250601T120000Z'
    assert r.image_tag('registry.k8s.io/kueue/kueue:v0.19.2') == 'v0.19.2'
    assert r.image_tag('localhost:5000/kueue:v0.18.4@sha256:abc') == 'v0.18.4'
    assert r.image_tag('localhost:5000/kueue') is None
    assert r.image_tag(None) is None


# ------------------------------------------------------------ write / verify
def write_sample(tmp_path, name='bk', **kwargs):
    files = b.render({'ResourceFlavor': [rf('x')], 'LocalQueue': [lq('a', 'ns')]},
                     {'ResourceFlavor': V2, 'LocalQueue': V2})
    manifest = b.build_manifest(files, NOW, {}, {}, b.Contents({'ResourceFlavor': 'v1beta2', 'LocalQueue': 'v1beta2'},
                                                               [], {}, False))
    path = str(tmp_path / name)
    return b.write_backup(path, [(f[0], f[3]) for f in files], b.dump_manifest(manifest), **kwargs), manifest


def test_write_is_private_whatever_the_umask(tmp_path):
    old = os.umask(0)
    try:
        path, _manifest = write_sample(tmp_path)
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o700
    names = sorted(os.listdir(path))
    assert names == ['10-resourceflavors.yaml', '70-localqueues.yaml', 'manifest.json']
    for name in names:
        assert stat.S_IMODE(os.stat(os.path.join(path, name)).st_mode) == 0o600
    assert os.listdir(str(tmp_path)) == ['bk']  # no temporary folder left
    assert b.verify_backup(path)['counts'] == {'ResourceFlavor': 1, 'LocalQueue': 1}
    assert [o['metadata']['name'] for o in b.load_objects(path)] == ['x', 'a']


def test_existing_backup_is_refused(tmp_path):
    path, _m = write_sample(tmp_path)
    before = open(os.path.join(path, 'manifest.json'), 'rb').read()
    with pytest.raises(b.BackupExists) as err:
        write_sample(tmp_path)
    assert 'refusing to overwrite' in err.value.message()
    assert open(os.path.join(path, 'manifest.json'), 'rb').read() == before
    assert os.listdir(str(tmp_path)) == ['bk']


def test_unique_adds_a_suffix(tmp_path):
    first, _m = write_sample(tmp_path)
    second, _m = write_sample(tmp_path, unique=True)
    assert second == first + '-2'


def test_name_taken_while_writing_is_refused_and_cleaned(tmp_path):
    def squat(_temp):
        os.mkdir(str(tmp_path / 'bk'))
    with pytest.raises(b.BackupExists):
        write_sample(tmp_path, before_commit=squat)
    assert os.listdir(str(tmp_path)) == ['bk'] and os.listdir(str(tmp_path / 'bk')) == []


def test_failed_verification_leaves_nothing(tmp_path):
    def fail(temp):
        assert b.check_backup(temp) == []
        raise KueueOpsError('differs', field='verify')
    with pytest.raises(KueueOpsError):
        write_sample(tmp_path, before_commit=fail)
    assert os.listdir(str(tmp_path)) == []


def test_disk_full_leaves_nothing_and_names_dest(tmp_path, monkeypatch):
    real_write = os.write
    calls = []

    def full(fd, data):
        calls.append(fd)
        if len(calls) > 1:
            raise OSError(errno.ENOSPC, 'No space left on device')
        return real_write(fd, data)
    monkeypatch.setattr(b.os, 'write', full)
    with pytest.raises(KueueOpsError) as err:
        write_sample(tmp_path)
    monkeypatch.undo()
    message = err.value.message()
    assert message.startswith('dest: cannot write the backup under %s: No space left on device' % tmp_path)
    assert 'Fix: free space' in message
    assert os.listdir(str(tmp_path)) == []


def test_file_in_the_way(tmp_path):
    blocker = tmp_path / 'file'
    blocker.write_text('x')
    with pytest.raises(KueueOpsError) as err:
        b.prepare_parent(str(blocker / 'sub'), 'dest')
    assert 'is not a folder' in err.value.message() and err.value.field == 'dest'
    with pytest.raises(KueueOpsError) as err:
        b.write_backup(str(blocker / 'bk'), [], b'{}', field='path')
    assert err.value.field == 'path' and 'nothing was written' in err.value.message()


def test_prepare_parent_creates_and_removes(tmp_path):
    target = str(tmp_path / 'a' / 'b')
    created = b.prepare_parent(target, 'dest')
    assert created == [str(tmp_path / 'a'), target]
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o700
    b.remove_created(created)
    assert os.listdir(str(tmp_path)) == []


def test_tampered_file_is_named(tmp_path):
    path, _m = write_sample(tmp_path)
    with open(os.path.join(path, '70-localqueues.yaml'), 'a') as handle:
        handle.write('# edited\n')
    with pytest.raises(b.BackupError) as err:
        b.verify_backup(path)
    assert len(err.value.problems) == 1
    assert err.value.problems[0].startswith('70-localqueues.yaml: sha256 ')
    assert '70-localqueues.yaml' in err.value.message()


def test_missing_and_extra_files_are_named(tmp_path):
    path, _m = write_sample(tmp_path)
    os.unlink(os.path.join(path, '10-resourceflavors.yaml'))
    with open(os.path.join(path, '99-extra.yaml'), 'w') as handle:
        handle.write('kind: ClusterQueue\n')
    os.mkdir(os.path.join(path, 'sub'))
    problems = b.check_backup(path)
    assert problems == ['10-resourceflavors.yaml: missing (listed in manifest.json)',
                        '99-extra.yaml: not part of the backup (not listed in manifest.json)',
                        'sub: not part of the backup (not listed in manifest.json)']


def test_not_a_backup(tmp_path):
    with pytest.raises(b.BackupError) as err:
        b.verify_backup(str(tmp_path))
    assert 'manifest.json' in err.value.message()
    (tmp_path / 'manifest.json').write_text('{"format": "other"}')
    with pytest.raises(b.BackupError):
        b.verify_backup(str(tmp_path))
    (tmp_path / 'manifest.json').write_text('not json')
    with pytest.raises(b.BackupError) as err:
        b.verify_backup(str(tmp_path))
    assert 'not valid JSON' in err.value.message()


# ----------------------------------------------------------------- compare
def test_compare_names_the_object_and_field():
    mine = [r.normalise(live_cq('a')), lq('q', 'ns'), rf('gone')]
    live = [r.normalise(live_cq('a')), lq('q', 'ns', target='other'), rf('new')]
    assert b.compare(mine, copy.deepcopy(mine)) == []
    problems = b.compare(mine, live)
    assert problems == [
        'ResourceFlavor gone is in the backup but no longer in the cluster',
        'ResourceFlavor new is in the cluster but not in the backup',
        'LocalQueue ns/q differs from the cluster at spec.clusterQueue',
    ]


# --------------------------------------------------------------- workloads
def wl(namespace, queue, admitted=False, finished=False, cq=None):
    conds = []
    if admitted:
        conds.append({'type': 'Admitted', 'status': 'True'})
    if finished:
        conds.append({'type': 'Finished', 'status': 'True'})
    status = {'conditions': conds}
    if cq:
        status['admission'] = {'clusterQueue': cq}
    return {'metadata': {'namespace': namespace, 'name': 'w'}, 'spec': {'queueName': queue}, 'status': status}


@pytest.mark.parametrize('before, after, lost', [
    # nothing changed; finished at the backup and gone since (TTL, Job deleted, Kueue's retention): not lost
    ({'pending': 1, 'admitted': 2, 'finished': 3}, {'pending': 1, 'admitted': 2, 'finished': 3}, []),
    ({'pending': 0, 'admitted': 0, 'finished': 4}, {'pending': 0, 'admitted': 0, 'finished': 0}, []),
    # pending admitted since, admitted finished since: each still there
    ({'pending': 2, 'admitted': 1, 'finished': 0}, {'pending': 0, 'admitted': 2, 'finished': 1}, []),
    # a pending one gone
    ({'pending': 2, 'admitted': 0, 'finished': 5}, {'pending': 1, 'admitted': 0, 'finished': 5},
     ['fewer Workloads than were pending or admitted at the backup']),
    # an admitted one back to pending (its admission lost): as many Workloads, fewer admitted
    ({'pending': 0, 'admitted': 2, 'finished': 0}, {'pending': 1, 'admitted': 1, 'finished': 0},
     ['fewer admitted (or newly finished) Workloads than were admitted at the backup']),
    # every Workload gone (the CRDs deleted with them)
    ({'pending': 1, 'admitted': 1, 'finished': 1}, {'pending': 0, 'admitted': 0, 'finished': 0},
     ['fewer Workloads than were pending or admitted at the backup',
      'fewer admitted (or newly finished) Workloads than were admitted at the backup']),
    # an admitted one finished while the old finished ones were collected: counts cannot tell, reported (safe side)
    ({'pending': 0, 'admitted': 1, 'finished': 4}, {'pending': 0, 'admitted': 0, 'finished': 1},
     ['fewer Workloads than were pending or admitted at the backup',
      'fewer admitted (or newly finished) Workloads than were admitted at the backup']),
    # a backup of an older release without totals
    ({}, {'pending': 0, 'admitted': 0, 'finished': 0}, []),
])
def test_lost_workloads_are_the_pending_and_admitted_ones_only(before, after, lost):
    assert b.lost_workloads(before, after) == lost


def test_workload_counts():
    counts = r.workload_counts(
        [wl('ns', 'q'), wl('ns', 'q'), wl('ns', 'q', admitted=True, cq='team'), wl('ns', 'q', finished=True),
         wl('other', 'lost')],
        [lq('q', 'ns'), lq('idle', 'ns')],
        [{'kind': 'ClusterQueue', 'metadata': {'name': 'team'}}, {'kind': 'ClusterQueue', 'metadata': {'name': 'x'}}])
    assert counts == {
        'local_queues': [
            {'namespace': 'ns', 'name': 'idle', 'cluster_queue': 'team', 'pending': 0, 'admitted': 0},
            {'namespace': 'ns', 'name': 'q', 'cluster_queue': 'team', 'pending': 2, 'admitted': 1},
            {'namespace': 'other', 'name': 'lost', 'cluster_queue': None, 'pending': 1, 'admitted': 0},
        ],
        'cluster_queues': [{'name': 'team', 'pending': 2, 'admitted': 1}, {'name': 'x', 'pending': 0, 'admitted': 0}],
        'total': {'pending': 3, 'admitted': 1, 'finished': 1},
    }


def test_gitops_sidecar_is_allowed_but_not_a_directory_of_that_name(tmp_path):
    path, _m = write_sample(tmp_path)
    with open(os.path.join(path, 'gitops.json'), 'w') as handle:
        handle.write('{}\n')
    assert b.check_backup(path) == []
    os.unlink(os.path.join(path, 'gitops.json'))
    os.mkdir(os.path.join(path, 'gitops.json'))
    assert b.check_backup(path) == ['gitops.json: not part of the backup (not listed in manifest.json)']


def test_a_backup_is_compared_at_the_served_version_and_a_field_the_conversion_drops_is_a_difference():
    cq = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": "cq"},
          "spec": {"cohort": "team"}}
    check = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "AdmissionCheck", "metadata": {"name": "prov"},
             "spec": {"controllerName": "x", "retryDelayMinutes": 5}}
    served = {"ClusterQueue": "v1beta2", "AdmissionCheck": "v1beta2"}
    converted, dropped = b.convert_to_served([cq, check], served)
    assert converted[0]["apiVersion"] == "kueue.x-k8s.io/v1beta2" and converted[0]["spec"] == {"cohortName": "team"}
    assert len(dropped) == 1 and dropped[0].startswith("AdmissionCheck prov: spec.retryDelayMinutes of the backup (v1beta1)")
    assert b.convert_to_served([cq], {"ClusterQueue": "v1beta1"}) == ([cq], [])


def test_snapshot_reads_page_by_page_and_keeps_the_queues_normalised():
    exporter = r.Exporter(None, 'kueue-system')
    exporter.served = {'ClusterQueue': 'v1beta2', 'LocalQueue': 'v1beta2'}
    live_lq = dict(lq('q', 'ns'), status={'flavorsReservation': [{'name': 'f'}]})
    live_lq['metadata']['managedFields'] = [{'manager': 'kueue', 'subresource': 'status'}]
    cq_path, lq_path = '/apis/%s/clusterqueues' % V2, '/apis/%s/localqueues' % V2
    # a snapshot reads the Kueue kinds page by page (whole_lists=False), here one object a page
    exporter.cluster = FakeCluster(collections={cq_path: [live_cq('team'), live_cq('aks-gpu')],
                                                lq_path: [live_lq, lq('idle', 'ns')]}, page_size=1, whole_lists=False)
    objects, excluded, queues = r.snapshot(exporter, False, False, True)
    assert exporter.cluster.pages_read == [cq_path, cq_path, lq_path, lq_path]
    assert [o['metadata']['name'] for o in objects['ClusterQueue']] == ['team']
    assert [e['name'] for e in excluded] == ['aks-gpu']
    # Every queue, an excluded one too, as its normalised object (no status, no managedFields): what
    # workload_counts reads.
    assert [o['metadata']['name'] for o in queues['ClusterQueue']] == ['team', 'aks-gpu']
    assert queues['LocalQueue'] == [lq('q', 'ns'), lq('idle', 'ns')]
    assert all('status' not in o and 'managedFields' not in o['metadata'] for k in queues for o in queues[k])
    counts = r.workload_counts([wl('ns', 'q')], queues['LocalQueue'], queues['ClusterQueue'])
    assert counts['local_queues'][1] == {'namespace': 'ns', 'name': 'q', 'cluster_queue': 'team', 'pending': 1,
                                         'admitted': 0}
    assert [c['name'] for c in counts['cluster_queues']] == ['aks-gpu', 'team']


def test_every_reader_discovers_the_kinds_alike_v1alpha1_ones_of_older_kueue_included():
    """One discovery (reader.served_kinds) for the backup's Exporter and the queues' KueueReader: on a Kueue 0.13-like
    cluster (Cohort and Topology at v1alpha1 only, the rest at v1beta1) a backup reads the Topologies too."""
    served = {'kueue.x-k8s.io/v1alpha1': ['cohorts', 'topologies'],
              'kueue.x-k8s.io/v1beta1': ['clusterqueues', 'localqueues', 'resourceflavors', 'workloads']}
    exporter = r.Exporter(None, 'kueue-system')
    exporter.cluster = FakeCluster(served=served)
    found = exporter.discover()
    assert found == {'Cohort': 'v1alpha1', 'Topology': 'v1alpha1', 'ClusterQueue': 'v1beta1',
                     'LocalQueue': 'v1beta1', 'ResourceFlavor': 'v1beta1'}
    assert exporter.workloads_version == 'v1beta1'
    reader = r.KueueReader.__new__(r.KueueReader)
    reader.cluster = FakeCluster(served=served)
    assert dict((k, v) for k, v in reader.discover().items() if k in found) == found
    # v1beta2 wins where both are served; the Workload API's version follows it
    served['kueue.x-k8s.io/v1beta2'] = ['clusterqueues', 'topologies', 'workloads']
    assert r.served_kinds(FakeCluster(served=served)) == ({
        'Cohort': 'v1alpha1', 'Topology': 'v1beta2', 'ClusterQueue': 'v1beta2', 'LocalQueue': 'v1beta1',
        'ResourceFlavor': 'v1beta1'}, 'v1beta2')
