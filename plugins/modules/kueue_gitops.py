#!/usr/bin/python
# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kueue_gitops
short_description: Pause and resume GitOps reconciliation (Flux, Argo CD) around a Kueue uninstall
version_added: 0.1.0
description:
  - Uninstalling Kueue deletes its CRDs and every Kueue object; a GitOps controller that reconciles Kueue (or its
    queue configuration) would fight the uninstall or re-create objects half-way. This module pauses the objects
    that reconcile it before the uninstall and puts them back as they were afterwards.
  - B(Flux) C(Kustomization) (C(kustomize.toolkit.fluxcd.io)) and C(HelmRelease) (C(helm.toolkit.fluxcd.io)) are
    paused with C(spec.suspend=true).
  - B(Argo CD) C(Application) (C(argoproj.io)) is paused by removing C(spec.syncPolicy.automated) (automated sync).
  - B(The previous state) of every object (C(spec.suspend), or C(spec.syncPolicy.automated)) is written to
    O(state_file) (JSON, 0600) before any object is changed. Pausing again keeps the state first recorded for an
    object, so a repeated run never records "paused" as the state to go back to. V(resumed) restores exactly that
    state (an absent C(spec.suspend) is removed again, an automated sync policy is put back as it was).
  - Idempotent; supports check mode (nothing is written or patched, the changes are reported).
author:
  - kueueops contributors (@kueueops)
options:
  state:
    description:
      - V(paused) suspends the O(objects) and records their previous state in O(state_file).
      - V(resumed) restores the state recorded in O(state_file) (all its objects, or only O(objects) when given).
    type: str
    choices: [paused, resumed]
    required: true
  objects:
    description:
      - The GitOps objects, each with C(apiVersion), C(kind), C(name) and C(namespace). Required with
        O(state=paused).
    type: list
    elements: dict
    default: []
  state_file:
    description:
      - The JSON file that records the previous state of the paused objects (the role C(uninstall_with_backup)
        keeps it as C(gitops.json) in the Kueue backup folder). Required.
    type: path
    required: true
attributes:
  check_mode:
    support: full
    details: Reports which objects it would pause or resume; patches nothing and writes no state file.
  diff_mode:
    support: none
  platform:
    platforms: all
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - kueueops.aks.kube_auth
requirements:
  - kubernetes >= 29.0.0
"""

EXAMPLES = r"""
- name: Pause Flux and Argo CD before uninstalling Kueue
  kueueops.aks.kueue_gitops:
    state: paused
    state_file: /var/backups/kueue/aks-prod-20250601T120000Z/gitops.json
    objects:
      - {apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, name: kueue-queues, namespace: flux-system}
      - {apiVersion: helm.toolkit.fluxcd.io/v2, kind: HelmRelease, name: kueue, namespace: flux-system}
      - {apiVersion: argoproj.io/v1alpha1, kind: Application, name: kueue-config, namespace: argocd}

- name: Resume them once Kueue and its configuration are back
  kueueops.aks.kueue_gitops:
    state: resumed
    state_file: /var/backups/kueue/aks-prod-20250601T120000Z/gitops.json
"""

RETURN = r"""
objects:
  description: Every object handled, with its previous state (as recorded), its state now, and whether it changed.
  returned: success
  type: list
  elements: dict
  sample: [{apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system,
            name: kueue-queues, previous: {suspend: null}, current: {suspend: true}, changed: true}]
state_file:
  description: The state file read or written.
  returned: success
  type: str
