# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/module_utils/kueue/queues.py (no cluster)."""

import copy
from decimal import Decimal

import pytest

from ansible_collections.kueueops.aks.plugins.module_utils.kueue import kueue_api as api
from ansible_collections.kueueops.aks.plugins.module_utils.kueue import kueue_catalog
from ansible_collections.kueueops.aks.plugins.module_utils.kueue import queues as q

V2 = dict((k, 'v1beta2') for k in api.KIND_ORDER)
V1 = dict((k, 'v1beta1') for k in api.KIND_ORDER)


def rf(name, **spec):
    obj = {'apiVersion': 'kueue.x-k8s.io/v1beta2', 'kind': 'ResourceFlavor', 'metadata': {'name': name}}
    if spec:
        obj['spec'] = spec
    return obj


def cq(name, flavors=('default',), version='v1beta2', **spec):
    body = {'namespaceSelector': {}, 'resourceGroups': [{
        'coveredResources': ['cpu'],
        'flavors': [{'name': f, 'resources': [{'name': 'cpu', 'nominalQuota': '4'}]} for f in flavors]}]}
    body.update(spec)
    return {'apiVersion': 'kueue.x-k8s.io/' + version, 'kind': 'ClusterQueue', 'metadata': {'name': name},
            'spec': body}


def lq(name, namespace, target):
    return {'apiVersion': 'kueue.x-k8s.io/v1beta2', 'kind': 'LocalQueue',
            'metadata': {'name': name, 'namespace': namespace}, 'spec': {'clusterQueue': target}}


def cohort(name, parent=None):
    obj = {'apiVersion': 'kueue.x-k8s.io/v1beta2', 'kind': 'Cohort', 'metadata': {'name': name}, 'spec': {}}
    if parent:
        obj['spec']['parentName'] = parent
    return obj


def norm(docs, served=V2):
    problems = []
    objs = q.normalise_all([('resources[%d]' % i, d) for i, d in enumerate(docs)], served, problems)
    return objs, problems


def texts(problems):
    return [str(p) for p in problems]


# ------------------------------------------------------------------ quantities
@pytest.mark.parametrize('value,expected', [
    ('1', Decimal(1)), (4, Decimal(4)), ('500m', Decimal('0.5')), ('64Gi', Decimal(64 * 1024 ** 3)),
    ('1Ki', Decimal(1024)), ('2k', Decimal(2000)), ('1.5', Decimal('1.5')), ('1e3', Decimal(1000)),
    ('1E3', Decimal(1000)), ('1E', Decimal(10) ** 18), ('.5', Decimal('0.5')), ('5.', Decimal(5)),
    ('+3M', Decimal(3000000)), ('-1', Decimal(-1)), (0.25, Decimal('0.25')), ('0', Decimal(0)),
    ('2Ei', Decimal(2 * 1024 ** 6)), ('1e-3', Decimal('0.001')),
    # n and u: Kubernetes' decimal suffixes for nano and micro (k8s.io/apimachinery suffix.go)
    ('500n', Decimal('0.0000005')), ('250u', Decimal('0.00025')), ('1.5u', Decimal('0.0000015')),
])
def test_parse_quantity_valid(value, expected):
    assert q.parse_quantity(value) == expected


@pytest.mark.parametrize('value', ['', ' 1', '1 ', '10 Gi', 'Gi', '1gi', '1KB', '1.2.3', 'abc', '1e', '1e1.5',
                                   True, None, [1], {'a': 1}, '1Mi1', '--1', float('inf'),
                                   # Kubernetes reads ASCII digits only; Python's \d and Decimal take others
                                   '\u0661', '1\u0662m', '1\n', '1K', '1ni', '1ui', '1mi', '1_000'])
def test_parse_quantity_invalid(value):
    with pytest.raises(ValueError):
        q.parse_quantity(value)


# ------------------------------------------------------------------ conversion
def test_v1beta1_cohort_renamed_to_cohortName():
    objs, problems = norm([cq('a', version='v1beta1', cohort='research')])
    assert problems == []
    assert objs[0]['apiVersion'] == 'kueue.x-k8s.io/v1beta2'
    assert objs[0]['spec']['cohortName'] == 'research'
    assert 'cohort' not in objs[0]['spec']


def test_v1beta2_cohortName_renamed_to_cohort_on_v1beta1_cluster():
    objs, problems = norm([cq('a', cohortName='research')], served=V1)
    assert problems == []
    assert objs[0]['apiVersion'] == 'kueue.x-k8s.io/v1beta1'
    assert objs[0]['spec']['cohort'] == 'research'
    assert 'cohortName' not in objs[0]['spec']


def test_v1beta1_admission_checks_become_strategy():
    objs, problems = norm([cq('a', version='v1beta1', admissionChecks=['prov', 'other'])])
    assert problems == []
    assert objs[0]['spec']['admissionChecksStrategy'] == {'admissionChecks': [{'name': 'prov'}, {'name': 'other'}]}
    assert 'admissionChecks' not in objs[0]['spec']


def test_admission_checks_strategy_kept_going_down():
    strategy = {'admissionChecks': [{'name': 'prov', 'onFlavors': ['default']}]}
    objs, problems = norm([cq('a', admissionChecksStrategy=copy.deepcopy(strategy))], served=V1)
    assert problems == []
    assert objs[0]['spec']['admissionChecksStrategy'] == strategy


