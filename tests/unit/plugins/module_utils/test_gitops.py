"""Unit tests for plugins/module_utils/backup/gitops.py: pause/resume against a fake API (pure logic; the real
Flux/Argo CD objects on the local control plane are in tests/integration/test_uninstall_restore.py)."""
from __future__ import annotations

import copy
import json
import os
import stat

import pytest

from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import KueueOpsError
from ansible_collections.kueueops.aks.plugins.module_utils.backup import gitops as g

KS = {'apiVersion': 'kustomize.toolkit.fluxcd.io/v1', 'kind': 'Kustomization', 'name': 'ks', 'namespace': 'flux'}
HR = {'apiVersion': 'helm.toolkit.fluxcd.io/v2', 'kind': 'HelmRelease', 'name': 'hr', 'namespace': 'flux'}
APP = {'apiVersion': 'argoproj.io/v1alpha1', 'kind': 'Application', 'name': 'app', 'namespace': 'argocd'}


def merge(target, patch):
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge(out.get(key), value)
    return out


class FakeGitOps(g.GitOps):
    def __init__(self, objects, check_mode=False):  # pylint: disable=super-init-not-called
        self.objects = objects
        self.check_mode = check_mode
        self.patches = []

    def get(self, ref):
        key = (ref['kind'], ref['namespace'], ref['name'])
        if key not in self.objects:
            raise KueueOpsError('%s not found' % g.describe(ref), field='objects')
        return self.objects[key]

    def set(self, ref, target):
        current = g.observed(ref, self.get(ref))
        if current == target:
            return False, current
        if not self.check_mode:
            key = (ref['kind'], ref['namespace'], ref['name'])
            patch = g.merge_patch(ref, target)
            self.patches.append(patch)
            self.objects[key] = merge(self.objects[key], patch)
        return True, target


def cluster():
    return {
        ('Kustomization', 'flux', 'ks'): {'spec': {'interval': '5m'}},
        ('HelmRelease', 'flux', 'hr'): {'spec': {'suspend': False}},
        ('Application', 'argocd', 'app'): {'spec': {'syncPolicy': {'automated': {'prune': True},
                                                                   'syncOptions': ['A=b']}}},
    }


def refs(*items):
    return [g.parse_ref(item, idx) for idx, item in enumerate(items)]


def test_pause_records_previous_state_then_resume_restores_it(tmp_path):
    state = str(tmp_path / 'gitops.json')
    original = cluster()
    api = FakeGitOps(cluster())
    changed, out = g.pause(api, refs(KS, HR, APP), state)
    assert changed and all(o['changed'] for o in out)
    assert api.objects[('Kustomization', 'flux', 'ks')]['spec'] == {'interval': '5m', 'suspend': True}
    assert api.objects[('HelmRelease', 'flux', 'hr')]['spec'] == {'suspend': True}
    assert api.objects[('Application', 'argocd', 'app')]['spec'] == {'syncPolicy': {'syncOptions': ['A=b']}}
    assert stat.S_IMODE(os.stat(state).st_mode) == 0o600
    record = json.load(open(state))
    assert [o['previous'] for o in record['objects']] == [{'automated': {'prune': True}}, {'suspend': False},
                                                          {'suspend': None}]
    # Pausing again changes nothing and keeps the first recorded state.
    changed, _out = g.pause(api, refs(KS, HR, APP), state)
    assert not changed and json.load(open(state)) == record
    changed, out = g.resume(api, [], state)
    assert changed and api.objects == original
    changed, _out = g.resume(api, [], state)
    assert not changed


def test_check_mode_writes_and_patches_nothing(tmp_path):
    state = str(tmp_path / 'gitops.json')
    api = FakeGitOps(cluster(), check_mode=True)
    changed, out = g.pause(api, refs(KS, APP), state)
    assert changed and [o['changed'] for o in out] == [True, True]
    assert not os.path.exists(state) and api.patches == [] and api.objects == cluster()


def test_missing_object_fails_before_anything_is_written(tmp_path):
    state = str(tmp_path / 'gitops.json')
    api = FakeGitOps(cluster())
    other = dict(KS, name='nope')
    with pytest.raises(KueueOpsError, match='Kustomization flux/nope not found'):
        g.pause(api, refs(KS, other), state)
    assert not os.path.exists(state) and api.patches == []


@pytest.mark.parametrize('item, match', [
    ({'apiVersion': 'apps/v1', 'kind': 'Deployment', 'name': 'a', 'namespace': 'b'}, 'not a GitOps object'),
    ({'apiVersion': 'argoproj.io/v1alpha1', 'kind': 'Application', 'name': 'a'}, 'namespace missing'),
    (dict(APP, extra=1), 'unknown keys extra'),
])
def test_bad_references(item, match):
    with pytest.raises(KueueOpsError, match=match):
        g.parse_ref(item, 0)


@pytest.mark.parametrize('item, fix', [
    ('flux-system/apps', 'Fix: give each GitOps object as a mapping'),
    (dict(KS, apiVersion='v1'), 'Fix: write apiVersion as GROUP/VERSION'),
])
def test_bad_references_name_the_object_and_the_fix(item, fix):
    with pytest.raises(KueueOpsError) as err:
        g.parse_ref(item, 2)
    assert err.value.message().startswith('objects[2]: ') and fix in err.value.message()


def test_state_file_that_is_not_json_names_the_fix(tmp_path):
    path = tmp_path / 'gitops.json'
    path.write_text('{not json')
    with pytest.raises(KueueOpsError) as err:
        g.read_state_file(str(path))
    assert err.value.message().startswith('state_file: ') and 'Fix: give the gitops.json' in err.value.message()


def test_resume_without_state_file(tmp_path):
    with pytest.raises(KueueOpsError, match='does not exist'):
        g.resume(FakeGitOps(cluster()), [], str(tmp_path / 'gitops.json'))


def test_state_file_records_its_cluster_and_another_cluster_resumes_nothing(tmp_path):
    """Issue 40: the GitOps objects of a backup are resumed on their own cluster only."""
    state = str(tmp_path / 'gitops.json')
    own = {'uid': 'uid-a', 'context': 'ctx-a', 'server': 'https://a'}
    other = {'uid': 'uid-b', 'context': 'ctx-b', 'server': 'https://b'}
    api = FakeGitOps(cluster())
    g.pause(api, refs(KS), state, own)
    assert json.load(open(state))['cluster'] == own
    before = copy.deepcopy(api.objects)
    api.patches = []
    for change in (g.resume, g.pause):
        with pytest.raises(KueueOpsError) as err:
            change(api, refs(KS) if change is g.pause else [], state, other)
        text = err.value.message()
        assert err.value.field == 'state_file' and 'uid-a' in text and 'uid-b' in text and 'ctx-b' in text, text
    assert api.patches == [] and api.objects == before
    changed, _out = g.resume(api, [], state, own)
    assert changed and api.objects == cluster()