"""

import copy
import json
import os
import tempfile

from ansible_collections.kueueops.aks.plugins.module_utils.errors import KueueOpsError
from ansible_collections.kueueops.aks.plugins.module_utils.module import KueueOpsModule

from ansible_collections.kueueops.aks.plugins.module_utils.kueue_cluster import Cluster, path
FORMAT = 'kueueops.aks/kueue_gitops/v1'

# group -> {kind: (plural, how it is paused)}
SUPPORTED = {
    'kustomize.toolkit.fluxcd.io': {'Kustomization': ('kustomizations', 'suspend')},
    'helm.toolkit.fluxcd.io': {'HelmRelease': ('helmreleases', 'suspend')},
    'argoproj.io': {'Application': ('applications', 'automated')},
}


def describe(ref):
    return '%s %s/%s' % (ref['kind'], ref['namespace'], ref['name'])


def parse_ref(item, index):
    """A validated object reference: apiVersion, kind, name, namespace, plus group/version/plural/mode."""
    where = 'objects[%d]' % index
    if not isinstance(item, dict):
        raise KueueOpsError('must be a dictionary with apiVersion, kind, name and namespace, got %s %r'
                            % (type(item).__name__, item), field=where,
                            fix='give each GitOps object as a mapping, for example {apiVersion: '
                                'kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, name: apps, namespace: '
                                'flux-system}')
    missing = [k for k in ('apiVersion', 'kind', 'name', 'namespace') if not item.get(k)]
    if missing:
        raise KueueOpsError('%s missing' % ', '.join(missing), field=where,
                            fix='give apiVersion, kind, name and namespace of each GitOps object')
    unknown = sorted(set(item) - set(['apiVersion', 'kind', 'name', 'namespace']))
    if unknown:
        raise KueueOpsError('unknown keys %s' % ', '.join(unknown), field=where,
                            fix='give only apiVersion, kind, name and namespace')
    api_version = str(item['apiVersion'])
    if '/' not in api_version:
        raise KueueOpsError('apiVersion %r has no group' % api_version, field=where,
                            fix='write apiVersion as GROUP/VERSION, for example kustomize.toolkit.fluxcd.io/v1, '
                                'helm.toolkit.fluxcd.io/v2 or argoproj.io/v1alpha1')
    group, version = api_version.split('/', 1)
    kinds = SUPPORTED.get(group, {})
    if item['kind'] not in kinds:
        raise KueueOpsError('%s %s is not a GitOps object this module pauses' % (api_version, item['kind']),
                            field=where,
                            fix='use a Flux Kustomization (kustomize.toolkit.fluxcd.io) or HelmRelease '
                                '(helm.toolkit.fluxcd.io), or an Argo CD Application (argoproj.io)')
    plural, mode = kinds[item['kind']]
    return {'apiVersion': api_version, 'kind': str(item['kind']), 'name': str(item['name']),
            'namespace': str(item['namespace']), 'group': group, 'version': version, 'plural': plural,
            'mode': mode}


def ref_key(ref):
    return '%s/%s/%s/%s' % (ref['apiVersion'].split('/', 1)[0], ref['kind'], ref['namespace'], ref['name'])


def observed(ref, obj):
    """The part of an object that pausing changes: {suspend: ...} or {automated: ...} (None when absent)."""
    spec = (obj or {}).get('spec') or {}
    if ref['mode'] == 'suspend':
        return {'suspend': spec.get('suspend')}
    policy = spec.get('syncPolicy') or {}
    return {'automated': copy.deepcopy(policy.get('automated'))}


def paused_state(ref):
    return {'suspend': True} if ref['mode'] == 'suspend' else {'automated': None}


def merge_patch(ref, target):
    """A JSON merge patch that sets the state ``target`` (None removes the field)."""
    if ref['mode'] == 'suspend':
        return {'spec': {'suspend': target['suspend']}}
    return {'spec': {'syncPolicy': {'automated': target['automated']}}}


def read_state_file(path):
    try:
        with open(path, 'r') as handle:
            data = json.load(handle)
    except OSError as exc:
        if not os.path.exists(path):
            return None
        raise KueueOpsError('cannot read %s: %s' % (path, exc.strerror or exc), field='state_file',
                            fix='give a readable file: the gitops.json that state=paused wrote')
    except ValueError as exc:
        raise KueueOpsError('%s is not valid JSON (%s)' % (path, exc), field='state_file',
                            fix='give the gitops.json that state=paused wrote, unedited')
    if not isinstance(data, dict) or data.get('format') != FORMAT or not isinstance(data.get('objects'), list):
        raise KueueOpsError('%s is not a kueue_gitops state file' % path, field='state_file',
                            fix='give the gitops.json that state=paused wrote')
    return data


def write_state_file(path, data):
    """Atomically, 0600."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise KueueOpsError('folder %s does not exist' % folder, field='state_file',
                            fix='give a path in an existing folder (the Kueue backup folder)')
    fd, temp = tempfile.mkstemp(prefix='.gitops-', dir=folder)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, 'w') as handle:
            json.dump(data, handle, indent=2, sort_keys=True)
            handle.write('\n')
            handle.flush()
            os.fsync(handle.fileno())
        os.rename(temp, path)
    except BaseException:
        if os.path.exists(temp):
            os.unlink(temp)
        raise


