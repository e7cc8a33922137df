# Copyright: (c) 2026, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/module_utils/kueue/multikueue.py (no cluster): the worker kubeconfig check, the generated
wiring, the ClusterQueues' AdmissionCheck, the option's refusals, ownership."""

import copy

import pytest
import yaml

from ansible_collections.kueueops.aks.plugins.module_utils.kueue import multikueue as mk
from ansible_collections.kueueops.aks.plugins.module_utils.kueue import kueue_api as api
from ansible_collections.kueueops.aks.plugins.module_utils.kueue import queues as q

TOKEN = 'mk-unit-token-0123456789'
V2 = dict((k, 'v1beta2') for k in api.KIND_ORDER)
V1 = dict((k, 'v1beta1') for k in api.KIND_ORDER)


def kubeconfig(cluster=None, user=None, current='w', **top):
    doc = {'apiVersion': 'v1', 'kind': 'Config',
           'clusters': [{'name': 'w', 'cluster': dict({'server': 'https://127.0.0.1:6443',
                                                       'certificate-authority-data': 'Q0E='}, **(cluster or {}))}],
           'users': [{'name': 'w', 'user': dict({'token': TOKEN}, **(user or {}))}],
           'contexts': [{'name': 'w', 'context': {'cluster': 'w', 'user': 'w'}}],
           'current-context': current}
    doc.update(top)
    return yaml.safe_dump(doc)


def fields(text):
    return [f for f, _why in mk.kubeconfig_problems(text)]


def test_a_service_account_kubeconfig_passes():
    assert mk.kubeconfig_problems(kubeconfig()) == []
    assert mk.kubeconfig_problems(kubeconfig(cluster={'server': 'https://Worker-1.Example.com'})) == []
    assert mk.kubeconfig_problems(kubeconfig(cluster={'server': 'https://[::1]:443'})) == []
    assert mk.kubeconfig_problems(kubeconfig(user={'client-certificate-data': 'Qw==', 'client-key-data': 'Sw=='})) == []


@pytest.mark.parametrize('text,field', [
    (kubeconfig(user={'exec': {'command': 'kubelogin', 'apiVersion': 'client.authentication.k8s.io/v1'}}),
     'users[0].user.exec'),
    (kubeconfig(user={'auth-provider': {'name': 'azure'}}), 'users[0].user.auth-provider'),
    (kubeconfig(user={'tokenFile': '/var/run/token'}), 'users[0].user.tokenFile'),
    (kubeconfig(user={'username': 'admin', 'password': 'pw-secret'}), 'users[0].user.username'),
    (kubeconfig(user={'password': 'pw-secret'}), 'users[0].user.password'),
    (kubeconfig(cluster={'insecure-skip-tls-verify': True}), 'clusters[0].cluster.insecure-skip-tls-verify'),
    (kubeconfig(cluster={'certificate-authority': '/etc/ca.crt'}), 'clusters[0].cluster.certificate-authority'),
    (kubeconfig(cluster={'server': ''}), 'clusters[0].cluster.server'),
    (kubeconfig(cluster={'server': 'worker:6443'}), 'clusters[0].cluster.server'),
    (kubeconfig(cluster={'server': 'https://bad_host.example.com'}), 'clusters[0].cluster.server'),
    (kubeconfig(current=''), 'current-context'),
    (kubeconfig(current='other'), 'current-context'),
    (kubeconfig(contexts=[{'name': 'w', 'context': {'cluster': 'w'}}]), 'contexts[0].context.user'),
    (kubeconfig(contexts=[{'name': 'w', 'context': {'cluster': 'x', 'user': 'w'}}]), 'contexts[0].context.cluster'),
    (kubeconfig(users=[]), 'users'),
    (kubeconfig(clusters=['w']), 'clusters[0]'),
    ('clusters: [unclosed\n  token: %s' % TOKEN, ''),
    ('just a string', ''),
    ('', ''),
    (None, ''),
])
def test_what_multikueue_refuses_is_named_by_field(text, field):
    found = mk.kubeconfig_problems(text)
    assert field in [f for f, _why in found], found
    for kfield, why in found:
        message = mk.kubeconfig_text(kfield, why)
        assert TOKEN not in message and 'pw-secret' not in message and 'kubelogin' not in message
        assert 'InsecureKubeConfig' in message


def test_unused_users_are_judged_as_kueue_does():
    # Kueue refuses a tokenFile on any user, exec/basic auth only on the user the current context names.
    doc = yaml.safe_load(kubeconfig())
    doc['users'].append({'name': 'other', 'user': {'exec': {'command': 'x'}, 'tokenFile': '/t'}})
    assert fields(yaml.safe_dump(doc)) == ['users[1].user.tokenFile']


def test_garbage_yaml_names_the_line_not_the_content():
    found = mk.kubeconfig_problems('a: 1\nb: [%s\n' % TOKEN)
    assert found[0][1].startswith('is not valid YAML') and TOKEN not in found[0][1]


def test_kubeconfig_secrets():
    text = kubeconfig(user={'client-key-data': 'S0VZLWRhdGE='})
    assert mk.kubeconfig_secrets(text) == {TOKEN, 'S0VZLWRhdGE='}
    assert mk.kubeconfig_secrets('[unclosed') == set()


# ---------------------------------------------------------------------- the option
def option(**kw):
    out = {'config': 'kueueops-multikueue', 'admission_check': 'kueueops-multikueue', 'cluster_queues': ['team-a'],
           'clusters': [{'name': 'worker-1', 'kubeconfig': kubeconfig()},
                        {'name': 'worker-2', 'kubeconfig': kubeconfig()}]}
    out.update(kw)
    return out


def cq(name='team-a', version='v1beta2', **spec):
    body = {'namespaceSelector': {}, 'resourceGroups': [{'coveredResources': ['cpu'], 'flavors': [
        {'name': 'default', 'resources': [{'name': 'cpu', 'nominalQuota': '4'}]}]}]}
    body.update(spec)
    return {'apiVersion': 'kueue.x-k8s.io/' + version, 'kind': 'ClusterQueue', 'metadata': {'name': name},
            'spec': body}


def items(*docs):
    return [('resources[%d]' % i, d) for i, d in enumerate(docs)]


def test_documents_are_the_whole_wiring_labelled():
    docs = [d for _o, d in mk.documents(option(), 'kueue-system')]
    assert [(d['kind'], d['metadata']['name']) for d in docs] == [
        ('Secret', 'kueueops-multikueue-worker-1'), ('MultiKueueCluster', 'worker-1'),
        ('Secret', 'kueueops-multikueue-worker-2'), ('MultiKueueCluster', 'worker-2'),
        ('MultiKueueConfig', 'kueueops-multikueue'), ('AdmissionCheck', 'kueueops-multikueue')]
    for doc in docs:
        assert doc['metadata']['labels'] == {'app.kubernetes.io/managed-by': 'kueueops',
                                             'kueueops.aks/multikueue': 'kueueops-multikueue'}
    assert docs[0]['metadata']['namespace'] == 'kueue-system' and docs[0]['stringData'] == {'kubeconfig': kubeconfig()}
    assert docs[1]['spec'] == {'clusterSource': {'kubeConfig': {'locationType': 'Secret',
                                                                'location': 'kueueops-multikueue-worker-1'}}}
    assert docs[4]['spec'] == {'clusters': ['worker-1', 'worker-2']}
    assert docs[5]['spec'] == {'controllerName': 'kueue.x-k8s.io/multikueue', 'parameters': {
        'apiGroup': 'kueue.x-k8s.io', 'kind': 'MultiKueueConfig', 'name': 'kueueops-multikueue'}}


def test_documents_validate_and_convert_for_v1beta1():
    problems = []
    generated = mk.documents(option(), 'kueue-system')
    objs = q.normalise_all(generated, V1, problems)
    assert problems == []
    cluster = [o for o in objs if o['kind'] == 'MultiKueueCluster'][0]
    assert cluster['apiVersion'] == 'kueue.x-k8s.io/v1beta1'
    assert cluster['spec'] == {'kubeConfig': {'locationType': 'Secret', 'location': 'kueueops-multikueue-worker-1'}}
    secret = [o for o in objs if o['kind'] == 'Secret'][0]
    assert set(secret['data']) == {'kubeconfig'} and 'stringData' not in secret
    problems = q.validate(objs, {}, {'kueue-system'}, kubeconfigs_checked={'kueueops-multikueue-worker-1',
                                                                           'kueueops-multikueue-worker-2'})
    assert problems == []


def test_attach_v1beta2_and_v1beta1_shapes():
    objs = [cq('team-a'), cq('team-b', 'v1beta1', admissionChecks=['prov']),
            cq('team-c', admissionChecksStrategy={'admissionChecks': [{'name': 'prov'}]}),
            cq('team-d', admissionChecksStrategy={'admissionChecks': [{'name': 'kueueops-multikueue'}]})]
    live = {'AdmissionCheck': {('AdmissionCheck', '', 'prov'): {'spec': {'controllerName': 'x/provisioning'}}}}
    assert mk.attach(objs, option(cluster_queues=['team-a', 'team-b', 'team-c', 'team-d']), live) == []
    assert objs[0]['spec']['admissionChecksStrategy'] == {'admissionChecks': [{'name': 'kueueops-multikueue'}]}
    assert objs[1]['spec']['admissionChecks'] == ['prov', 'kueueops-multikueue']
    assert 'admissionChecksStrategy' not in objs[1]['spec']
    assert objs[2]['spec']['admissionChecksStrategy']['admissionChecks'] == [{'name': 'prov'},
                                                                             {'name': 'kueueops-multikueue'}]
    assert objs[3]['spec']['admissionChecksStrategy']['admissionChecks'] == [{'name': 'kueueops-multikueue'}]


def test_attach_refuses_a_second_multikueue_check_and_on_flavors():
    other = {'apiVersion': 'kueue.x-k8s.io/v1beta2', 'kind': 'AdmissionCheck', 'metadata': {'name': 'declared-mk'},
             'spec': {'controllerName': 'kueue.x-k8s.io/multikueue'}}
    objs = [other, cq('team-a', admissionChecksStrategy={'admissionChecks': [{'name': 'declared-mk'}]}),
            cq('team-b', 'v1beta1', admissionChecks=['live-mk']),
            cq('team-c', admissionChecksStrategy={'admissionChecks': [{'name': 'kueueops-multikueue',
                                                                       'onFlavors': ['default']}]})]
    live = {'AdmissionCheck': {('AdmissionCheck', '', 'live-mk'): {'spec': {'controllerName': mk.CONTROLLER}}}}
    before = copy.deepcopy(objs)
    found = mk.attach(objs, option(cluster_queues=['team-a', 'team-b', 'team-c']), live)
    assert [(p[0], p[1]) for p in found] == [
        ('ClusterQueue team-a', 'multikueue.cluster_queues[0]'), ('ClusterQueue team-b', 'multikueue.cluster_queues[1]'),
        ('ClusterQueue team-c', 'multikueue.cluster_queues[2]')]
    assert 'MultipleMultiKueueAdmissionChecks' in found[0][2] and "'declared-mk'" in found[0][3]
    assert 'live-mk' in found[1][2]
    assert 'onFlavors' in found[2][2] and 'kueue_multikueue_cluster_queues' in found[2][3]
    assert objs == before  # nothing added to a refused ClusterQueue
    # A pruned live check is not in the way.
    assert mk.attach(copy.deepcopy(objs[2:3]), option(cluster_queues=['team-b']), live,
                     pruned=[('AdmissionCheck', '', 'live-mk')]) == []


def problem_fields(found):
    return [p[1] for p in found]


def test_option_problems_names_and_duplicates():
    bad = option(config='Bad_Config', admission_check='x' * 254, clusters=[
        {'name': 'worker-1', 'kubeconfig': kubeconfig()}, {'name': 'worker-1', 'kubeconfig': kubeconfig()},
        {'name': 'UPPER', 'kubeconfig': kubeconfig()}, {'name': 'a' * 64, 'kubeconfig': kubeconfig()}])
    found = mk.option_problems(bad, items(cq()), 'kueue-system')
    assert problem_fields(found) == ['multikueue.config', 'multikueue.admission_check', 'multikueue.clusters[1].name',
                                     'multikueue.clusters[2].name', 'multikueue.clusters[3].name']
    assert 'listed twice' in found[2][2]
    assert problem_fields(mk.option_problems(option(clusters=[]), items(cq()), 'kueue-system')) == [
        'multikueue.clusters']
    assert problem_fields(mk.option_problems(option(config='c' * 64), items(cq()), 'kueue-system')) == [
        'multikueue.config']


def test_option_problems_clashes_and_cluster_queues():
    declared = items(cq(), {'apiVersion': 'kueue.x-k8s.io/v1beta2', 'kind': 'MultiKueueCluster',
                            'metadata': {'name': 'worker-2'}},
                     {'apiVersion': 'kueue.x-k8s.io/v1beta2', 'kind': 'MultiKueueConfig',
                      'metadata': {'name': 'kueueops-multikueue'}},
                     {'apiVersion': 'kueue.x-k8s.io/v1beta2', 'kind': 'AdmissionCheck',
                      'metadata': {'name': 'kueueops-multikueue'}})
    declared.append(('secrets[0]', {'apiVersion': 'v1', 'kind': 'Secret',
                                    'metadata': {'name': 'kueueops-multikueue-worker-1'}}))
    found = mk.option_problems(option(cluster_queues=['team-a', 'team-x', 'team-a']), declared, 'kueue-system')
    assert problem_fields(found) == ['multikueue.config', 'multikueue.admission_check', 'multikueue.clusters[0].name',
                                     'multikueue.clusters[1].name', 'multikueue.cluster_queues[1]',
                                     'multikueue.cluster_queues[2]']
    assert 'secrets[0]' in found[2][2] and 'resources[1]' in found[3][2]
    assert found[4][3] == ('declare it in resources/src, or remove it from kueue_multikueue_cluster_queues '
                           '(multikueue.cluster_queues)')


def test_option_problems_kubeconfigs_name_the_worker_never_the_value():
    bad = option(clusters=[{'name': 'worker-1', 'kubeconfig': kubeconfig()},
                           {'name': 'worker-2', 'kubeconfig': kubeconfig(user={'exec': {'command': 'kubelogin'}})}])
    found = mk.option_problems(bad, items(cq()), 'kueue-system')
    assert len(found) == 1
    obj, field, text, fix = found[0]
    assert (obj, field) == ('MultiKueueCluster worker-2', 'multikueue.clusters[1].kubeconfig')
    assert text.startswith('users[0].user.exec: exec plugins are not allowed') and 'InsecureKubeConfig' in text
    assert 'certificate-authority-data' in fix and 'kueue_multikueue_worker' in fix
    assert TOKEN not in str(found) and 'kubelogin' not in str(found)
    # state=absent deletes: neither kubeconfigs nor ClusterQueues are judged.
    assert mk.option_problems(dict(bad, cluster_queues=['team-x']), [], 'kueue-system', present=False) == []


def test_declared_secret_kubeconfigs_are_checked_like_the_option():
    secret = {'apiVersion': 'v1', 'kind': 'Secret', 'metadata': {'name': 's'},
              'stringData': {'kubeconfig': kubeconfig(cluster={'insecure-skip-tls-verify': True})}}
    cluster = {'apiVersion': 'kueue.x-k8s.io/v1beta2', 'kind': 'MultiKueueCluster', 'metadata': {'name': 'w'},
               'spec': {'clusterSource': {'kubeConfig': {'locationType': 'Secret', 'location': 's'}}}}
    problems = []
    objs = q.normalise_all([('secrets[0]', secret), ('resources[0]', cluster)], V2, problems)
    found = q.validate(objs, {}, {'kueue-system'})
    assert [(p.obj, p.field) for p in found] == [('Secret kueue-system/s', 'data.kubeconfig')]
    assert found[0].text.startswith('clusters[0].cluster.insecure-skip-tls-verify: skipping TLS verification')
    assert 'kueue_multikueue_worker' in found[0].fix and TOKEN not in str(found[0])
    assert q.validate(objs, {}, {'kueue-system'}, kubeconfigs_checked={'s'}) == []


def test_owned_and_summary():
    live = {'MultiKueueCluster': {('MultiKueueCluster', '', 'a'): {'metadata': {'labels': {mk.OWNER_LABEL: 'c'}}},
                                  ('MultiKueueCluster', '', 'b'): {'metadata': {'labels': {mk.OWNER_LABEL: 'd'}}},
                                  ('MultiKueueCluster', '', 'e'): {'metadata': {}}}}
    keys = sorted(live['MultiKueueCluster'])
    assert mk.owned(live, keys, 'c') == [('MultiKueueCluster', '', 'a')]
    assert mk.summary(option(), [('MultiKueueCluster', '', 'a'), ('Secret', 'kueue-system', 'c-a')]) == {
        'config': 'kueueops-multikueue', 'admission_check': 'kueueops-multikueue',
        'clusters': ['worker-1', 'worker-2'], 'cluster_queues': ['team-a'], 'pruned_clusters': ['a']}


# ------------------------------------------------------------------ the preflight (issue 44)
def test_every_watched_integration_is_a_framework_kueue_registers():
    from ansible_collections.kueueops.aks.plugins.module_utils.kueue import kueue_catalog
    frameworks = set(kueue_catalog.catalog_for('0.19.2').frameworks)
    assert set(mk.WATCHED_KINDS) <= frameworks
    # the two frameworks of 0.19.2 without a MultiKueueAdapter watch nothing on a worker
    assert frameworks - set(mk.WATCHED_KINDS) == {'deployment', 'sparkoperator.k8s.io/sparkapplication'}


def test_watched_kinds_follow_the_integrations_and_skip_those_without_an_adapter():
    assert mk.watched_kinds(['deployment', 'batch/job', 'ray.io/rayjob', 'batch/job']) == [
        ('batch/job', 'batch/v1', 'Job'), ('ray.io/rayjob', 'ray.io/v1', 'RayJob')]
    assert mk.watched_kinds([]) == []


def test_every_missing_kind_is_named_at_once_with_both_fixes():
    integrations = ['batch/job', 'ray.io/rayjob', 'ray.io/raycluster', 'jobset.x-k8s.io/jobset',
                    'leaderworkerset.x-k8s.io/leaderworkerset', 'deployment']
    served = {'batch/v1': {'Job'}, 'ray.io/v1': {'RayCluster'}, 'jobset.x-k8s.io/v1alpha2': None}
    missing = mk.missing_kinds(integrations, served)
    assert [m['kind'] for m in missing] == ['RayJob', 'JobSet', 'LeaderWorkerSet']
    text = mk.missing_kind_problem('worker-2', missing, integrations, 'the chart defaults')
    for word in ('worker-2', 'RayJob (ray.io/v1, integration ray.io/rayjob)', 'JobSet', 'LeaderWorkerSet',
                 'kueue_integrations', '[batch/job, ray.io/raycluster, deployment]', 'KubeRay',
                 'install the CRDs', 'the chart defaults', '3 kind(s)'):
        assert word in text, (word, text)
    assert mk.missing_kinds(integrations, {'batch/v1': {'Job'}, 'ray.io/v1': {'RayJob', 'RayCluster'},
                                           'jobset.x-k8s.io/v1alpha2': {'JobSet'},
                                           'leaderworkerset.x-k8s.io/v1': {'LeaderWorkerSet'}}) == []


def test_the_workload_api_version_is_refused_and_a_minor_skew_warned():
    problems, warnings = mk.kueue_problems('w1', '0.19.2', 'kueue.x-k8s.io/v1beta2', 'v0.14.3', ['v1beta1'])
    assert len(problems) == 1 and 'v1beta1 only' in problems[0] and 'kueue.x-k8s.io/v1beta2' in problems[0] \
        and 'kueue_version' in problems[0]
    assert len(warnings) == 1 and 'no version-skew policy' in warnings[0]
    assert mk.kueue_problems('w1', '0.19.2', 'kueue.x-k8s.io/v1beta2', 'v0.19.1', ['v1beta1', 'v1beta2']) == ([], [])
    # Kueue not installed on the worker yet (this run installs it): nothing to compare
    assert mk.kueue_problems('w1', '0.19.2', 'kueue.x-k8s.io/v1beta2', None, None) == ([], [])


def test_every_framework_of_every_catalog_minor_is_known_to_the_table():
    """A Kueue minor that registers a new framework must say here whether MultiKueue watches a kind for it."""
    from ansible_collections.kueueops.aks.plugins.module_utils.kueue import kueue_catalog
    known = set(mk.WATCHED_KINDS) | set(mk.WITHOUT_ADAPTER)
    for minor in kueue_catalog.known_minors():
        assert set(kueue_catalog.catalog_for(minor + '.0').frameworks) <= known, minor


def test_the_manager_option_is_checked_before_any_read():
    assert 'required with state=preflight' in mk.manager_error('preflight', None).message()
    assert 'only with state=preflight' in mk.manager_error('present', {'integrations': []}).message()
    err = mk.manager_error('preflight', {'integrations': ['batch/job', 'ray.io/rayjobs']})
    assert err.field == 'manager.integrations[1]' and 'ray.io/rayjob,' in err.fix
    assert mk.manager_error('preflight', {'integrations': None, 'api_version': 'kueue.x-k8s.io/v1'}) is None
    assert mk.manager_error('preflight', {'api_version': 'kueue.x-k8s.io/v1beta2x'}).field == 'manager.api_version'
    assert mk.manager_error('present', None) is None and mk.manager_error('absent', None) is None