def test_both_admission_check_forms_refused():
    _objs, problems = norm([cq('a', version='v1beta1', admissionChecks=['x'],
                               admissionChecksStrategy={'admissionChecks': [{'name': 'y'}]})])
    assert texts(problems) == [
        'ClusterQueue a: spec.admissionChecks: both spec.admissionChecks and spec.admissionChecksStrategy are set; '
        'v1beta2 only has admissionChecksStrategy: move the checks there']


def test_flavor_fungibility_values_both_ways():
    up, problems = norm([cq('a', version='v1beta1', flavorFungibility={'whenCanBorrow': 'Borrow',
                                                                       'whenCanPreempt': 'Preempt'})])
    assert problems == []
    assert up[0]['spec']['flavorFungibility'] == {'whenCanBorrow': 'MayStopSearch', 'whenCanPreempt': 'MayStopSearch'}
    down, problems = norm([cq('a', flavorFungibility={'whenCanBorrow': 'MayStopSearch',
                                                      'whenCanPreempt': 'TryNextFlavor'})], served=V1)
    assert problems == []
    assert down[0]['spec']['flavorFungibility'] == {'whenCanBorrow': 'Borrow', 'whenCanPreempt': 'TryNextFlavor'}


def test_concurrent_admission_policy_cannot_go_down():
    _objs, problems = norm([cq('a', concurrentAdmissionPolicy={'migration': {}})], served=V1)
    assert len(problems) == 1
    assert problems[0].obj == 'ClusterQueue a'
    assert problems[0].field == 'spec.concurrentAdmissionPolicy'


def test_retry_delay_minutes():
    ac = {'apiVersion': 'kueue.x-k8s.io/v1beta1', 'kind': 'AdmissionCheck', 'metadata': {'name': 'prov'},
          'spec': {'controllerName': 'kueue.x-k8s.io/provisioning-request', 'retryDelayMinutes': 15}}
    objs, problems = norm([ac])
    assert problems == [] and 'retryDelayMinutes' not in objs[0]['spec']
    ac['spec']['retryDelayMinutes'] = 5
    _objs, problems = norm([ac])
    assert [p.field for p in problems] == ['spec.retryDelayMinutes']
    # kept as is on a v1beta1 cluster
    objs, problems = norm([ac], served=V1)
    assert problems == [] and objs[0]['spec']['retryDelayMinutes'] == 5


def test_other_versions_field_names_refused():
    _objs, problems = norm([cq('a', version='v1beta1', cohortName='x')])
    assert [(p.obj, p.field) for p in problems] == [('ClusterQueue a', 'spec.cohortName')]
    _objs, problems = norm([cq('a', cohort='x')])
    assert [(p.obj, p.field) for p in problems] == [('ClusterQueue a', 'spec.cohort')]
    _objs, problems = norm([cq('a', admissionChecks=['x'])])
    assert [(p.obj, p.field) for p in problems] == [('ClusterQueue a', 'spec.admissionChecks')]
    _objs, problems = norm([{'apiVersion': 'kueue.x-k8s.io/v1beta2', 'kind': 'Cohort', 'metadata': {'name': 'c'},
                             'spec': {'parent': 'root'}}])
    assert [(p.obj, p.field) for p in problems] == [('Cohort c', 'spec.parent')]


def test_same_version_untouched_and_server_fields_stripped():
    doc = cq('a', cohortName='x')
    doc['metadata'].update(resourceVersion='12', uid='u', managedFields=[{}], creationTimestamp='t', generation=3,
                           annotations={'kubectl.kubernetes.io/last-applied-configuration': '{}'})
    doc['status'] = {'conditions': []}
    objs, problems = norm([doc])
    assert problems == []
    assert objs[0]['metadata'] == {'name': 'a'}
    assert 'status' not in objs[0]
    assert objs[0]['spec'] == cq('a', cohortName='x')['spec']


def test_workload_priority_class_top_level_fields():
    wpc = {'apiVersion': 'kueue.x-k8s.io/v1beta1', 'kind': 'WorkloadPriorityClass', 'metadata': {'name': 'high'},
           'value': 10000, 'description': 'urgent'}
    objs, problems = norm([wpc])
    assert problems == []
    assert objs[0] == {'apiVersion': 'kueue.x-k8s.io/v1beta2', 'kind': 'WorkloadPriorityClass',
                       'metadata': {'name': 'high'}, 'value': 10000, 'description': 'urgent'}


def test_shape_problems_collected():
    docs = [
        {'apiVersion': 'kueue.x-k8s.io/v1beta2', 'kind': 'Queue', 'metadata': {'name': 'x'}},
        {'apiVersion': 'kueue.x-k8s.io/v1beta2', 'kind': 'ClusterQueue', 'metadata': {}},
        {'apiVersion': 'kueue.x-k8s.io/v1alpha1', 'kind': 'ClusterQueue', 'metadata': {'name': 'c'}},
        {'apiVersion': 'kueue.x-k8s.io/v1beta2', 'kind': 'LocalQueue', 'metadata': {'name': 'l'}},
        {'apiVersion': 'kueue.x-k8s.io/v1beta2', 'kind': 'ClusterQueue', 'metadata': {'name': 'n', 'namespace': 'x'}},
        'not a mapping',
        cq('dup'), cq('dup'),
    ]
    objs, problems = norm(docs)
    assert [o['metadata']['name'] for o in objs] == ['dup']
    fields = [(p.obj, p.field) for p in problems]
    assert fields == [
        ('Queue x', 'kind'),
        ('ClusterQueue (resources[1])', 'metadata.name'),
        ('ClusterQueue c', 'apiVersion'),
        ('LocalQueue l', 'metadata.namespace'),
        ('ClusterQueue n', 'metadata.namespace'),
        ('resources[5]', None),
        ('ClusterQueue dup', 'metadata.name'),
    ]
    assert 'declared twice (resources[6] and resources[7])' in str(problems[-1])