class GitOps:
    def __init__(self, api_client, check_mode):
        self.cluster = Cluster(api_client)
        self.check_mode = check_mode

    @staticmethod
    def _path(ref):
        return path('%s/%s' % (ref['group'], ref['version']), ref['plural'], ref['namespace'], ref['name'])

    def get(self, ref):
        obj = self.cluster.get(self._path(ref))
        if obj is None:
            raise KueueOpsError('%s (%s) not found' % (describe(ref), ref['apiVersion']), field='objects',
                                fix='check the name, namespace and apiVersion (and that the CRD is installed)')
        return obj

    def set(self, ref, target):
        """Bring the object to ``target``; returns (changed, now)."""
        current = observed(ref, self.get(ref))
        if current == target:
            return False, current
        if not self.check_mode:
            self.cluster.patch(self._path(ref), merge_patch(ref, target))
        return True, target


def pause(module, gitops, refs, state_file):
    record = read_state_file(state_file) or {'format': FORMAT, 'objects': []}
    recorded = dict((ref_key(r), r) for r in record['objects'])
    file_changed = False
    for ref in refs:
        key = ref_key(ref)
        live = gitops.get(ref)
        if key not in recorded:
            entry = dict((k, ref[k]) for k in ('apiVersion', 'kind', 'namespace', 'name'))
            entry['previous'] = observed(ref, live)
            record['objects'].append(entry)
            recorded[key] = entry
            file_changed = True
    if file_changed and not module.check_mode:
        record['objects'].sort(key=ref_key)
        write_state_file(state_file, record)
    out = []
    for ref in refs:
        changed, now = gitops.set(ref, paused_state(ref))
        out.append(dict(dict((k, ref[k]) for k in ('apiVersion', 'kind', 'namespace', 'name')),
                        previous=recorded[ref_key(ref)]['previous'], current=now, changed=changed))
    return file_changed or any(o['changed'] for o in out), out


def resume(module, gitops, refs, state_file):
    record = read_state_file(state_file)
    if record is None:
        raise KueueOpsError('%s does not exist' % state_file, field='state_file',
                            fix='give the gitops.json that state=paused wrote (in the Kueue backup folder)')
    entries = []
    for index, entry in enumerate(record['objects']):
        ref = parse_ref(dict((k, entry.get(k)) for k in ('apiVersion', 'kind', 'name', 'namespace')), index)
        entries.append((ref, entry.get('previous') or {}))
    if refs:
        wanted = set(ref_key(r) for r in refs)
        unknown = wanted - set(ref_key(r) for r, _p in entries)
        if unknown:
            raise KueueOpsError('not recorded in %s: %s' % (state_file, ', '.join(sorted(unknown))),
                                field='objects', fix='resume only objects that state=paused recorded')
        entries = [(r, p) for r, p in entries if ref_key(r) in wanted]
    out = []
    for ref, previous in entries:
        target = {'suspend': previous.get('suspend')} if ref['mode'] == 'suspend' else \
            {'automated': previous.get('automated')}
        changed, now = gitops.set(ref, target)
        out.append(dict(dict((k, ref[k]) for k in ('apiVersion', 'kind', 'namespace', 'name')),
                        previous=previous, current=now, changed=changed))
    return any(o['changed'] for o in out), out


def main():
    module = KueueOpsModule(dict(
        state=dict(type='str', required=True, choices=['paused', 'resumed']),
        objects=dict(type='list', elements='dict', default=[]),
        state_file=dict(type='path', required=True),
    ), supports_check_mode=True)
    params = module.params
    refs = module.run(lambda: [parse_ref(item, idx) for idx, item in enumerate(params['objects'])])
    if params['state'] == 'paused' and not refs:
        module.refuse('no objects to pause', 'objects',
                      'list the Flux Kustomizations/HelmReleases and Argo CD Applications to pause')
    gitops = GitOps(module.api_client, module.check_mode)
    state_file = os.path.abspath(params['state_file'])
    change = pause if params['state'] == 'paused' else resume
    changed, out = module.run(lambda: change(module, gitops, refs, state_file), state_file=state_file)
    module.exit_json(changed=changed, objects=out, state_file=state_file)


if __name__ == '__main__':
    main()
