# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The orchestration of plugins/module_utils/queues/apply.py against an in-memory API server.

The real API server, schema, CEL and webhooks are exercised by
tests/integration/test_kueue_queues.py; here the order of phases is pinned:
every object is dry-run before the first write, nothing is written when one
fails, unchanged objects are not written, prune goes in reverse order, hold
admission holds then releases.
"""

import copy
import json

import pytest
from kubernetes.client.exceptions import ApiException

from ansible_collections.kueueops.aks.plugins.module_utils.queues import apply as engine_mod
from ansible_collections.kueueops.aks.plugins.module_utils.kueue import kueue_api as api
from ansible_collections.kueueops.aks.plugins.module_utils.kueue import plan as plan_mod
from ansible_collections.kueueops.aks.plugins.module_utils.kueue import queues as q
from tests.unit.fakes import FakeCluster

V2 = 'kueue.x-k8s.io/v1beta2'


class FakeServer:
    def __init__(self):
        self.store = {}
        self.calls = []
        self.rv = 100
        self.reject = {}
        self.schemas = {}  # kind -> the openAPIV3Schema its CRD serves (none: the CRD cannot be read)

    def apply(self, engine, obj, dry_run=False, force=False, manager=None):
        key = api.obj_key(obj)
        self.calls.append(('apply-dry' if dry_run else 'apply', key, (obj.get('spec') or {}).get('stopPolicy')))
        if key in self.reject:
            exc = ApiException(status=422, reason='Unprocessable Entity')
            exc.body = json.dumps({'message': 'invalid', 'details': {'causes': [
                {'field': self.reject[key][0], 'message': self.reject[key][1], 'reason': 'FieldValueInvalid'}]}})
            raise exc
        current = self.store.get(key)
        new = copy.deepcopy(obj)
        new.setdefault('spec', {})
        new['spec'].setdefault('stopPolicy', 'None') if key[0] == 'ClusterQueue' else None
        meta = new['metadata']
        meta['managedFields'] = [{'manager': manager or engine.manager, 'operation': 'Apply', 'apiVersion': V2,
                                  'fieldsV1': sorted((obj.get('spec') or {}).keys())}]
        if current is not None:
            meta['resourceVersion'] = current['metadata']['resourceVersion']
            meta['uid'] = current['metadata']['uid']
            if q.comparable(current) != q.comparable(new) or \
                    current['metadata'].get('managedFields') != meta['managedFields']:
                if not dry_run:
                    self.rv += 1
                    meta['resourceVersion'] = str(self.rv)
        else:
            self.rv += 1
            meta['resourceVersion'] = str(self.rv)
            meta['uid'] = 'uid-%s' % self.rv
        if not dry_run:
            self.store[key] = new
        return copy.deepcopy(new)

    def install(self, monkeypatch, namespaces=('team-a',)):
        server = self

        def discover(engine):
            engine.served = dict((k, 'v1beta2') for k in api.KIND_ORDER)
            return engine.served

        def list_live(engine, kinds=None):
            out = {}
            for key, obj in server.store.items():
                out.setdefault(key[0], {})[key] = copy.deepcopy(obj)
            return out

        def delete(engine, key, dry_run=False):
            server.calls.append(('delete-dry' if dry_run else 'delete', key, None))
            if key not in server.store:
                return False
            if not dry_run:
                del server.store[key]
            return True

        monkeypatch.setattr(engine_mod.QueueEngine, 'discover', discover)
        monkeypatch.setattr(engine_mod.QueueEngine, 'list_live', list_live)
        monkeypatch.setattr(engine_mod.QueueEngine, 'list_namespaces', lambda engine: set(namespaces))
        monkeypatch.setattr(engine_mod.QueueEngine, 'detect_aks_extension', lambda engine, ns: False)
        monkeypatch.setattr(engine_mod.QueueEngine, 'server_apply',
                            lambda engine, *args, **kwargs: server.apply(engine, *args, **kwargs))
        monkeypatch.setattr(engine_mod.QueueEngine, 'delete', delete)
        monkeypatch.setattr(engine_mod.QueueEngine, 'crd_schema', lambda engine, kind: server.schemas.get(kind))
        monkeypatch.setattr(engine_mod.QueueEngine, 'get', lambda engine, key: copy.deepcopy(server.store.get(key)))
        monkeypatch.setattr(engine_mod.QueueEngine, 'create_namespace', lambda engine, name: True)
        monkeypatch.setattr(engine_mod.QueueEngine, 'wait_active', lambda engine, keys, deadline: {})
        return server


class FakeApiClient:
    class rest_client:  # noqa: N801 - mimics the attribute layout
        pool_manager = None


@pytest.fixture
def server(monkeypatch):
    return FakeServer().install(monkeypatch)


def config(quota='4', lq=True):
    objs = [
        {'apiVersion': V2, 'kind': 'ResourceFlavor', 'metadata': {'name': 'default'}},
        {'apiVersion': V2, 'kind': 'ClusterQueue', 'metadata': {'name': 'a'},
         'spec': {'namespaceSelector': {}, 'resourceGroups': [{'coveredResources': ['cpu'], 'flavors': [
             {'name': 'default', 'resources': [{'name': 'cpu', 'nominalQuota': quota}]}]}]}},
    ]
    if lq:
        objs.append({'apiVersion': V2, 'kind': 'LocalQueue', 'metadata': {'name': 'q', 'namespace': 'team-a'},
                     'spec': {'clusterQueue': 'a'}})
    return objs


def run(resources, check_mode=False, diff=False, **params):
    base = dict(resources=resources, state='present', prune=False, force=False, hold_admission=False,
                create_namespaces=False, wait=True, timeout=60, workers=4)
    base.update(params)
    return engine_mod.run(FakeApiClient(), base, check_mode=check_mode, diff=diff)


def writes(server):
    return [c for c in server.calls if c[0] in ('apply', 'delete')]


def test_first_apply_then_idempotent(server):
    res = run(config())
    assert res['changed'] is True
    assert res['counts']['ClusterQueue'] == {'created': 1, 'updated': 0, 'unchanged': 0, 'pruned': 0}
    # every dry-run precedes the first write, and writes follow dependency order
    kinds = [c[0] for c in server.calls]
    assert kinds.index('apply') > max(i for i, k in enumerate(kinds) if k == 'apply-dry')
    assert [c[1][0] for c in writes(server)] == ['ResourceFlavor', 'ClusterQueue', 'LocalQueue']

    server.calls[:] = []
    again = run(config())
    assert again['changed'] is False
    assert writes(server) == []
    assert again['counts']['LocalQueue'] == {'created': 0, 'updated': 0, 'unchanged': 1, 'pruned': 0}


def test_update_only_writes_the_changed_object_and_diffs_it(server):
    run(config())
    server.calls[:] = []
    res = run(config(quota='8'), diff=True)
    assert [c[1] for c in writes(server)] == [('ClusterQueue', '', 'a')]
    assert res['changed_objects'] == [{'kind': 'ClusterQueue', 'name': 'a', 'action': 'updated'}]
    assert res['diff'][0]['before']['spec']['resourceGroups'][0]['flavors'][0]['resources'][0]['nominalQuota'] == '4'
    assert res['diff'][0]['after']['spec']['resourceGroups'][0]['flavors'][0]['resources'][0]['nominalQuota'] == '8'


def test_check_mode_writes_nothing(server):
    res = run(config(), check_mode=True)
    assert res['changed'] is True
    assert writes(server) == [] and server.store == {}


def test_dry_run_failure_writes_nothing_and_names_every_problem(server):
    server.reject[('ClusterQueue', '', 'a')] = ('spec.queueingStrategy', 'Unsupported value: "Sideways"')
    server.reject[('LocalQueue', 'team-a', 'q')] = ('spec.clusterQueue', 'field is immutable')
    with pytest.raises(engine_mod.QueueProblems) as err:
        run(config())
    assert writes(server) == []
    assert [str(p) for p in err.value.problems] == [
        'ClusterQueue a: spec.queueingStrategy: Unsupported value: "Sideways"; correct the value',
        'LocalQueue team-a/q: spec.clusterQueue: field is immutable; it cannot be changed on an existing object: '
        'keep the current value, or delete the object and create it again (state: absent, then present)',
    ]
    assert 'nothing was written' in err.value.message()


def test_validation_failure_skips_the_dry_run(server):
    bad = config()
    bad[2]['spec']['clusterQueue'] = 'missing'
    with pytest.raises(engine_mod.QueueProblems) as err:
        run(bad)
    assert server.calls == []
    assert err.value.problems[0].field == 'spec.clusterQueue'


def test_prune_reverse_order_and_only_ours(server):
    run(config())
    server.store[('ResourceFlavor', '', 'foreign')] = {
        'apiVersion': V2, 'kind': 'ResourceFlavor', 'metadata': {'name': 'foreign', 'resourceVersion': '1',
                                                                 'managedFields': [{'manager': 'kubectl',
                                                                                    'operation': 'Apply'}]}}
    server.calls[:] = []
    res = run([config()[0]], prune=True)
    assert [c[1] for c in writes(server)] == [('LocalQueue', 'team-a', 'q'), ('ClusterQueue', '', 'a')]
    assert res['counts']['LocalQueue']['pruned'] == 1 and res['counts']['ClusterQueue']['pruned'] == 1
    assert ('ResourceFlavor', '', 'foreign') in server.store


def test_hold_admission_holds_then_releases(server):
    run(config())
    server.calls[:] = []
    res = run(config(quota='8'), hold_admission=True)
    assert res['held'] == ['a']
    applied = [(c[1][0], c[2]) for c in writes(server)]
    assert applied == [('ClusterQueue', 'Hold'), ('ClusterQueue', None)]
    assert server.store[('ClusterQueue', '', 'a')]['spec']['stopPolicy'] == 'None'
    server.calls[:] = []
    assert run(config(quota='8'), hold_admission=True)['changed'] is False
    assert writes(server) == []


def test_state_absent_reverse_order(server):
    run(config())
    server.calls[:] = []
    res = run(config(), state='absent')
    assert [c[1][0] for c in writes(server)] == ['LocalQueue', 'ClusterQueue', 'ResourceFlavor']
    assert res['changed'] is True and server.store == {}
    assert run(config(), state='absent')['changed'] is False


def test_schema_problems_come_before_any_dry_run(server):
    """A quota of the wrong type and an undeclared field, refused from the CRD schema: no request judged them."""
    server.schemas['ClusterQueue'] = {'type': 'object', 'properties': {
        'apiVersion': {'type': 'string'}, 'kind': {'type': 'string'}, 'metadata': {'type': 'object'},
        'spec': {'type': 'object', 'properties': {
            'cohortName': {'type': 'string'}, 'namespaceSelector': {'type': 'object'},
            'stopPolicy': {'type': 'string'},
            'resourceGroups': {'type': 'array', 'items': {'type': 'object', 'properties': {
                'coveredResources': {'type': 'array', 'items': {'type': 'string'}},
                'flavors': {'type': 'array', 'items': {'type': 'object', 'properties': {
                    'name': {'type': 'string'},
                    'resources': {'type': 'array', 'items': {'type': 'object', 'properties': {
                        'name': {'type': 'string'},
                        'nominalQuota': {'x-kubernetes-int-or-string': True}}}}}}}}}}}}}}
    objs = config()
    objs[1]['spec']['cohortName'] = 7
    objs[1]['spec']['stopPolicyy'] = 'Hold'
    with pytest.raises(engine_mod.QueueProblems) as err:
        run(objs)
    assert server.calls == []
    assert [p.as_dict() for p in err.value.problems] == [
        {'object': 'ClusterQueue a', 'field': 'spec.cohortName', 'problem': 'must be a string, not the number 7',
         'fix': 'write it as a string (in quotes when it looks like a number or a boolean): cohortName: "7"'},
        {'object': 'ClusterQueue a', 'field': 'spec.stopPolicyy',
         'problem': 'is not a field of kueue.x-k8s.io/v1beta2 ClusterQueue',
         'fix': 'remove it or correct its name (did you mean stopPolicy?)'},
    ]


def test_problems_from_api_errors():
    exc = ApiException(status=409, reason='Conflict')
    exc.body = json.dumps({'message': 'Apply failed with 1 conflict', 'details': {'causes': [
        {'reason': 'FieldManagerConflict', 'message': 'conflict with "kubectl"', 'field': '.spec.stopPolicy'}]}})
    problems = engine_mod.problems_from_api_error(exc, 'ClusterQueue a')
    assert problems[0].field == 'spec.stopPolicy' and 'force: true' in problems[0].fix and 'kubectl' in problems[0].text
    exc = ApiException(status=400, reason='Bad Request')
    exc.body = json.dumps({'message': 'admission webhook "vclusterqueue.kb.io" denied the request: '
                                      'spec.resourceGroups[0].flavors[0].resources[0].lendingLimit: Invalid value'})
    problems = engine_mod.problems_from_api_error(exc, 'ClusterQueue a')
    assert problems[0].field == 'spec.resourceGroups[0].flavors[0].resources[0].lendingLimit'
    assert problems[0].text == "invalid value (Kueue's webhook vclusterqueue.kb.io gave no detail)"
    assert problems[0].fix == 'correct the value'


def test_the_executor_writes_only_what_a_plan_holds_and_records_each_write(server):
    """A plan made by hand (kueue/plan.py): the executor creates the namespace, applies the updated and created
    objects in dependency order and never the unchanged one, prunes last, and its one Progress holds every write;
    the result is the plan rendered with what the writes ended with."""
    run(config())
    server.calls[:] = []
    rf_key, cq_key, lq_key, new_lq = (('ResourceFlavor', '', 'default'), ('ClusterQueue', '', 'a'),
                                      ('LocalQueue', 'team-a', 'q'), ('LocalQueue', 'team-new', 'q'))
    lq_new = dict(config()[2], metadata={'name': 'q', 'namespace': 'team-new'})
    plan = plan_mod.Plan([plan_mod.entry(rf_key, 'unchanged', config()[0], server.store[rf_key]),
                          plan_mod.entry(cq_key, 'updated', config(quota='8')[1], server.store[cq_key]),
                          plan_mod.entry(new_lq, 'created', lq_new, None),
                          plan_mod.entry(lq_key, 'pruned', None, server.store[lq_key])], ['team-new'])
    engine = engine_mod.QueueEngine(FakeApiClient(), workers=1)
    progress = engine_mod.Executor(engine, plan, {}, set(), engine_mod.Deadline(10)).run()
    assert [c[:2] for c in writes(server)] == [('apply', cq_key), ('apply', new_lq), ('delete', lq_key)]
    assert progress.applied == [{'kind': 'Namespace', 'name': 'team-new', 'action': 'created'},
                                {'kind': 'ClusterQueue', 'name': 'a', 'action': 'updated'},
                                {'kind': 'LocalQueue', 'namespace': 'team-new', 'name': 'q', 'action': 'created'},
                                {'kind': 'LocalQueue', 'namespace': 'team-a', 'name': 'q', 'action': 'pruned'}]
    assert progress.namespaces_created == ['team-new'] and progress.pruned == [lq_key] and not progress.holding
    res = engine_mod.written(plan, progress, diff=False)
    assert res['counts']['LocalQueue'] == {'created': 1, 'updated': 0, 'unchanged': 0, 'pruned': 1}
    assert res['changed'] is True and res['pruned'] == [{'kind': 'LocalQueue', 'namespace': 'team-a', 'name': 'q'}]


# ------------------------------------------------------------------ MultiKueue
KUBECONFIG = ('apiVersion: v1\nkind: Config\nclusters:\n- name: w\n  cluster: {server: \'https://127.0.0.1:1\'}\n'
              'users:\n- name: w\n  user: {token: s3cr3t-token-value}\ncontexts:\n- name: w\n'
              '  context: {cluster: w, user: w}\ncurrent-context: w\n')


def multikueue():
    return [
        {'apiVersion': V2, 'kind': 'AdmissionCheck', 'metadata': {'name': 'dispatch'},
         'spec': {'controllerName': 'kueue.x-k8s.io/multikueue',
                  'parameters': {'apiGroup': 'kueue.x-k8s.io', 'kind': 'MultiKueueConfig', 'name': 'workers'}}},
        {'apiVersion': V2, 'kind': 'MultiKueueConfig', 'metadata': {'name': 'workers'}, 'spec': {'clusters': ['w1']}},
        {'apiVersion': V2, 'kind': 'MultiKueueCluster', 'metadata': {'name': 'w1'},
         'spec': {'clusterSource': {'kubeConfig': {'location': 'w1-kubeconfig', 'locationType': 'Secret'}}}},
    ]


def kubeconfig_secret(text=KUBECONFIG):
    return {'apiVersion': 'v1', 'kind': 'Secret', 'metadata': {'name': 'w1-kubeconfig'},
            'stringData': {'kubeconfig': text}}


@pytest.fixture
def mk_server(monkeypatch):
    return FakeServer().install(monkeypatch, namespaces=('team-a', 'kueue-system'))


def test_secrets_applied_first_and_never_shown(mk_server):
    masked = set()
    res = engine_mod.run(FakeApiClient(), dict(resources=multikueue(), secrets=[kubeconfig_secret()], state='present',
                                               prune=False, force=False, hold_admission=False, wait=True, timeout=60,
                                               workers=4), diff=True, no_log_values=masked)
    assert [c[1][0] for c in writes(mk_server)] == ['Secret', 'MultiKueueCluster', 'MultiKueueConfig',
                                                    'AdmissionCheck']
    assert ('Secret', 'kueue-system', 'w1-kubeconfig') in mk_server.store
    assert res['counts']['Secret']['created'] == 1
    assert KUBECONFIG in masked and 's3cr3t' not in json.dumps(res)
    secret_diff = [d for d in res['diff'] if d['after_header'].startswith('Secret')][0]
    assert secret_diff['after']['data'] == {'kubeconfig': 'VALUE_REDACTED_BY_KUEUEOPS'}

    # A new kubeconfig: the diff says changed, still without the value.
    res = engine_mod.run(FakeApiClient(), dict(resources=multikueue(), secrets=[kubeconfig_secret(KUBECONFIG + '#2')],
                                               state='present', wait=True, timeout=60, workers=4), diff=True)
    assert [d['after']['data'] for d in res['diff']] == [{'kubeconfig': 'VALUE_REDACTED_BY_KUEUEOPS (changed)'}]
    assert 's3cr3t' not in json.dumps(res)


def test_secret_in_resources_refused_and_errors_scrubbed(mk_server):
    with pytest.raises(engine_mod.QueueProblems) as err:
        run(multikueue() + [kubeconfig_secret()])
    text = err.value.message()
    assert 'resources[3]: kind: give Secrets in the secrets option' in text and 's3cr3t' not in text

    encoded = __import__('base64').b64encode(KUBECONFIG.encode()).decode()
    mk_server.reject[('Secret', 'kueue-system', 'w1-kubeconfig')] = ('data', 'echoing %s' % encoded)
    with pytest.raises(engine_mod.QueueProblems) as err:
        run(multikueue(), secrets=[kubeconfig_secret()])
    assert encoded not in err.value.message() and 'VALUE_REDACTED_BY_KUEUEOPS' in err.value.message()
    assert writes(mk_server) == []


def mk_option(*names, **kw):
    out = {'config': 'mk', 'admission_check': 'mk-check', 'cluster_queues': ['a'],
           'clusters': [{'name': n, 'kubeconfig': KUBECONFIG.replace('s3cr3t-token-value', 's3cr3t-' + n)}
                        for n in names]}
    out.update(kw)
    return out


def test_multikueue_option_generates_applies_and_prunes_its_own(mk_server):
    masked = set()
    res = engine_mod.run(FakeApiClient(), dict(resources=config(), state='present', wait=True, timeout=60, workers=4,
                                               multikueue=mk_option('w1', 'w2')), diff=True, no_log_values=masked)
    assert [c[1] for c in writes(mk_server) if c[1][0] in ('Secret', 'MultiKueueCluster')] == [
        ('Secret', 'kueue-system', 'mk-w1'), ('Secret', 'kueue-system', 'mk-w2'),
        ('MultiKueueCluster', '', 'w1'), ('MultiKueueCluster', '', 'w2')]
    assert mk_server.store[('ClusterQueue', '', 'a')]['spec']['admissionChecksStrategy'] == {
        'admissionChecks': [{'name': 'mk-check'}]}
    assert mk_server.store[('MultiKueueConfig', '', 'mk')]['spec'] == {'clusters': ['w1', 'w2']}
    assert res['multikueue'] == {'config': 'mk', 'admission_check': 'mk-check', 'clusters': ['w1', 'w2'],
                                 'cluster_queues': ['a'], 'pruned_clusters': []}
    assert 's3cr3t' not in json.dumps(res) and {'s3cr3t-w1', 's3cr3t-w2'} <= masked
    # A MultiKueue object of the user's own, applied by this module but without the label: never the option's.
    run(config() + [{'apiVersion': V2, 'kind': 'MultiKueueConfig', 'metadata': {'name': 'mine'},
                     'spec': {'clusters': ['w1']}}], multikueue=mk_option('w1', 'w2'))

    again = run(config(), multikueue=mk_option('w1', 'w2'))
    assert again['changed'] is False

    del mk_server.calls[:]
    check = run(config(), check_mode=True, diff=True, multikueue=mk_option('w1'))
    assert writes(mk_server) == [] and check['multikueue']['pruned_clusters'] == ['w2']
    secret_diff = [d for d in check['diff'] if d['before_header'].startswith('Secret')][0]
    assert secret_diff['before']['data'] == {'kubeconfig': 'VALUE_REDACTED_BY_KUEUEOPS'}

    dropped = run(config(), prune=False, multikueue=mk_option('w1'))
    assert sorted((p['kind'], p['name']) for p in dropped['pruned']) == [
        ('MultiKueueCluster', 'w2'), ('Secret', 'mk-w2')]
    assert dropped['multikueue']['pruned_clusters'] == ['w2']
    assert ('MultiKueueConfig', '', 'mine') in mk_server.store and ('Secret', 'kueue-system', 'mk-w1') in mk_server.store
    assert mk_server.store[('MultiKueueConfig', '', 'mk')]['spec'] == {'clusters': ['w1']}


def test_multikueue_option_refusals_write_nothing(mk_server):
    exec_kubeconfig = KUBECONFIG.replace('{token: s3cr3t-token-value}', '{exec: {command: s3cr3t-helper}}')
    bad = mk_option('w1', cluster_queues=['a', 'nowhere'])
    bad['clusters'].append({'name': 'w2', 'kubeconfig': exec_kubeconfig})
    with pytest.raises(engine_mod.QueueProblems) as err:
        run(config(), multikueue=bad)
    text = err.value.message()
    assert 'MultiKueueCluster w2: multikueue.clusters[1].kubeconfig: users[0].user.exec' in text
    assert "multikueue.cluster_queues[1]: ClusterQueue 'nowhere' is not a ClusterQueue of the input" in text
    assert 's3cr3t' not in text and writes(mk_server) == []


def _unreachable():
    from urllib3.exceptions import MaxRetryError, NewConnectionError
    return MaxRetryError(None, '/apis/kueue.x-k8s.io', NewConnectionError(None, 'Connection refused'))


def _broken():
    from urllib3.exceptions import ProtocolError
    return ProtocolError('Connection aborted.', ConnectionResetError(104, 'Connection reset by peer'))


def _down_after(server, monkeypatch, writes_allowed, in_flight=0):
    """The API server answers ``writes_allowed`` writes (dry-runs always), breaks the connection of the
    next ``in_flight`` ones, then refuses connections."""
    original = server.apply
    seen = []

    def apply(engine, obj, dry_run=False, **kwargs):
        if not dry_run:
            seen.append(api.obj_key(obj))
            if len(seen) > writes_allowed + in_flight:
                raise _unreachable()
            if len(seen) > writes_allowed:
                raise _broken()
        return original(engine, obj, dry_run=dry_run, **kwargs)
    monkeypatch.setattr(engine_mod.QueueEngine, 'server_apply', lambda engine, *a, **kw: apply(engine, *a, **kw))


class ReachableClient(FakeApiClient):
    class configuration:  # noqa: N801 - mimics the attribute layout
        host = 'https://127.0.0.1:6443'


def many(n):
    objs = config(lq=False)
    for i in range(n):
        objs.append({'apiVersion': V2, 'kind': 'LocalQueue', 'metadata': {'name': 'q%03d' % i, 'namespace': 'team-a'},
                     'spec': {'clusterQueue': 'a'}})
    return objs


def test_api_server_gone_mid_apply_says_what_was_written(server, monkeypatch):
    _down_after(server, monkeypatch, 12)
    base = dict(resources=many(30), state='present', prune=False, force=False, hold_admission=False,
                create_namespaces=False, wait=True, timeout=60, workers=1)
    with pytest.raises(engine_mod.ApplyInterrupted) as err:
        engine_mod.run(ReachableClient(), base)
    exc = err.value
    assert len(exc.applied) == 12 and exc.total == 32 and len(server.store) == 12
    assert [(r['kind'], r['action']) for r in exc.applied[:2]] == [('ResourceFlavor', 'created'),
                                                                   ('ClusterQueue', 'created')]
    msg = exc.message()
    assert msg.startswith('host: the API server stopped answering during the apply of LocalQueue objects')
    assert 'Connection refused' in msg and '12 of the 32 write(s)' in msg
    assert 'LocalQueue x10 (team-a/q000, team-a/q001, team-a/q002, team-a/q003, team-a/q004, and 5 more)' in msg
    assert 'nothing else was written' in msg and 'Fix: re-run the same configuration' in msg
    # (connections refused: the 20 writes after the 12th cannot have been made)
    assert exc.unconfirmed == [] and 'in flight' not in msg


def test_writes_whose_connection_broke_are_unconfirmed(server, monkeypatch):
    _down_after(server, monkeypatch, 12, in_flight=2)
    base = dict(resources=many(30), state='present', prune=False, force=False, hold_admission=False,
                create_namespaces=False, wait=True, timeout=60, workers=1)
    with pytest.raises(engine_mod.ApplyInterrupted) as err:
        engine_mod.run(ReachableClient(), base)
    assert [r['name'] for r in err.value.unconfirmed] == ['q010', 'q011']
    assert '2 more were in flight and may or may not have been written: LocalQueue x2 (team-a/q010, team-a/q011)' \
        in err.value.message()


def test_api_server_gone_while_clusterqueues_are_held_says_so(server, monkeypatch):
    run(config())
    _down_after(server, monkeypatch, 1)  # the hold lands, the release does not
    base = dict(resources=config(quota='8'), state='present', prune=False, force=False, hold_admission=True,
                create_namespaces=False, wait=True, timeout=60, workers=1)
    with pytest.raises(engine_mod.ApplyInterrupted) as err:
        engine_mod.run(ReachableClient(), base)
    assert server.store[('ClusterQueue', '', 'a')]['spec']['stopPolicy'] == 'Hold'
    assert 'ClusterQueue(s) a were left with stopPolicy Hold' in err.value.message()


def _active(obj, status='True'):
    out = copy.deepcopy(obj)
    out['status'] = {'conditions': [{'type': 'Active', 'status': status, 'reason': 'Ready'}]}
    return out


def test_all_active_reads_the_runs_own_list():
    cq, lq = config()[1], config()[2]
    live = {'ClusterQueue': {api.obj_key(cq): _active(cq)}, 'LocalQueue': {api.obj_key(lq): _active(lq)}}
    expected = engine_mod.expected_active(config())
    assert engine_mod.all_active(live, expected)
    live['LocalQueue'][api.obj_key(lq)] = _active(lq, 'False')
    assert not engine_mod.all_active(live, expected)
    del live['LocalQueue'][api.obj_key(lq)]
    assert not engine_mod.all_active(live, expected)
    assert engine_mod.all_active({}, {'ClusterQueue': [], 'LocalQueue': []})


def test_a_run_that_writes_nothing_waits_only_for_queues_not_active_yet(server, monkeypatch):
    waits = []
    monkeypatch.setattr(engine_mod.QueueEngine, 'wait_active',
                        lambda engine, keys, deadline: waits.append(keys) or {})
    run(config())
    assert len(waits) == 1  # something was written: the wait asks the API server
    for key, obj in list(server.store.items()):
        if key[0] in ('ClusterQueue', 'LocalQueue'):
            server.store[key] = _active(obj)
    again = run(config())
    assert not again['changed'] and again['not_active'] == []
    assert len(waits) == 1  # nothing written and every queue Active in the run's own LIST: no second LIST
    lq_key = next(k for k in server.store if k[0] == 'LocalQueue')
    server.store[lq_key] = _active(server.store[lq_key], 'False')
    run(config())
    assert len(waits) == 2  # a queue not Active yet: waited for, as before


def _live_queue(name, status_entry=True):
    entries = [{'manager': 'kueueops', 'operation': 'Apply', 'apiVersion': V2,
                'fieldsV1': {'f:spec': {'f:clusterQueue': {}}}}]
    if status_entry:
        entries.append({'manager': 'kueue', 'operation': 'Update', 'apiVersion': V2, 'subresource': 'status',
                        'fieldsV1': {'f:status': {'f:conditions': {}}}})
    return {'metadata': {'name': name, 'namespace': 'team-a', 'managedFields': entries},
            'spec': {'clusterQueue': 'cq'}, 'status': {'conditions': [{'type': 'Active', 'status': 'True'}]}}


def test_live_state_is_read_page_by_page_without_subresource_entries():
    engine = engine_mod.QueueEngine(None)
    engine.served = {'LocalQueue': 'v1beta2'}
    lq_path = '/apis/kueue.x-k8s.io/v1beta2/localqueues'
    # the live state is read page by page (whole_lists=False): two pages
    engine.cluster = FakeCluster({lq_path: [_live_queue('a'), _live_queue('b'), _live_queue('c', False)]}, page_size=2,
                                 whole_lists=False)
    live = engine.list_live(['LocalQueue'])['LocalQueue']
    assert engine.cluster.pages_read == [lq_path, lq_path]
    assert sorted(live) == [('LocalQueue', 'team-a', n) for n in 'abc']
    for obj in live.values():
        assert obj['kind'] == 'LocalQueue' and obj['apiVersion'] == V2
        assert [e['manager'] for e in obj['metadata']['managedFields']] == ['kueueops']
        assert q.managed_by(obj) and q.active_state(obj)[0]


def test_the_active_wait_reads_its_list_page_by_page():
    engine = engine_mod.QueueEngine(None)
    engine.served = {'LocalQueue': 'v1beta2'}
    lq_path = '/apis/kueue.x-k8s.io/v1beta2/localqueues'
    inactive = _live_queue('b')
    inactive['status'] = {'conditions': [{'type': 'Active', 'status': 'False', 'reason': 'Stopped'}]}
    engine.cluster = FakeCluster({lq_path: [_live_queue('a'), inactive]}, page_size=1, whole_lists=False)
    keys = {'LocalQueue': [('LocalQueue', 'team-a', 'a'), ('LocalQueue', 'team-a', 'b')]}
    # The deadline has passed: one LIST, then what is still pending.
    assert engine.wait_active(keys, engine_mod.Deadline(0)) == {('LocalQueue', 'team-a', 'b'): 'Stopped'}
    assert engine.cluster.pages_read == [lq_path, lq_path]


class CountingKeys(set):
    """A set of keys that counts how often it is walked whole."""
    walks = 0

    def __iter__(self):
        CountingKeys.walks += 1
        return set.__iter__(self)


def test_the_active_wait_does_not_walk_every_queue_on_every_event():
    """10,000 LocalQueues turning Active are 10,000 watch events; each must cost the same whatever the number of
    queues (the pending set was recomputed over every key on each event: quadratic)."""
    engine = engine_mod.QueueEngine(None)
    engine.served = {'LocalQueue': 'v1beta2'}
    lq_path = '/apis/kueue.x-k8s.io/v1beta2/localqueues'
    names = ['q%03d' % n for n in range(200)]

    def queue(name, active):
        obj = _live_queue(name, status_entry=False)
        if not active:
            obj['status'] = {'conditions': [{'type': 'Active', 'status': 'False', 'reason': 'Pending'}]}
        return obj
    listed = [queue(n, False) for n in names[:-1]]  # the last one is not listed: 'not found' until its event
    # Each turns Active in its own event; q000 goes back to inactive on the way and is Active again at the end.
    events = [{'type': 'MODIFIED', 'object': queue(n, True)} for n in names]
    events.insert(50, {'type': 'MODIFIED', 'object': queue('q000', False)})
    events.insert(60, {'type': 'MODIFIED', 'object': queue('other', False)})  # not a key: ignored
    events.append({'type': 'MODIFIED', 'object': queue('q000', True)})
    events.append({'type': 'MODIFIED', 'object': queue('q001', False)})  # after the end: never read
    engine.cluster = FakeCluster({lq_path: listed}, watches=events, whole_lists=False)
    keys = CountingKeys(('LocalQueue', 'team-a', n) for n in names)
    CountingKeys.walks = 0
    assert engine._wait_kind_active('LocalQueue', keys, engine_mod.Deadline(30)) == {}
    assert CountingKeys.walks <= 1  # once, to start the pending set; never per event
    assert engine.cluster.events_read == len(events) - 1  # done at q000's last event, not before
    # At the deadline, each key's last state: after the LIST, the listed ones Pending, the other not found.
    engine.cluster = FakeCluster({lq_path: listed}, watches=[], whole_lists=False)
    pending = engine._wait_kind_active('LocalQueue', set(keys), engine_mod.Deadline(0))
    want = dict((('LocalQueue', 'team-a', n), 'Pending') for n in names[:-1])
    want[('LocalQueue', 'team-a', names[-1])] = 'not found'
    assert pending == want


def _gone_engine(live, fail_list=False):
    """A QueueEngine whose reads come from ``live`` ({key: object}); the LISTs (``pages``) and GETs wait_gone sends
    are in ``engine.cluster.calls``, ``gets`` the paths of ``keys``."""
    engine = engine_mod.QueueEngine(FakeApiClient(), workers=4)
    engine.served = dict((k, 'v1beta2') for k in api.KIND_ORDER)
    collections = {}
    for kind in api.KIND_ORDER:
        listed = [dict((f, v) for f, v in o.items() if f != 'kind') for k, o in sorted(live.items()) if k[0] == kind]
        collections[engine._path(kind, None)] = ApiException(status=500, reason='Internal Server Error') \
            if fail_list else listed
    # pages of 7, as the API server's limit would cut them
    engine.cluster = FakeCluster(collections, dict((engine._path(*k), o) for k, o in live.items()), page_size=7)
    return engine


def gets(engine, keys):
    return sorted(engine._path(*k) for k in keys)


def _lq(i, finalizers=None):
    meta = {'name': 'q%03d' % i, 'namespace': 'team-a'}
    if finalizers:
        meta['finalizers'] = finalizers
    return {'apiVersion': V2, 'kind': 'LocalQueue', 'metadata': meta, 'spec': {'clusterQueue': 'a'}}


def test_wait_gone_lists_a_kind_with_many_deleted_objects_and_gets_the_few():
    """The prune of many LocalQueues waits with one LIST of the kind a round, not a GET per queue; a kind with few
    keys left (and Secrets, never listed) is read with a GET each. What the LIST still holds is returned as live."""
    held = [_lq(i, ['example.com/hold']) for i in range(0, 120, 12)]  # 10 of the 120 deleted LocalQueues remain
    other = [_lq(i) for i in range(500, 520)]  # LocalQueues nobody deleted: listed, never returned
    cq = {'apiVersion': V2, 'kind': 'ClusterQueue', 'metadata': {'name': 'a', 'finalizers': ['x/y']}, 'spec': {}}
    live = dict((api.obj_key(o), o) for o in held + other + [cq])
    keys = [('LocalQueue', 'team-a', 'q%03d' % i) for i in range(120)] + \
        [('ClusterQueue', '', 'a'), ('ClusterQueue', '', 'b'), ('Secret', 'kueue-system', 's1')]
    engine = _gone_engine(live)
    left = engine.wait_gone(keys, 0)
    assert sorted(left) == sorted([api.obj_key(o) for o in held] + [('ClusterQueue', '', 'a')])
    assert left[('LocalQueue', 'team-a', 'q012')]['metadata']['finalizers'] == ['example.com/hold']
    lists = engine.cluster.paths('pages')
    assert len(lists) == 1 and lists[0].endswith('/localqueues')
    assert sorted(engine.cluster.paths('get')) == gets(engine, keys[120:])  # no GET for a LocalQueue

    # Fewer keys of the kind than LIST_OVER: a GET each, no LIST.
    engine = _gone_engine(live)
    few = keys[:engine_mod.LIST_OVER]
    left = engine.wait_gone(few, 0)
    assert sorted(left) == sorted(k for k in few if k in live)
    assert engine.cluster.paths('pages') == [] and sorted(engine.cluster.paths('get')) == gets(engine, few)


def test_wait_gone_keeps_the_keys_of_a_list_that_failed():
    """A LIST that fails says nothing about its keys: they stay in the wait (None: not read), as a failed GET's do."""
    keys = [('LocalQueue', 'team-a', 'q%03d' % i) for i in range(60)]
    engine = _gone_engine({}, fail_list=True)
    left = engine.wait_gone(keys, 0)
    assert left == dict((k, None) for k in keys) and len(engine.cluster.paths('pages')) == 1
    assert engine.cluster.paths('get') == []
    engine = _gone_engine({})
    assert engine.wait_gone(keys, 0) == {} and len(engine.cluster.paths('pages')) == 1