def test_kind_not_served():
    served = dict(V2)
    del served['Topology']
    _objs, problems = norm([{'apiVersion': 'kueue.x-k8s.io/v1beta2', 'kind': 'Topology', 'metadata': {'name': 't'},
                             'spec': {'levels': [{'nodeLabel': 'kubernetes.io/hostname'}]}}], served)
    assert [(p.obj, p.field) for p in problems] == [('Topology t', 'kind')]


def alpha_cohort(name, **spec):
    return {'apiVersion': 'kueue.x-k8s.io/v1alpha1', 'kind': 'Cohort', 'metadata': {'name': name}, 'spec': spec}


def alpha_topology(name):
    return {'apiVersion': 'kueue.x-k8s.io/v1alpha1', 'kind': 'Topology', 'metadata': {'name': name},
            'spec': {'levels': [{'nodeLabel': 'cloud.provider.com/topology-block'},
                                {'nodeLabel': 'kubernetes.io/hostname'}]}}


@pytest.mark.parametrize('served', [V2, V1], ids=['v1beta2', 'v1beta1'])
def test_v1alpha1_cohort_and_topology_converted(served):
    # A Cohort as Kueue 0.12 took it (parent, v1beta1 ResourceGroups, fairSharing) and a Topology as 0.13 did.
    groups = [{'coveredResources': ['cpu'], 'flavors': [
        {'name': 'default', 'resources': [{'name': 'cpu', 'nominalQuota': '8', 'lendingLimit': '2'}]}]}]
    cohort_doc = alpha_cohort('team', parent='org', resourceGroups=groups, fairSharing={'weight': '2'})
    cohort_doc['status'] = {'fairSharing': {'weightedShare': 0}}
    objs, problems = norm([cohort_doc, alpha_topology('blocks')], served)
    assert problems == []
    version = served['Cohort']
    assert objs[0] == {'apiVersion': 'kueue.x-k8s.io/' + version, 'kind': 'Cohort', 'metadata': {'name': 'team'},
                       'spec': {'parentName': 'org', 'resourceGroups': groups, 'fairSharing': {'weight': '2'}}}
    assert objs[1] == dict(alpha_topology('blocks'), apiVersion='kueue.x-k8s.io/' + version)
    # The converted Cohort takes part in the cross checks under its new field name.
    assert texts(validate(objs + [rf('default'), cohort('org', parent='team')])) == [
        'Cohort org: spec.parentName: cohort cycle org -> team -> org; Kueue deactivates every ClusterQueue '
        'under a cycle']


def test_v1alpha1_topology_on_kueue_0_13():
    # Kueue 0.13 serves Topology at v1alpha1 only: a v1beta1/v1beta2 Topology goes down to it, unchanged.
    served = dict(V1, Topology='v1alpha1')
    doc = dict(alpha_topology('blocks'), apiVersion='kueue.x-k8s.io/v1beta2')
    objs, problems = norm([doc, alpha_topology('racks')], served)
    assert problems == []
    assert [o['apiVersion'] for o in objs] == ['kueue.x-k8s.io/v1alpha1'] * 2
    assert objs[0]['spec'] == doc['spec']
    # A Cohort on a cluster that serves it at v1alpha1 (Kueue 0.12) gets parent back.
    objs, problems = norm([cohort('team', parent='org')], dict(V1, Cohort='v1alpha1'))
    assert problems == [] and objs[0]['spec'] == {'parent': 'org'}


def served_by(minor):
    """kind -> the version QueueEngine.discover picks from the CRDs of a Kueue minor (kueue_catalog)."""
    crds = kueue_catalog.GENERATED[minor]['crds']
    served = {}
    for kind in api.KUEUE_KINDS:
        versions = crds['%s.%s' % (api.PLURALS[kind], api.GROUP)]['served']
        for version in ('v1beta2', 'v1beta1') + ((api.ALPHA,) if kind in api.ALPHA_KINDS else ()):
            if version in versions:
                served[kind] = version
                break
    return served


@pytest.mark.parametrize('minor', sorted(kueue_catalog.GENERATED))
def test_v1alpha1_and_v1beta2_manifests_on_every_supported_kueue(minor):
    # Every minor 0.13 .. 0.19 takes a Cohort and a Topology written at v1alpha1 or v1beta2, at the version
    # its CRDs serve (Topology: v1alpha1 on 0.13, v1beta1 on 0.14 .. 0.17, v1beta2 from 0.18).
    served = served_by(minor)
    docs = [alpha_cohort('team', parent='org'), alpha_topology('blocks'), cohort('team2', parent='org'),
            dict(alpha_topology('racks'), apiVersion='kueue.x-k8s.io/v1beta2')]
    objs, problems = norm(docs, served)
    assert problems == [], (minor, texts(problems))
    assert [o['apiVersion'].split('/')[1] for o in objs] == [served['Cohort'], served['Topology']] * 2
    assert objs[0]['spec'] == objs[2]['spec'] == {'parentName': 'org'}  # Cohort is v1beta1+ from 0.13


