# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Pausing and resuming GitOps reconcilers around an uninstall: the logic of kueueops.aks.kueue_gitops.

A Flux Kustomization or HelmRelease is paused with ``spec.suspend: true``, an Argo CD Application by removing
``spec.syncPolicy.automated``; what each object had before is recorded first in a 0600 JSON state file
(``gitops.json`` of the backup folder), which ``resume`` reads to put it back. Requests go through
``kueue_cluster.Cluster`` (a JSON merge patch of the one field). Importable without Ansible.
"""

import copy
import json
import os

from ansible_collections.kueueops.aks.plugins.module_utils.kube import cluster_identity
from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import KueueOpsError
from ansible_collections.kueueops.aks.plugins.module_utils.common.files import write_private_file
from ansible_collections.kueueops.aks.plugins.module_utils.kube.kueue_cluster import Cluster, path

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
    text = json.dumps(data, indent=2, sort_keys=True) + '\n'
    write_private_file(path, text.encode('utf-8'), 'state_file',
                       folder_fix='give a path in an existing folder (the Kueue backup folder)')


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


def _own_cluster(record, state_file, identity):
    """Refuse a state file that records another cluster than ``identity`` (GitOps objects are paused and resumed on
    their own cluster only, issue 40). A file that records none (written before identities were recorded) passes."""
    recorded = record.get('cluster') if isinstance(record.get('cluster'), dict) else {}
    if identity and recorded.get('uid') and not cluster_identity.same(recorded, identity):
        raise KueueOpsError('the GitOps state file %s records the objects of another cluster: %s; this is %s'
                            % (state_file, cluster_identity.label(recorded), cluster_identity.label(identity)),
                            field='state_file',
                            fix='resume them on the cluster they were paused on (its kubeconfig, context), or give '
                                'the gitops.json of a backup of this cluster; nothing was changed')


def pause(gitops, refs, state_file, identity=None):
    """Record each object's state in ``state_file`` (once: a second pause keeps the first record) with the
    cluster's ``identity`` (cluster_identity.read), then pause it. Returns (changed, one entry per object)."""
    record = read_state_file(state_file) or {'format': FORMAT, 'objects': []}
    _own_cluster(record, state_file, identity)
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
    if identity and not record.get('cluster'):
        record['cluster'] = identity
        file_changed = file_changed or bool(record['objects'])
    if file_changed and not gitops.check_mode:
        record['objects'].sort(key=ref_key)
        write_state_file(state_file, record)
    out = []
    for ref in refs:
        changed, now = gitops.set(ref, paused_state(ref))
        out.append(dict(dict((k, ref[k]) for k in ('apiVersion', 'kind', 'namespace', 'name')),
                        previous=recorded[ref_key(ref)]['previous'], current=now, changed=changed))
    return file_changed or any(o['changed'] for o in out), out


def resume(gitops, refs, state_file, identity=None):
    """Bring the objects ``state_file`` recorded (those of ``refs``, or all) back to their recorded state; refused
    before any patch when the file records another cluster than ``identity``."""
    record = read_state_file(state_file)
    if record is None:
        raise KueueOpsError('%s does not exist' % state_file, field='state_file',
                            fix='give the gitops.json that state=paused wrote (in the Kueue backup folder)')
    _own_cluster(record, state_file, identity)
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
