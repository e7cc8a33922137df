"""The MultiKueue inventory checks of the role entry point multikueue (filters multikueue_workers and
multikueue_problems over module_utils/kueue/multikueue.py): pure logic, no cluster."""

import pytest

from ansible_collections.kueueops.aks.plugins.filter.multikueue_problems import multikueue_problems
from ansible_collections.kueueops.aks.plugins.filter.multikueue_workers import multikueue_workers

CQ = {'apiVersion': 'kueue.x-k8s.io/v1beta2', 'kind': 'ClusterQueue', 'metadata': {'name': 'gpu'}, 'spec': {}}
GOOD = {'apiVersion': 'v1', 'kind': 'Config', 'current-context': 'w',
        'clusters': [{'name': 'w', 'cluster': {'server': 'https://10.0.0.1:443', 'certificate-authority-data': 'Zm9v'}}],
        'contexts': [{'name': 'w', 'context': {'cluster': 'w', 'user': 'sa'}}],
        'users': [{'name': 'sa', 'user': {'token': 'tok-secret-value'}}]}
EXEC = dict(GOOD, users=[{'name': 'sa', 'user': {'exec': {'command': 'kubelogin', 'apiVersion': 'v1'}}}])


def _inputs(managers=('m',), workers=(('w1', 'w1', None), ('w2', 'w2', None)), cluster_queues=('gpu',),
            resources=(CQ,), src=None):
    return {'managers': list(managers), 'cluster_queues': list(cluster_queues), 'resources': list(resources),
            'resources_src': src,
            'workers': [{'host': h, 'name': n, 'kubeconfig': k} for h, n, k in workers]}


def test_a_good_inventory_has_no_problem():
    assert multikueue_problems(_inputs()) == []


@pytest.mark.parametrize('inputs, expected', [
    (_inputs(managers=()), 'No host is in the inventory group kueue_multikueue_manager'),
    (_inputs(managers=('m', 'x')), 'kueue_multikueue_manager has 2 hosts (m, x)'),
    (_inputs(workers=()), 'No host is in the inventory group kueue_multikueue_workers'),
    (_inputs(workers=(('m', 'm', None),)), 'm is both the manager and a worker'),
    (_inputs(workers=(('w1', 'Bad_Name', None),)), "worker w1: 'Bad_Name' is not a valid MultiKueueCluster name"),
    (_inputs(workers=(('w1', 'same', None), ('w2', 'same', None))),
     'workers w1 and w2 both name the MultiKueueCluster same'),
    (_inputs(workers=(('w1', 'w1', EXEC),)), 'worker w1: kueue_multikueue_worker_kubeconfig users[0].user.exec'),
    (_inputs(workers=(('w1', 'w1', 'not: [valid'),)),
     'worker w1: kueue_multikueue_worker_kubeconfig the kubeconfig is not valid YAML'),
    (_inputs(cluster_queues=()), 'kueue_multikueue_cluster_queues is empty'),
    (_inputs(cluster_queues=('gpu', 'nope')), "kueue_multikueue_cluster_queues[1]: 'nope' is not a ClusterQueue"),
    (_inputs(src='/nonexistent/queues.yaml'), 'kueue_resources_src:'),
    (dict(_inputs(), token_ttl=60), 'kueue_multikueue_token_ttl: 60 seconds is shorter than 600 seconds'),
    (dict(_inputs(), workers=[{'host': 'w1', 'name': 'w1', 'kubeconfig': None, 'server': 'http://w1:80'}]),
     'worker w1: kueue_multikueue_worker_server: \'http://w1:80\' is not a valid https:// URL'),
])
def test_each_problem_names_the_host_or_variable(inputs, expected):
    problems = multikueue_problems(inputs)
    assert any(expected in p for p in problems), problems
    assert not any('tok-secret-value' in p or 'kubelogin' in p for p in problems)


def test_cluster_queues_may_come_from_src(tmp_path):
    src = tmp_path / 'queues.yaml'
    src.write_text('apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: from-src}\nspec: {}\n')
    assert multikueue_problems(_inputs(cluster_queues=('from-src',), resources=(), src=str(src))) == []


def test_workers_take_the_given_kubeconfig_else_the_registered_result():
    hostvars = {'w1': {'kueue_multikueue_worker_kubeconfig': GOOD, 'kueue_multikueue_cluster_name': 'east'},
                'w2': {'mk_token': {'kubeconfig': 'issued: yes\n'}},
                'w3': {'mk_token': {'skipped': True}}}
    rows = multikueue_workers(['w1', 'w2', 'w3'], hostvars, 'mk_token')
    assert [sorted(r) for r in rows] == [['kubeconfig', 'name']] * 3  # kueue_queues' multikueue.clusters entries
    assert [r['name'] for r in rows] == ['east', 'w2', 'w3']
    assert 'tok-secret-value' in rows[0]['kubeconfig'] and rows[1]['kubeconfig'] == 'issued: yes\n'
    assert rows[2]['kubeconfig'] is None
    assert [r['kubeconfig'] for r in multikueue_workers(['w2'], hostvars)] == [None]
    rows = multikueue_workers(['w1', 'w2'], dict(hostvars, w2={'kueue_multikueue_worker_server': 'https://w2:443'}))
    assert [(r['host'], r['name'], r['server']) for r in rows] == [('w1', 'east', None), ('w2', 'w2', 'https://w2:443')]