def test_v1alpha1_fields_without_equivalent_refused():
    # parentName is not a v1alpha1 field (a v1alpha1 API server drops it): refused, naming what to write.
    objs, problems = norm([alpha_cohort('team', parentName='org')])
    assert objs == []
    assert texts(problems) == [
        'Cohort team: spec.parentName: not a field of kueue.x-k8s.io/v1alpha1 Cohort (a v1alpha1 API server drops '
        'it); write spec.parent, or declare apiVersion kueue.x-k8s.io/v1beta2']
    objs, problems = norm([alpha_cohort('team', parent='org', parentName='org')])
    assert objs == [] and [(p.obj, p.field) for p in problems] == [('Cohort team', 'spec.parentName')]
    # Kinds Kueue never served at v1alpha1 are refused, naming the ones it did.
    for kind in ('ClusterQueue', 'LocalQueue', 'ResourceFlavor', 'AdmissionCheck'):
        _objs, problems = norm([{'apiVersion': 'kueue.x-k8s.io/v1alpha1', 'kind': kind, 'metadata': {'name': 'x'}}])
        assert [p.field for p in problems] == ['apiVersion'], kind
        assert 'only Cohort and Topology, in Kueue 0.13 and older' in str(problems[0])
    # spec.parent in a v1beta1/v1beta2 Cohort: the hint names both ways out.
    _objs, problems = norm([dict(cohort('c'), spec={'parent': 'root'})])
    assert 'write spec.parentName, or declare apiVersion kueue.x-k8s.io/v1alpha1' in str(problems[0])


# ------------------------------------------------------------- cross checks
def validate(objs, live=None, namespaces=('team-a',), **kw):
    live_map = {}
    for obj in live or []:
        live_map.setdefault(obj['kind'], {})[api.obj_key(obj)] = obj
    return q.validate(objs, live_map, set(namespaces), **kw)


def test_valid_configuration_has_no_problems():
    objs = [rf('default'), cohort('root'), cohort('research', 'root'), cq('a', cohortName='research'),
            lq('q', 'team-a', 'a')]
    assert validate(objs) == []


def test_a_reference_that_is_not_a_string_is_a_problem_not_a_crash():
    # Found by tests/unit/fuzz: a list where a name belongs raised TypeError (unhashable) in validate.
    bad_parent = dict(cohort('c'), spec={'parentName': [None]})
    bad_queue = dict(lq('q', 'team-a', 'a'), spec={'clusterQueue': ['a']})
    problems = validate([rf('default'), cq('a'), bad_parent, bad_queue])
    assert [(p.obj, p.field) for p in problems] == [('LocalQueue team-a/q', 'spec.clusterQueue'),
                                                    ('Cohort c', 'spec.parentName')]
    assert all('(a string), got [' in str(p) for p in problems)
    assert q.implicit_cohorts([bad_parent, dict(cq('b'), spec={'cohortName': ['x']})], {}) == []


def test_references_resolve_against_the_cluster():
    objs = [cq('a'), lq('q', 'team-a', 'a')]
    assert validate(objs, live=[rf('default')]) == []


def test_dangling_references_named():
    ac_cq = cq('a', flavors=('default', 'spot'), admissionChecksStrategy={'admissionChecks': [{'name': 'prov'}]})
    objs = [rf('default', topologyName='dc'), ac_cq, lq('q', 'team-a', 'nope'), lq('r', 'team-b', 'a'),
            {'apiVersion': 'kueue.x-k8s.io/v1beta2', 'kind': 'AdmissionCheck', 'metadata': {'name': 'other'},
             'spec': {'controllerName': 'c', 'parameters': {'apiGroup': 'kueue.x-k8s.io',
                                                            'kind': 'ProvisioningRequestConfig', 'name': 'prc'}}}]
    got = texts(validate(objs))
    assert got == [
        "ResourceFlavor default: spec.topologyName: Topology 'dc' does not exist in the input or the cluster; "
        "declare it in resources/src or correct the name",
        "ClusterQueue a: spec.resourceGroups[0].flavors[1].name: ResourceFlavor 'spot' does not exist in the input "
        "or the cluster; declare it in resources/src or correct the name",
        "ClusterQueue a: spec.admissionChecksStrategy.admissionChecks[0].name: AdmissionCheck 'prov' does not exist "
        "in the input or the cluster; declare it in resources/src or correct the name",
        "LocalQueue team-a/q: spec.clusterQueue: ClusterQueue 'nope' does not exist in the input or the cluster; "
        "declare it in resources/src or correct the name",
        "LocalQueue team-b/r: metadata.namespace: namespace 'team-b' does not exist; create it first or set "
        "create_namespaces: true",
        "AdmissionCheck other: spec.parameters.name: ProvisioningRequestConfig 'prc' does not exist in the input or "
        "the cluster; declare it in resources/src or correct the name",
    ]


def test_create_namespaces_accepts_missing_namespace():
    assert validate([rf('default'), cq('a'), lq('r', 'team-b', 'a')], create_namespaces=True) == []


def test_reference_to_object_being_pruned():
    live = [cq('a')]
    problems = validate([rf('default'), lq('q', 'team-a', 'a')], live=live, pruned=[('ClusterQueue', '', 'a')])
    assert texts(problems) == ["LocalQueue team-a/q: spec.clusterQueue: ClusterQueue 'a' is not in the input and "
                               "would be pruned; declare it again or drop the reference"]


