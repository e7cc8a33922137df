"""The pure logic of kueue_jobs_info: Jobs classified by namespace (the GitOps logic is tested in
tests/unit/plugins/module_utils/test_gitops.py)."""
from __future__ import annotations

from ansible_collections.kueueops.aks.plugins.modules import kueue_jobs_info as j


def test_jobs_are_classified_by_namespace():
    label = 'kueue.x-k8s.io/queue-name'

    def job(ns, name, suspend, cond=None):
        return {'metadata': {'namespace': ns, 'name': name, 'labels': {label: 'q'}}, 'spec': {'suspend': suspend},
                'status': {'conditions': [{'type': cond, 'status': 'True'}] if cond else []}}

    out = j.summarise([job('b', 'z', True), job('b', 'a', True), job('a', 'r', False),
                       job('a', 'done', False, 'Complete'), job('a', 'bad', True, 'Failed')], label)
    assert list(out) == ['a', 'b']
    assert out['b']['suspended'] == [{'name': 'a', 'queue': 'q'}, {'name': 'z', 'queue': 'q'}]
    assert out['a'] == {'suspended': [], 'running': [{'name': 'r', 'queue': 'q'}],
                        'finished': [{'name': 'bad', 'queue': 'q'}, {'name': 'done', 'queue': 'q'}]}
