# Copyright: (c) 2026, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Which cluster is this (issue 40): the identity a backup records and a restore compares.

The identity is the UID of the ``kube-system`` namespace: the API server gives every object a UID when it is
created, ``kube-system`` exists from a cluster's first start to its deletion, and no two clusters share one, so
it survives a rename of the cluster, of its kubeconfig context or of its AKS resource, and a rebuilt cluster of
the same name has another. The API server URL, the kubeconfig context and the AKS resource ID (and a cluster name)
are recorded beside it as names a human reads; they are never compared (two clusters may share a context name,
and a cluster may be reached by two URLs).

``check(recorded, live, ...)`` is the one comparison: a backup (or a GitOps state file) whose identity is another
cluster's, or that records none, is refused naming both clusters unless ``allow`` is set. Nothing here imports
Ansible; the reads go through ``kueue_cluster.Cluster``.
"""

import json
import os

from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import KueueOpsError
from ansible_collections.kueueops.aks.plugins.module_utils.kube.kueue_cluster import path

ANCHOR_NAMESPACE = 'kube-system'
BACKUP_MANIFEST = 'manifest.json'
BACKUP_FORMAT_PREFIX = 'kueueops.aks/kueue_backup/'
NAME_KEYS = ('name', 'resource_id', 'context', 'server')


def read(cluster, server=None, context=None, resource_id=None, name=None):
    """The identity of the cluster ``cluster`` (a kueue_cluster.Cluster) reaches: ``{'uid', 'server', 'context',
    'resource_id', 'name'}`` (the names as given, None when unknown). One GET of the ``kube-system`` namespace."""
    namespace = cluster.get(path('v1', 'namespaces', name=ANCHOR_NAMESPACE))
    uid = ((namespace or {}).get('metadata') or {}).get('uid')
    if not uid:
        raise KueueOpsError('the cluster has no %s namespace, so its identity cannot be read' % ANCHOR_NAMESPACE,
                            field='kubeconfig', fix='point the module at a Kubernetes cluster (every cluster has a '
                                                    '%s namespace)' % ANCHOR_NAMESPACE)
    return {'uid': uid, 'server': server, 'context': context, 'resource_id': resource_id, 'name': name}


def label(identity):
    """A cluster as a human reads it: its readable names, then its kube-system UID."""
    identity = identity or {}
    names = []
    for key, text in (('resource_id', 'AKS %s'), ('name', 'name %s'), ('context', 'context %s'),
                      ('server', 'API server %s')):
        value = identity.get(key)
        if value and not (key == 'name' and (identity.get('resource_id') or '').endswith('/' + value)):
            names.append(text % value)
    uid = identity.get('uid')
    names.append('kube-system UID %s' % uid if uid else 'no kube-system UID recorded')
    return ', '.join(names)


def same(recorded, live):
    """Whether ``recorded`` names the cluster ``live`` is (both identities; False when ``recorded`` has no UID)."""
    return bool((recorded or {}).get('uid')) and (recorded or {}).get('uid') == (live or {}).get('uid')


def check(recorded, live, what, field, allow_field, allow=False):
    """Refuse (KueueOpsError naming ``field``) ``what`` - a backup, a state file - recorded on another cluster than
    ``live``, or recording no identity, unless ``allow``. Returns whether it is the same cluster."""
    if same(recorded, live):
        return True
    if allow:
        return False
    if not (recorded or {}).get('uid'):
        problem = ('%s records no cluster identity (it was written before kueueops.aks recorded one, or edited), so '
                   'nothing shows it was taken from this cluster (%s)' % (what, label(live)))
        fix = ('check that it comes from this cluster, then set %s: true to use it here anyway; nothing was '
               'changed' % allow_field)
    else:
        problem = ('%s was taken from another cluster: %s; this is %s' % (what, label(recorded), label(live)))
        fix = ('point the run at the cluster it came from (kubeconfig, context), or, to restore it into this '
               'cluster on purpose (a clone, a rebuilt cluster), set %s: true; nothing was changed' % allow_field)
    raise KueueOpsError(problem, field=field, fix=fix)


def of_backup(folder):
    """The identity a kueue_backup folder records (its manifest's ``cluster``), ``{}`` when it records none, or None
    when ``folder`` is not a backup folder (no manifest of the kueue_backup format): a plain folder of manifests."""
    if not folder or not os.path.isdir(folder):
        return None
    try:
        with open(os.path.join(folder, BACKUP_MANIFEST), 'rb') as handle:
            manifest = json.loads(handle.read().decode('utf-8'))
    except (OSError, ValueError):
        return None
    if not isinstance(manifest, dict) or not str(manifest.get('format', '')).startswith(BACKUP_FORMAT_PREFIX):
        return None
    cluster = manifest.get('cluster')
    return dict(cluster) if isinstance(cluster, dict) else {}