def test_bad_quantities_named_with_field():
    bad = cq('a')
    bad['spec']['resourceGroups'][0]['flavors'][0]['resources'][0].update(nominalQuota='10 cores',
                                                                          borrowingLimit='-2')
    bad['spec']['fairSharing'] = {'weight': 'heavy'}
    problems = validate([rf('default'), bad])
    assert [p.field for p in problems] == [
        'spec.resourceGroups[0].flavors[0].resources[0].nominalQuota',
        'spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit',
        'spec.fairSharing.weight',
    ]
    assert all(p.obj == 'ClusterQueue a' for p in problems)


def test_aks_prefix_only_on_managed_clusters():
    objs = [rf('aks-cpu'), rf('default')]
    assert validate(objs) == []
    problems = validate(objs, aks_managed=True)
    assert [(p.obj, p.field) for p in problems] == [('ResourceFlavor aks-cpu', 'metadata.name')]


def test_implicit_cohorts_are_not_problems():
    objs = [rf('default'), cq('a', cohortName='implicit-one'), cohort('child', 'implicit-root')]
    assert validate(objs) == []
    assert q.implicit_cohorts(objs, {}) == ['implicit-one', 'implicit-root']


def test_cohort_cycles_detected():
    objs = [cohort('a', 'b'), cohort('b', 'c'), cohort('c', 'a'), cohort('self', 'self'), cohort('ok', 'a')]
    problems = validate(objs)
    assert texts(problems) == [
        'Cohort a: spec.parentName: cohort cycle a -> b -> c -> a; Kueue deactivates every ClusterQueue under a cycle',
        'Cohort self: spec.parentName: cohort cycle self -> self; Kueue deactivates every ClusterQueue under a cycle',
    ]


def test_cohort_cycle_through_the_cluster():
    live = [cohort('x', 'y')]
    problems = validate([cohort('y', 'x')], live=live)
    assert [(p.obj, p.field) for p in problems] == [('Cohort y', 'spec.parentName')]
    # the input overrides the live parent: breaking the cycle in the input is enough
    assert validate([cohort('y'), cohort('x', 'y')], live=[cohort('x', 'y'), cohort('y', 'x')]) == []


def test_find_cohort_cycles_pure():
    assert q.find_cohort_cycles({'a': 'b', 'b': None}) == []
    assert q.find_cohort_cycles({'b': 'a', 'a': 'b', 'c': 'a'}) == [['a', 'b']]


# ------------------------------------------------------------------ ordering
def test_dependency_order():
    objs = [lq('q', 'team-a', 'a'), cq('a'), {'kind': 'WorkloadPriorityClass', 'metadata': {'name': 'w'}},
            {'kind': 'AdmissionCheck', 'metadata': {'name': 'ac'}}, cohort('c'), rf('f'),
            {'kind': 'Topology', 'metadata': {'name': 't'}}, {'kind': 'ProvisioningRequestConfig',
                                                              'metadata': {'name': 'p'}}]
    kinds = [o['kind'] for o in q.dependency_order(objs)]
    assert kinds == ['Topology', 'ResourceFlavor', 'Cohort', 'ProvisioningRequestConfig', 'AdmissionCheck',
                     'WorkloadPriorityClass', 'ClusterQueue', 'LocalQueue']
    assert [k for k, _ in q.group_by_kind(objs, reverse=True)] == list(reversed(kinds))


# ------------------------------------------------------------------ loading
def test_src_folder_sorted_and_multi_document(tmp_path):
    (tmp_path / 'b').mkdir()
    (tmp_path / '10-queues.yaml').write_text(
        'apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: a}\n---\n'
        '---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: q, namespace: n}\n')
    (tmp_path / '01-flavors.yml').write_text('apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\n'
                                             'metadata: {name: f}\n')
    (tmp_path / 'b' / 'x.yaml').write_text('apiVersion: v1\nkind: List\nitems:\n'
                                           '- {apiVersion: kueue.x-k8s.io/v1beta2, kind: Cohort, metadata: {name: c}}\n')
    (tmp_path / 'README.md').write_text('not yaml: [')
    items = q.load_inputs([rf('inline')], str(tmp_path))
    names = [d['metadata']['name'] for _o, d in items]
    assert names == ['inline', 'f', 'a', 'q', 'c']
    assert items[0][0] == 'resources[0]'
    assert items[2][0].endswith('10-queues.yaml#0')
    assert items[3][0].endswith('10-queues.yaml#2')
    assert items[4][0].endswith('x.yaml#0.items[0]')


def test_src_single_file_and_errors(tmp_path):
    path = tmp_path / 'one.yaml'
    path.write_text('apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: f}\n')
    assert [d['kind'] for _o, d in q.load_inputs(None, str(path))] == ['ResourceFlavor']
    with pytest.raises(q.LoadError) as err:
        q.load_inputs(None, str(tmp_path / 'missing.yaml'))
    assert err.value.field == 'src'
    bad = tmp_path / 'bad.yaml'
    bad.write_text('kind: [unclosed\n')
    with pytest.raises(q.LoadError) as err:
        q.load_inputs(None, str(bad))
    assert 'not valid YAML' in err.value.text
    empty = tmp_path / 'empty'
    empty.mkdir()
    with pytest.raises(q.LoadError):
        q.load_inputs(None, str(empty))


# --------------------------------------------------------- prune and changes
def managed(obj, manager='kueueops', operation='Apply'):
    obj = copy.deepcopy(obj)
    obj['metadata']['managedFields'] = [{'manager': manager, 'operation': operation, 'apiVersion': 'kueue.x-k8s.io/v1beta2',
                                         'fieldsType': 'FieldsV1', 'fieldsV1': {'f:spec': {}}}]
    return obj


