# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The one model of Kueue's API the collection works with (issue 14, item 1): its group and versions, the kinds
of a queue configuration (plural, scope, dependency order, backup file number), the server fields a manifest must
not carry back, and the identity of an object. Every other file reads these names from here.

Pure data and functions: no cluster, no Ansible.
"""

from collections import namedtuple

GROUP = 'kueue.x-k8s.io'
# The versions a configuration is written at, newest first: v1beta2 where the cluster serves it (Kueue 0.15 and
# later), else v1beta1.
VERSIONS = ('v1beta2', 'v1beta1')
# Kinds accepted (and discovered) at v1alpha1, the version of older Kueue: Cohort up to Kueue 0.12, Topology up to
# 0.13 (queues.py's docstring has the fields).
ALPHA = 'v1alpha1'
ALPHA_KINDS = ('Cohort', 'Topology')


class Kind(namedtuple('Kind', 'name plural namespaced number core_version')):
    """One kind of a queue configuration.

    ``number``: its place in dependency order, and the ``NN-`` of its file in a backup folder;
    ``core_version``: the core API version (``v1``) of a kind that is not Kueue's (``None`` for Kueue's).
    """

    __slots__ = ()


# Dependency order: what an object refers to comes (and is applied) before it. A MultiKueueCluster names a Secret,
# a MultiKueueConfig names MultiKueueClusters, an AdmissionCheck names a MultiKueueConfig or a
# ProvisioningRequestConfig, a ResourceFlavor a Topology, a ClusterQueue its flavors, checks and cohort, a
# LocalQueue its ClusterQueue. Removal goes the other way.
KINDS = (
    Kind('Secret', 'secrets', True, 1, 'v1'),
    Kind('MultiKueueCluster', 'multikueueclusters', False, 2, None),
    Kind('MultiKueueConfig', 'multikueueconfigs', False, 3, None),
    Kind('Topology', 'topologies', False, 5, None),
    Kind('ResourceFlavor', 'resourceflavors', False, 10, None),
    Kind('Cohort', 'cohorts', False, 20, None),
    Kind('ProvisioningRequestConfig', 'provisioningrequestconfigs', False, 30, None),
    Kind('AdmissionCheck', 'admissionchecks', False, 40, None),
    Kind('WorkloadPriorityClass', 'workloadpriorityclasses', False, 50, None),
    Kind('ClusterQueue', 'clusterqueues', False, 60, None),
    Kind('LocalQueue', 'localqueues', True, 70, None),
)
BY_NAME = dict((k.name, k) for k in KINDS)
KIND_ORDER = tuple(k.name for k in KINDS)
PLURALS = dict((k.name, k.plural) for k in KINDS)
NAMESPACED = frozenset(k.name for k in KINDS if k.namespaced)
# Kinds of the core API (not kueue.x-k8s.io) and their version.
CORE_KINDS = dict((k.name, k.core_version) for k in KINDS if k.core_version)
# The Kueue kinds of a configuration (served by the kueue.x-k8s.io group).
KUEUE_KINDS = tuple(k.name for k in KINDS if not k.core_version)
# What Kueue's controllers create from submitted jobs: part of its API (a CRD, verified, counted), never part of a
# configuration (not applied, not backed up).
WORKLOADS = 'workloads'
# The resources of Kueue's CRDs this collection reads: the configuration kinds and Workloads.
CRD_PLURALS = tuple(sorted([PLURALS[k] for k in KUEUE_KINDS] + [WORKLOADS]))

# Metadata the API server writes. Sent back with server-side apply, resourceVersion and uid would act as
# preconditions; none of it belongs in a manifest.
SERVER_METADATA = ('resourceVersion', 'uid', 'creationTimestamp', 'managedFields', 'generation', 'selfLink',
                   'deletionTimestamp', 'deletionGracePeriodSeconds')
# What an export (a backup) drops besides: ownerReferences name uids that do not survive a reinstall. A manifest
# given to kueue_queues keeps them (the user wrote them).
EXPORT_METADATA = SERVER_METADATA + ('ownerReferences',)
LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration'


def strip_server_metadata(metadata, fields=SERVER_METADATA):
    """Drop in place what the API server writes into ``metadata`` (``fields``) and kubectl's last-applied
    annotation; an ``annotations`` left empty is removed."""
    for field in fields:
        metadata.pop(field, None)
    annotations = metadata.get('annotations')
    if isinstance(annotations, dict):
        annotations.pop(LAST_APPLIED, None)
        if not annotations:
            del metadata['annotations']


def kind_rank(kind):
    """The place of ``kind`` in dependency order (ValueError for a kind not in KINDS)."""
    return KIND_ORDER.index(kind)


def obj_key(obj):
    """(kind, namespace, name) of a manifest or a live object; a missing namespace or name is ``''``."""
    meta = obj.get('metadata') or {}
    return (obj.get('kind'), meta.get('namespace') or '', meta.get('name') or '')


def key_label(key):
    """``Kind namespace/name``, or ``Kind name`` for a cluster-scoped object."""
    kind, namespace, name = key
    if namespace:
        return '%s %s/%s' % (kind, namespace, name)
    return '%s %s' % (kind, name)


def obj_label(obj):
    return key_label(obj_key(obj))


def condition(obj, ctype):
    """The condition of type ``ctype`` in an object's ``status.conditions`` (a dict), or None."""
    for cond in ((obj or {}).get('status') or {}).get('conditions') or []:
        if cond.get('type') == ctype:
            return cond
    return None


def condition_true(obj, ctype):
    """Whether the object's condition ``ctype`` has status True."""
    return (condition(obj, ctype) or {}).get('status') == 'True'