def test_a_backup_of_another_cluster_is_refused_before_the_cluster_is_read(tmp_path):
    """Issue 40: kueue_queues src=<a kueue_backup folder> compares the backup's cluster with the live one first."""
    import json as _json
    from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import KueueOpsError as _Error
    from ansible_collections.kueueops.aks.plugins.module_utils.queues.apply import check_backup_cluster
    (tmp_path / 'manifest.json').write_text(_json.dumps({'format': 'kueueops.aks/kueue_backup/v1',
                                                         'cluster': {'uid': 'uid-a', 'context': 'a'}}))
    params = {'src': str(tmp_path), 'allow_other_cluster': False}
    with pytest.raises(_Error) as err:
        check_backup_cluster(params, lambda: {'uid': 'uid-b', 'context': 'b'})
    assert err.value.field == 'src' and 'uid-a' in err.value.message() and 'uid-b' in err.value.message()
    assert check_backup_cluster(params, lambda: {'uid': 'uid-a'}) is True
    assert check_backup_cluster(dict(params, allow_other_cluster=True), lambda: {'uid': 'uid-b'}) is False
    assert check_backup_cluster({'src': str(tmp_path / 'x.yaml')}, None) is None


def test_the_wait_ends_at_once_on_a_cause_that_cannot_heal_and_names_it_first():
    """Issue 44: a ClusterQueue inactive because its MultiKueue worker lacks a kind the manager watches is never
    Active; the wait ends at the first LIST (the deadline is far) with the MultiKueueCluster's reason first."""
    engine = engine_mod.QueueEngine(None)
    engine.served = {'ClusterQueue': 'v1beta2', 'LocalQueue': 'v1beta2'}
    gv = '/apis/kueue.x-k8s.io/v1beta2/'
    missing = 'no matches for kind "RayCluster" in version "ray.io/v1"'
    cq = {'kind': 'ClusterQueue', 'metadata': {'name': 'team'},
          'spec': {'admissionChecksStrategy': {'admissionChecks': [{'name': 'mk'}]}},
          'status': {'conditions': [{'type': 'Active', 'status': 'False', 'reason': 'AdmissionCheckInactive',
                                     'message': 'references inactive AdmissionCheck(s): mk'}]}}
    lq = _live_queue('lq')
    lq['status'] = {'conditions': [{'type': 'Active', 'status': 'False', 'reason': 'ClusterQueueIsInactive'}]}
    objects = {gv + 'admissionchecks/mk': {'spec': {'controllerName': 'kueue.x-k8s.io/multikueue', 'parameters': {
                   'apiGroup': 'kueue.x-k8s.io', 'kind': 'MultiKueueConfig', 'name': 'cfg'}}},
               gv + 'multikueueconfigs/cfg': {'spec': {'clusters': ['w1']}},
               gv + 'multikueueclusters/w1': {'status': {'conditions': [{
                   'type': 'Active', 'status': 'False', 'reason': 'ClientConnectionFailed', 'message': missing}]}}}
    # the pages of the queues, and the AdmissionCheck chain admission_checks.explain reads (no group served)
    engine.cluster = FakeCluster({gv + 'clusterqueues': [cq], gv + 'localqueues': [lq]}, objects, watches=[],
                                 whole_lists=False)
    engine.checked_queues = True
    keys = {'ClusterQueue': [('ClusterQueue', '', 'team')], 'LocalQueue': [('LocalQueue', 'team-a', 'lq')]}
    not_active = engine.wait_active(keys, engine_mod.Deadline(3600))
    assert engine.wait_stopped == [('ClusterQueue', '', 'team')]
    assert engine.cluster.events_read == 0 and engine.cluster.paths('watch') == []  # no watch: the LIST showed the cause
    reason = not_active[('ClusterQueue', '', 'team')]
    assert reason.startswith('MultiKueueCluster w1: Active=False, ClientConnectionFailed: ' + missing), reason
    assert not_active[('LocalQueue', 'team-a', 'lq')] == 'ClusterQueueIsInactive'  # read once, not waited for
    result = {'not_active': [dict(kind='ClusterQueue', name='team', reason=reason),
                             dict(kind='LocalQueue', namespace='team-a', name='lq', reason='ClusterQueueIsInactive')],
              'wait_stopped': True}
    msg = engine_mod.not_active_message(result, 300)
    assert msg.startswith('ClusterQueue team cannot become Active: MultiKueueCluster w1: Active=False, '
                          'ClientConnectionFailed'), msg
    assert 'rather than after 300s' in msg and 'did not become Active within' not in msg
    assert engine_mod.not_active_message(dict(result, wait_stopped=False), 300).startswith(
        '2 queue(s) did not become Active within 300s: ClusterQueue team: MultiKueueCluster w1')