def test_prune_candidates():
    live = {}
    for obj in [managed(rf('gone')), managed(rf('kept')), rf('foreign'), managed(rf('other'), manager='kubectl'),
                managed(rf('aks-cpu')), managed(lq('old', 'team-a', 'a')), managed(cq('old-cq'))]:
        live.setdefault(obj['kind'], {})[api.obj_key(obj)] = obj
    desired = set([('ResourceFlavor', '', 'kept')])
    got = q.prune_candidates(live, desired, aks_managed=True)
    assert got == [('LocalQueue', 'team-a', 'old'), ('ClusterQueue', '', 'old-cq'), ('ResourceFlavor', '', 'gone')]
    assert ('ResourceFlavor', '', 'aks-cpu') in q.prune_candidates(live, desired, aks_managed=False)


def test_apply_changes():
    live = managed(cq('a'))
    live['metadata'].update(resourceVersion='5', generation=2, uid='u')
    live['status'] = {'conditions': [{'type': 'Active', 'status': 'True'}]}
    dry = copy.deepcopy(live)
    dry['metadata']['resourceVersion'] = '5'
    dry['metadata']['managedFields'][0]['time'] = 'later'
    dry['status'] = {}
    assert q.apply_changes(dry, live) == 'unchanged'
    assert q.apply_changes(dry, None) == 'created'
    changed = copy.deepcopy(dry)
    changed['spec']['resourceGroups'][0]['flavors'][0]['resources'][0]['nominalQuota'] = '8'
    assert q.apply_changes(changed, live) == 'updated'
    # same content, but we take ownership of more fields: a write
    owned = copy.deepcopy(dry)
    owned['metadata']['managedFields'][0]['fieldsV1'] = {'f:spec': {'f:stopPolicy': {}}}
    assert q.apply_changes(owned, live) == 'updated'


def test_active_state():
    assert q.active_state({'status': {'conditions': [{'type': 'Active', 'status': 'True', 'reason': 'Ready'}]}}) == \
        (True, 'Ready')
    assert q.active_state({'status': {'conditions': [{'type': 'Active', 'status': 'False',
                                                      'reason': 'FlavorNotFound', 'message': 'Can\'t admit'}]}}) == \
        (False, "FlavorNotFound: Can't admit")
    assert q.active_state({})[0] is False


def test_quantity_spelling_is_not_a_change():
    # Kueue's controller rewrites the object through Go types (adding its finalizer),
    # which serialises quantities canonically: 32 -> "32", "32000m" -> "32".
    live = managed(cq('a'))
    live['spec']['resourceGroups'][0]['flavors'][0]['resources'][0]['nominalQuota'] = '32'
    live['spec']['fairSharing'] = {'weight': '500m'}
    dry = copy.deepcopy(live)
    dry['spec']['resourceGroups'][0]['flavors'][0]['resources'][0]['nominalQuota'] = 32
    dry['spec']['fairSharing'] = {'weight': 0.5}
    assert q.apply_changes(dry, live) == 'unchanged'
    dry['spec']['resourceGroups'][0]['flavors'][0]['resources'][0]['nominalQuota'] = '32000m'
    assert q.apply_changes(dry, live) == 'unchanged'
    dry['spec']['resourceGroups'][0]['flavors'][0]['resources'][0]['nominalQuota'] = '33'
    assert q.apply_changes(dry, live) == 'updated'


def test_numeric_quantities_sent_as_strings():
    doc = cq('a')
    doc['spec']['resourceGroups'][0]['flavors'][0]['resources'][0].update(nominalQuota=32, borrowingLimit=0.5)
    objs, problems = norm([doc])
    assert problems == []
    res = objs[0]['spec']['resourceGroups'][0]['flavors'][0]['resources'][0]
    assert res['nominalQuota'] == '32' and res['borrowingLimit'] == '0.5'


# ------------------------------------------------------------------ MultiKueue
KUBECONFIG = ('apiVersion: v1\nkind: Config\nclusters:\n- name: w\n  cluster: {server: \'https://127.0.0.1:1\'}\n'
              'users:\n- name: w\n  user: {token: s3cr3t-token-value}\ncontexts:\n- name: w\n'
              '  context: {cluster: w, user: w}\ncurrent-context: w\n')
KUBECONFIG_B64 = __import__('base64').b64encode(KUBECONFIG.encode()).decode()


def mk_cluster(name, secret=None, version='v1beta2', location_type=None):
    kubeconfig = {'location': secret or name}
    if location_type:
        kubeconfig['locationType'] = location_type
    spec = {'clusterSource': {'kubeConfig': kubeconfig}} if version == 'v1beta2' else {'kubeConfig': kubeconfig}
    return {'apiVersion': 'kueue.x-k8s.io/' + version, 'kind': 'MultiKueueCluster', 'metadata': {'name': name},
            'spec': spec}


def mk_config(name, clusters):
    return {'apiVersion': 'kueue.x-k8s.io/v1beta2', 'kind': 'MultiKueueConfig', 'metadata': {'name': name},
            'spec': {'clusters': list(clusters)}}


def mk_check(name, config='workers', **params):
    parameters = {'apiGroup': 'kueue.x-k8s.io', 'kind': 'MultiKueueConfig', 'name': config}
    parameters.update(params)
    return {'apiVersion': 'kueue.x-k8s.io/v1beta2', 'kind': 'AdmissionCheck', 'metadata': {'name': name},
            'spec': {'controllerName': 'kueue.x-k8s.io/multikueue', 'parameters': parameters}}


