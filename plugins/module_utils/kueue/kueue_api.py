# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The one model of Kueue's API the collection works with (issue 14, item 1): its group and versions, the kinds
of a queue configuration (plural, scope, dependency order, backup file number, and, issue 42 item 3, what each
references, how its fields differ between versions and the condition that says it is Active), the server fields a
manifest must not carry back, and the identity of an object. Every other file reads these names from here.

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


class Ref(namedtuple('Ref', 'path kind names missing', defaults=('string', None))):
    """A field of a kind that names an object of another kind (queues.validate looks each name up).

    ``path``: dotted from the object, ``[]`` for every item of a list (``spec.clusters[]``); ``kind``: what it names;
    ``names``: which values are names to look up: ``'string'`` every string, ``'given'`` every value that is set (one
    not a string is reported), ``'typed'`` a ``{apiGroup, kind, name}`` reference (Kueue's group or none) naming
    ``kind`` (its ``.name`` is the field); ``missing``: set for a reference that must be given, what to write.
    """

    __slots__ = ()


class Rename(namedtuple('Rename', 'version old new')):
    """A spec field that ``version`` calls ``old`` and the next version (v1beta2 after v1beta1, v1beta1 after
    v1alpha1) ``new``; a dotted ``new`` is a field of a mapping (``clusterSource.kubeConfig``), where the old fields
    move together. queues.convert moves it and refuses the old name in an object declared at the other version."""

    __slots__ = ()


class Only(namedtuple('Only', 'version field instead harmless note', defaults=(None, None, None))):
    """A spec field only ``version`` (v1beta1 or v1beta2) has: in an object declared at the other version it is
    refused, naming ``instead`` (what that version writes) when it has one. A conversion away from ``version``
    drops it silently when its value is one of ``harmless`` (a default), else refuses it (``harmless`` None: it is
    kept and refused, whatever its value); ``note`` says why it has no equivalent when that is not that the cluster
    serves only the older version."""

    __slots__ = ()


class Kind(namedtuple('Kind', 'name plural namespaced number core_version refs renames only active top_level',
                      defaults=((), (), (), None, ()))):
    """One kind of a queue configuration.

    ``number``: its place in dependency order, and the ``NN-`` of its file in a backup folder;
    ``core_version``: the core API version (``v1``) of a kind that is not Kueue's (``None`` for Kueue's);
    ``refs``: the objects it names (``Ref``), looked up in the input and the cluster; ``renames`` and ``only``: how
    its spec differs between API versions (``Rename``, ``Only``; queues.py's docstring has the table);
    ``active``: the condition Kueue sets when it is ready to admit (``None``: Kueue reports none);
    ``top_level``: its fields beside ``spec`` (a manifest's other top-level fields are refused).
    """

    __slots__ = ()


_FLAVORS = Ref('spec.resourceGroups[].flavors[].name', 'ResourceFlavor')

# Dependency order: what an object refers to comes (and is applied) before it. A MultiKueueCluster names a Secret,
# a MultiKueueConfig names MultiKueueClusters, an AdmissionCheck names a MultiKueueConfig or a
# ProvisioningRequestConfig, a ResourceFlavor a Topology, a ClusterQueue its flavors, checks and cohort, a
# LocalQueue its ClusterQueue. Removal goes the other way. (The Secret a MultiKueueCluster names, in the namespace
# Kueue runs in, and the AdmissionCheck's MultiKueueConfig, which its controller decides, are queues.validate's.)
KINDS = (
    Kind('Secret', 'secrets', True, 1, 'v1'),
    Kind('MultiKueueCluster', 'multikueueclusters', False, 2, None,
         renames=(Rename('v1beta1', 'kubeConfig', 'clusterSource.kubeConfig'),
                  Rename('v1beta1', 'clusterProfileRef', 'clusterSource.clusterProfileRef'))),
    Kind('MultiKueueConfig', 'multikueueconfigs', False, 3, None,
         refs=(Ref('spec.clusters[]', 'MultiKueueCluster'),),
         only=(Only('v1beta2', 'quotaManagement', harmless=(None, 'Manual')),)),  # Manual is the default
    Kind('Topology', 'topologies', False, 5, None),
    Kind('ResourceFlavor', 'resourceflavors', False, 10, None, refs=(Ref('spec.topologyName', 'Topology', 'given'),)),
    Kind('Cohort', 'cohorts', False, 20, None, refs=(_FLAVORS,), renames=(Rename(ALPHA, 'parent', 'parentName'),)),
    Kind('ProvisioningRequestConfig', 'provisioningrequestconfigs', False, 30, None),
    Kind('AdmissionCheck', 'admissionchecks', False, 40, None,
         refs=(Ref('spec.parameters', 'ProvisioningRequestConfig', 'typed'),),
         # v1beta1 defaults it to 15, so every v1beta1 object read back carries it.
         only=(Only('v1beta1', 'retryDelayMinutes', harmless=(None, 15),
                    note="deprecated since Kueue 0.8, dropped by Kueue's own conversion"),)),
    Kind('WorkloadPriorityClass', 'workloadpriorityclasses', False, 50, None, top_level=('value', 'description')),
    Kind('ClusterQueue', 'clusterqueues', False, 60, None,
         refs=(_FLAVORS, Ref('spec.admissionChecksStrategy.admissionChecks[].name', 'AdmissionCheck', 'given'),
               Ref('spec.admissionChecks[]', 'AdmissionCheck')),
         renames=(Rename('v1beta1', 'cohort', 'cohortName'),),
         # admissionChecks: queues.py's converter writes it as admissionChecksStrategy before anything is dropped.
         only=(Only('v1beta1', 'admissionChecks', 'admissionChecksStrategy', harmless=()),
               Only('v1beta2', 'concurrentAdmissionPolicy')),
         active='Active'),
    Kind('LocalQueue', 'localqueues', True, 70, None,
         refs=(Ref('spec.clusterQueue', 'ClusterQueue', 'given', missing='name the ClusterQueue to submit to'),),
         active='Active'),
)
BY_NAME = dict((k.name, k) for k in KINDS)
# The kinds Kueue reports readiness for, and the condition it sets: {kind: condition type}.
ACTIVE = dict((k.name, k.active) for k in KINDS if k.active)
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