def secret(name, namespace=None, **fields):
    obj = {'apiVersion': 'v1', 'kind': 'Secret', 'metadata': {'name': name}, 'type': 'Opaque'}
    if namespace:
        obj['metadata']['namespace'] = namespace
    obj.update(fields or {'data': {'kubeconfig': KUBECONFIG_B64}})
    return obj


def test_multikueue_kinds_in_dependency_order():
    order = list(api.KIND_ORDER)
    assert order.index('Secret') < order.index('MultiKueueCluster') < order.index('MultiKueueConfig') \
        < order.index('AdmissionCheck') < order.index('ClusterQueue')
    objs = q.dependency_order([mk_check('mk'), mk_config('workers', ['w1']), mk_cluster('w1'),
                               secret('w1', 'kueue-system')])
    assert [o['kind'] for o in objs] == ['Secret', 'MultiKueueCluster', 'MultiKueueConfig', 'AdmissionCheck']


def test_multikueue_cluster_converted_both_ways():
    objs, problems = norm([mk_cluster('w1', version='v1beta1')], V2)
    assert problems == []
    assert objs[0]['spec'] == {'clusterSource': {'kubeConfig': {'location': 'w1'}}}
    objs, problems = norm([mk_cluster('w1')], V1)
    assert problems == [] and objs[0]['apiVersion'] == 'kueue.x-k8s.io/v1beta1'
    assert objs[0]['spec'] == {'kubeConfig': {'location': 'w1'}}
    wrong = mk_cluster('w2')
    wrong['spec'] = {'kubeConfig': {'location': 'w2'}}
    _objs, problems = norm([wrong], V2)
    assert texts(problems) == ['MultiKueueCluster w2: spec.kubeConfig: not a field of kueue.x-k8s.io/v1beta2 '
                               'MultiKueueCluster; write spec.clusterSource.kubeConfig (or change apiVersion)']


def test_secret_normalised_string_data_folded_and_namespace_defaulted():
    problems = []
    objs = q.normalise_all([('src#0', secret('w1', stringData={'kubeconfig': KUBECONFIG}))], V2, problems,
                           'kueue-mk')
    assert problems == []
    assert objs == [{'apiVersion': 'v1', 'kind': 'Secret', 'metadata': {'name': 'w1', 'namespace': 'kueue-mk'},
                     'type': 'Opaque', 'data': {'kubeconfig': KUBECONFIG_B64}}]


def test_secret_problems_never_show_values():
    docs = [secret('a', 'other-ns'), secret('b', data={'kubeconfig': 'not base64 ' + KUBECONFIG}),
            secret('c', data={'token': KUBECONFIG_B64}), dict(secret('d'), apiVersion='v2'),
            dict(secret('e'), spec={'x': 1})]
    problems = []
    assert q.normalise_all([('src#%d' % i, d) for i, d in enumerate(docs)], V2, problems) == []
    got = texts(problems)
    assert [(p.obj, p.field) for p in problems] == [
        ('Secret other-ns/a', 'metadata.namespace'), ('Secret kueue-system/b', 'data.kubeconfig'),
        ('Secret kueue-system/c', 'data.kubeconfig'), ('Secret kueue-system/d', 'apiVersion'),
        ('Secret kueue-system/e', 'spec')]
    for text in got:
        assert 's3cr3t' not in text and KUBECONFIG_B64 not in text


def test_multikueue_cross_references():
    objs = [secret('w1', 'kueue-system'), mk_cluster('w1'), mk_cluster('w2', 'missing'),
            mk_cluster('w3', '/etc/kc', location_type='Path'), mk_config('workers', ['w1', 'w2', 'nope']),
            mk_check('mk'), mk_check('mk-bad', config='absent'), mk_check('mk-kind', kind='ProvisioningRequestConfig'),
            secret('stray', 'kueue-system')]
    got = texts(validate(objs, namespaces=('kueue-system',)))
    assert got == [
        "MultiKueueCluster w2: spec.clusterSource.kubeConfig.location: Secret kueue-system/missing does not exist in "
        "the input or the cluster; create it with the worker cluster's kubeconfig under the key 'kubeconfig' (or "
        "restore a backup taken with include_secrets: true)",
        "MultiKueueConfig workers: spec.clusters[2]: MultiKueueCluster 'nope' does not exist in the input or the "
        "cluster; declare it in resources/src or correct the name",
        "AdmissionCheck mk-bad: spec.parameters.name: MultiKueueConfig 'absent' does not exist in the input or the "
        "cluster; declare it in resources/src or correct the name",
        "AdmissionCheck mk-kind: spec.parameters.name: ProvisioningRequestConfig 'workers' does not exist in the "
        "input or the cluster; declare it in resources/src or correct the name",
        "AdmissionCheck mk-kind: spec.parameters: an AdmissionCheck of controller kueue.x-k8s.io/multikueue needs "
        "parameters {apiGroup: kueue.x-k8s.io, kind: MultiKueueConfig, name: <MultiKueueConfig>}",
        "Secret kueue-system/stray: kind: no MultiKueueCluster of the input or the cluster uses this Secret; "
        "kueue_queues applies only the Secrets MultiKueueClusters read their kubeconfig from "
        "(spec.clusterSource.kubeConfig.location); apply other Secrets with kubernetes.core.k8s",
    ]


def test_multikueue_secret_live_and_namespace():
    live_secret = secret('w1', 'kueue-system')
    assert validate([mk_cluster('w1')], live=[live_secret], namespaces=()) == []
    no_key = secret('w2', 'kueue-system', data={'other': KUBECONFIG_B64})
    assert texts(validate([mk_cluster('w2')], live=[no_key])) == [
        "MultiKueueCluster w2: spec.clusterSource.kubeConfig.location: Secret kueue-system/w2 has no key "
        "'kubeconfig', where Kueue reads the kubeconfig"]
    # A Secret of the input used by a live MultiKueueCluster; the Kueue namespace must exist.
    got = texts(validate([secret('w1', 'kueue-system')], live=[mk_cluster('w1')], namespaces=()))
    assert got == ["Secret kueue-system/w1: metadata.namespace: namespace 'kueue-system' (where Kueue runs) does not "
                   "exist; install Kueue first"]


def test_secrets_pruned_only_when_no_remaining_cluster_uses_them():
    live = {}
    for obj in [managed(secret('w1', 'kueue-system')), managed(secret('w2', 'kueue-system')),
                secret('w3', 'kueue-system'), managed(mk_cluster('w1')), managed(mk_cluster('w2'))]:
        live.setdefault(obj['kind'], {})[api.obj_key(obj)] = obj
    # w1 leaves the input with its Secret; w2 stays (declared) and keeps using its Secret.
    declared = [mk_cluster('w2')]
    desired = set(api.obj_key(o) for o in declared)
    got = q.prune_candidates(live, desired, objects=declared)
    assert got == [('MultiKueueCluster', '', 'w1'), ('Secret', 'kueue-system', 'w1')]


def test_secret_values_and_redaction():
    obj = secret('w1', 'kueue-system')
    values = q.secret_values([obj, rf('x'), {'kind': 'Secret', 'stringData': {'k': 'plain'}}])
    assert values == {KUBECONFIG_B64, KUBECONFIG, 'plain'}
    view = q.diff_view(obj)
    assert view['data'] == {'kubeconfig': 'VALUE_REDACTED_BY_KUEUEOPS'}
    changed = copy.deepcopy(obj)
    changed['data']['kubeconfig'] = 'Y2hhbmdlZA=='
    assert q.diff_view(changed, obj)['data'] == {'kubeconfig': 'VALUE_REDACTED_BY_KUEUEOPS (changed)'}
    assert q.diff_view(obj, obj)['data'] == {'kubeconfig': 'VALUE_REDACTED_BY_KUEUEOPS'}
    assert obj['data']['kubeconfig'] == KUBECONFIG_B64  # the input is untouched
    assert q.diff_view(rf('x')) == rf('x')


def test_multikueue_config_quota_management_down_to_v1beta1():
    manual = dict(mk_config('a', ['w1']), spec={'clusters': ['w1'], 'quotaManagement': 'Manual'})
    automated = dict(mk_config('b', ['w1']), spec={'clusters': ['w1'], 'quotaManagement': 'Automated'})
    objs, problems = norm([manual, automated], V1)
    assert objs[0]['spec'] == {'clusters': ['w1']}
    assert [(p.obj, p.field) for p in problems] == [('MultiKueueConfig b', 'spec.quotaManagement')]


# ------------------------------------------------------------------ ProvisioningRequest
def provisioning_check(name='prov', controller='kueue.x-k8s.io/provisioning-request'):
    return {'apiVersion': 'kueue.x-k8s.io/v1beta2', 'kind': 'AdmissionCheck', 'metadata': {'name': name},
            'spec': {'controllerName': controller}}


def test_provisioning_request_check_needs_the_api():
    objs, problems = norm([provisioning_check(), provisioning_check('mk', 'kueue.x-k8s.io/multikueue'),
                           provisioning_check('other', 'example.com/controller')])
    assert problems == []
    assert [o['metadata']['name'] for o in q.provisioning_request_checks(objs)] == ['prov']
    mine = [objs[0], objs[2]]
    got = validate(mine, provisioning_request_api=False)
    assert [(p.obj, p.field) for p in got] == [('AdmissionCheck prov', 'spec.controllerName')]
    text = str(got[0])
    for part in ('kueue.x-k8s.io/provisioning-request', 'ProvisioningRequest API (autoscaling.x-k8s.io/v1 '
                 'provisioningrequests)', 'does not serve', "Install cluster-autoscaler's ProvisioningRequest CRD",
                 'restart the Kueue manager', 'or remove this AdmissionCheck'):
        assert part in text, part
    # Served, or not looked up: no problem; other controllers are never asked about it.
    assert validate(mine, provisioning_request_api=True) == []
    assert validate(mine) == []
    assert validate([objs[2]], provisioning_request_api=False) == []


@pytest.mark.parametrize("spec", [{"admissionChecks": 1}, {"admissionChecksStrategy": 1},
                                  {"admissionChecksStrategy": {"admissionChecks": "check"}}])
def test_admission_check_names_of_a_wrong_type_are_none_not_a_crash(spec):
    # found by tests/unit/fuzz (a ClusterQueue with spec.admissionChecks: 1 raised TypeError); the schema check
    # reports the type
    assert q.admission_check_names({"spec": spec}) == []


def test_a_multikueue_config_whose_clusters_is_not_a_list_is_not_a_crash():
    # found by tests/unit/fuzz (spec.clusters: true raised TypeError in validate)
    config = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueConfig", "metadata": {"name": "m"},
              "spec": {"clusters": True}}
    q.validate([config], {}, set())
