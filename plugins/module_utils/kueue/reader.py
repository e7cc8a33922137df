"""The readers of Kueue objects (issue 42), read only: ``KueueReader``, what a queue configuration run reads (the served
versions, the live objects of every kind, CRD schemas, the Secrets a run needs), used by kueue_queues' engine and by
kueue_drift_info; ``Exporter`` and ``snapshot``, what a backup holds (the objects normalised into re-appliable
manifests, read page by page), used by kueue_backup, kueue_info and kueue_capacity_info, with the Workloads counted
per queue and the manager's image. The two readers are still two (discovery differs: the backup leaves v1alpha1
kinds out); one reader is issue 42's next step.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import KueueOpsError
from ansible_collections.kueueops.aks.plugins.module_utils.kube import schema_check
from ansible_collections.kueueops.aks.plugins.module_utils.kueue import kueue_api as api
from ansible_collections.kueueops.aks.plugins.module_utils.kueue import managed_fields
from ansible_collections.kueueops.aks.plugins.module_utils.kueue import queues as q
from ansible_collections.kueueops.aks.plugins.module_utils.kueue.kueue_api import (
    EXPORT_METADATA, GROUP, KIND_ORDER, KUEUE_KINDS, PLURALS, condition_true, obj_key, strip_server_metadata)
from ansible_collections.kueueops.aks.plugins.module_utils.kube.kube_import import ApiException
from ansible_collections.kueueops.aks.plugins.module_utils.kube.kueue_cluster import (
    MANAGER_DEPLOYMENT, Cluster, manager_container, parallel_map, path, size_pool)

KUEUE_FINALIZER_PREFIX = GROUP + '/'


def normalise(obj, kind=None, api_version=None):
    """A live object as a clean, re-appliable manifest (a new dict; ``obj`` is untouched).

    Drops ``status``, the server bookkeeping of ``metadata`` (uid, resourceVersion,
    generation, creationTimestamp, managedFields, deletion fields, selfLink,
    ownerReferences), the ``kubectl.kubernetes.io/last-applied-configuration``
    annotation and Kueue-owned finalizers (``kueue.x-k8s.io/...``); empty
    labels/annotations/finalizers are removed. ``kind`` and ``api_version`` are
    filled in when the object lacks them (items of a LIST may).
    """
    out = copy.deepcopy(obj)
    out.pop('status', None)
    if kind and not out.get('kind'):
        out['kind'] = kind
    if api_version and not out.get('apiVersion'):
        out['apiVersion'] = api_version
    meta = out.get('metadata')
    if not isinstance(meta, dict):
        meta = out['metadata'] = {}
    strip_server_metadata(meta, EXPORT_METADATA)
    finalizers = meta.get('finalizers')
    if isinstance(finalizers, list):
        meta['finalizers'] = [f for f in finalizers if not str(f).startswith(KUEUE_FINALIZER_PREFIX)]
    for field in ('annotations', 'labels', 'finalizers'):
        if field in meta and not meta[field]:
            del meta[field]
    return out


def is_aks_managed(obj, aks_extension):
    """An ``aks-`` object on a cluster running the AKS managed extension (which owns and recreates them)."""
    return bool(aks_extension) and obj_key(obj)[2].startswith(q.AKS_PREFIX)


def sort_objects(objects):
    """Objects sorted by namespace, then name."""
    return sorted(objects, key=lambda o: obj_key(o)[1:])


def image_tag(image):
    """The tag of a container image reference (``registry/kueue:v0.19.2@sha256:...`` -> ``v0.19.2``)."""
    if not image:
        return None
    ref = image.split('@', 1)[0]
    last = ref.rsplit('/', 1)[-1]
    if ':' in last:
        return last.rsplit(':', 1)[1]
    return None


def workload_counts(workloads, local_queues, cluster_queues):
    """Pending and admitted Workloads per LocalQueue and ClusterQueue (finished ones are not counted).

    A Workload is admitted when its ``Admitted`` condition is true, else pending
    (including one that reserved quota and waits for admission checks). Its
    ClusterQueue is that of its admission, else that of its LocalQueue.
    """
    lq_target = {}
    lqs = {}
    for obj in local_queues:
        _kind, namespace, name = obj_key(obj)
        target = (obj.get('spec') or {}).get('clusterQueue')
        lq_target[(namespace, name)] = target
        lqs[(namespace, name)] = {'namespace': namespace, 'name': name, 'cluster_queue': target,
                                  'pending': 0, 'admitted': 0}
    cqs = dict((obj_key(o)[2], {'name': obj_key(o)[2], 'pending': 0, 'admitted': 0}) for o in cluster_queues)
    total = {'pending': 0, 'admitted': 0, 'finished': 0}
    for wl in workloads:
        if condition_true(wl, 'Finished'):
            total['finished'] += 1
            continue
        state = 'admitted' if condition_true(wl, 'Admitted') else 'pending'
        total[state] += 1
        namespace = (wl.get('metadata') or {}).get('namespace') or ''
        queue = (wl.get('spec') or {}).get('queueName')
        admission = (wl.get('status') or {}).get('admission') or {}
        if queue:
            entry = lqs.setdefault((namespace, queue), {'namespace': namespace, 'name': queue,
                                                        'cluster_queue': None, 'pending': 0, 'admitted': 0})
            entry[state] += 1
        target = admission.get('clusterQueue') or lq_target.get((namespace, queue))
        if target:
            cqs.setdefault(target, {'name': target, 'pending': 0, 'admitted': 0})[state] += 1
    return {
        'local_queues': [lqs[k] for k in sorted(lqs)],
        'cluster_queues': [cqs[k] for k in sorted(cqs)],
        'total': total,
    }


def served_kinds(cluster):
    """(kind -> the version the cluster serves it at, the Workload API's version or None): the one discovery of
    Kueue's kinds, every reader's (KueueReader, Exporter). v1beta2 preferred, then v1beta1; v1alpha1 only for the
    kinds older Kueue served there (Cohort, Topology on Kueue 0.13), which a backup must not leave out either."""
    served, workloads = {}, None
    for version in (api.ALPHA,) + tuple(reversed(api.VERSIONS)):  # v1alpha1, v1beta1, v1beta2 overrides
        names = cluster.served('%s/%s' % (api.GROUP, version))
        if names is None:
            continue
        for kind in (api.ALPHA_KINDS if version == api.ALPHA else api.KUEUE_KINDS):
            if api.PLURALS[kind] in names:
                served[kind] = version
        if version != api.ALPHA and 'workloads' in names:
            workloads = version
    return served, workloads


class Exporter:
    """Reads what a backup holds from the cluster."""

    def __init__(self, api_client, namespace):
        self.api = api_client
        self.ns = namespace
        self.cluster = Cluster(api_client)
        self.served = {}
        self.workloads_version = None

    def discover(self):
        """kind -> served version of the Kueue kinds (``served_kinds``), and the Workload API's version."""
        served, self.workloads_version = served_kinds(self.cluster)
        if not served:
            raise KueueOpsError('the cluster does not serve the %s API group (v1beta2 or v1beta1): there is no Kueue '
                                'configuration to back up' % GROUP, field='kubeconfig',
                                fix='point the module at the cluster running Kueue, and check that its CRDs are '
                                    'established (kueueops.aks.kueue_verify)')
        self.served = served
        return served

    def _list(self, version, plural):
        return self.cluster.items(path('%s/%s' % (GROUP, version), plural))

    def iter_raw(self, kind):
        """The live objects of ``kind`` as the API server returns them, read page by page (``snapshot`` keeps only
        their normalised form, so a whole LIST of 10,000 LocalQueues is never in memory at once)."""
        for items, _meta in self.cluster.pages(path('%s/%s' % (GROUP, self.served[kind]), PLURALS[kind])):
            yield from items

    def list_workloads(self):
        if not self.workloads_version:
            return []
        return self._list(self.workloads_version, 'workloads')

    def read_secret(self, namespace, name):
        """The Secret as the API server returns it (raw JSON), or None when it does not exist."""
        return self.cluster.get(path('v1', 'secrets', namespace, name))

    def detect_aks_extension(self):
        return self.cluster.extension_running(self.ns)

    def manager_image(self):
        try:
            dep = self.cluster.deployment(self.ns, MANAGER_DEPLOYMENT)
        except ApiException as exc:
            if exc.status == 403:
                return None
            raise
        return (manager_container(dep) or {}).get('image')


def snapshot(exporter, include_secrets, include_aks_managed, aks_extension):
    """(objects by kind, excluded, queues by kind): what the backup of the cluster now holds. The queues are every
    LocalQueue and ClusterQueue, excluded ones too, normalised (what ``workload_counts`` reads: identity and spec),
    not the live objects: their status and managedFields are most of a queue's size."""
    objects = {}
    excluded = []
    queues = {}
    for kind in KUEUE_KINDS:
        if kind not in exporter.served:
            continue
        items = []
        for item in exporter.iter_raw(kind):
            obj = normalise(item, kind, '%s/%s' % (GROUP, exporter.served[kind]))
            if kind in ('LocalQueue', 'ClusterQueue'):
                queues.setdefault(kind, []).append(obj)
            if not include_aks_managed and is_aks_managed(obj, aks_extension):
                excluded.append(_ref(obj, 'owned by the AKS managed Kueue extension, which recreates it '
                                          '(include_aks_managed: true to back it up)'))
                continue
            items.append(obj)
        objects[kind] = sort_objects(items)
    refs = q.multikueue_secret_refs(objects.get('MultiKueueCluster', []), exporter.ns)
    if include_secrets:
        secrets = []
        for (namespace, name), users in sorted(refs.items()):
            secret = exporter.read_secret(namespace, name)
            if secret is None:
                excluded.append({'kind': 'Secret', 'namespace': namespace, 'name': name,
                                 'reason': 'referenced by MultiKueueCluster %s but does not exist' % ', '.join(users)})
                continue
            secrets.append(normalise(secret, 'Secret', 'v1'))
        objects['Secret'] = sort_objects(secrets)
    else:
        for (namespace, name), users in sorted(refs.items()):
            excluded.append({'kind': 'Secret', 'namespace': namespace, 'name': name,
                             'reason': 'referenced by MultiKueueCluster %s; not backed up (include_secrets: true to '
                                       'back it up)' % ', '.join(users)})
    excluded.sort(key=lambda e: (KIND_ORDER.index(e['kind']), e.get('namespace', ''), e['name']))
    return objects, excluded, queues


def _ref(obj, reason):
    kind, namespace, name = obj_key(obj)
    out = {'kind': kind, 'name': name, 'reason': reason}
    if namespace:
        out['namespace'] = namespace
    return out


class KueueReader:
    """The reads of a queue configuration's objects: which versions the cluster serves, the live objects of
    every Kueue kind, the CRD schemas, the few Secrets a run needs. kueue_queues' engine (apply.QueueEngine) and
    kueue_drift_info read through it."""

    def __init__(self, api_client, workers=8, log=None):
        self.api = api_client
        self.workers = max(1, int(workers))
        self.cluster = Cluster(api_client)
        self.served = {}
        self.log = log or (lambda msg: None)
        size_pool(self.api, self.workers)

    # ----------------------------------------------------------- helpers
    def _map(self, fn, items):
        """``fn`` over ``items`` on the worker pool; returns [(item, result, exception)]."""
        return parallel_map(fn, items, self.workers)

    def version_of(self, kind):
        return self.served[kind]

    # --------------------------------------------------------- discovery
    def discover(self):
        """kind -> served version (``served_kinds``), the core kinds a configuration holds too. Raises KueueOpsError
        if Kueue is not served."""
        served = served_kinds(self.cluster)[0]
        if not served:
            raise KueueOpsError('the cluster does not serve the %s API group (v1beta2 or v1beta1)' % api.GROUP,
                                field='resources', fix='install Kueue first (kueueops.aks.kueue_helm) and check '
                                                       'that its CRDs are established (kueueops.aks.kueue_verify)')
        served.update(api.CORE_KINDS)
        self.served = served
        return served

    def crd_schema(self, kind):
        """The OpenAPI schema of the version of ``kind`` the cluster serves, from its CRD (a LIST by name: the
        configure-queues ClusterRole lists CRDs), or None when it cannot be read (then the dry-run judges alone)."""
        name = '%s.%s' % (api.PLURALS[kind], api.GROUP)
        try:
            found = self.cluster.items(path('apiextensions.k8s.io/v1', 'customresourcedefinitions'),
                                       fieldSelector='metadata.name=' + name)
        except ApiException:
            return None
        return schema_check.served_schema(found[0] if found else None, self.served.get(kind))

    def schema_problems(self, objects, skip=()):
        """Problems of types and undeclared fields (schema_check) in the Kueue objects whose label is not in
        ``skip`` (objects already refused for something else)."""
        schemas, out = {}, []
        for obj in objects:
            kind = obj.get('kind')
            if kind not in api.KUEUE_KINDS or kind not in self.served or api.obj_label(obj) in skip:
                continue
            if kind not in schemas:
                schemas[kind] = self.crd_schema(kind)
            for field, text, fix in schema_check.problems(obj, schemas[kind], '%s %s' % (obj.get('apiVersion'), kind)):
                out.append(q.Problem(api.obj_label(obj), field, text, fix))
        return out

    def serves(self, group, version, plural):
        """Whether the cluster serves ``plural`` in ``group/version`` (API discovery; a 404 is no)."""
        return plural in (self.cluster.served('%s/%s' % (group, version)) or ())

    def detect_aks_extension(self, namespace):
        """The AKS managed extension runs a ``kueue-extension`` Deployment next to Kueue."""
        return self.cluster.extension_running(namespace)

    # ------------------------------------------------------------- reads
    def _items(self, kind):
        """Every live object of ``kind``, one at a time as the LIST's pages arrive, with its apiVersion and kind."""
        version = self.version_of(kind)
        for page, _meta in self.cluster.pages(path('%s/%s' % (api.GROUP, version), api.PLURALS[kind])):
            for item in page:
                item.setdefault('apiVersion', '%s/%s' % (api.GROUP, version))
                item.setdefault('kind', kind)
                yield item

    def _list(self, kind):
        """Every live object of ``kind``, read page by page, each without what no decision reads (the managedFields
        entries of subresources: managed_fields.drop_subresource_entries) before the next page is read."""
        return [managed_fields.drop_subresource_entries(item) for item in self._items(kind)]

    def list_live(self, kinds=None):
        """kind -> {key: live object} for every served Kueue kind (or ``kinds``). Secrets are
        never listed; ``get_secrets`` reads the few a run needs."""
        kinds = [k for k in (kinds or api.KUEUE_KINDS) if k in self.served and k not in api.CORE_KINDS]
        live = {}
        for kind, items, exc in self._map(self._list, kinds):
            if exc is not None:
                raise exc
            live[kind] = dict((api.obj_key(item), item) for item in items)
        return live

    def list_namespaces(self):
        return set(item['metadata']['name'] for item in self.cluster.items(path('v1', 'namespaces')))

    def get_secrets(self, namespace, names):
        """{key: Secret as stored} of the Secrets ``names`` in ``namespace`` that exist (read one by one:
        a run reads only the Secrets MultiKueueClusters use, never the others of the namespace)."""
        keys = [('Secret', namespace, n) for n in sorted(set(names))]
        out = {}
        for key, obj, exc in self._map(self.get, keys):
            if exc is not None:
                raise exc
            if obj is not None:
                out[key] = obj
        return out

    def _path(self, kind, namespace, name=None):
        """The REST path of a Kueue object (or a Secret) of ``kind`` at the version the cluster serves."""
        if kind == 'Secret':
            return path('v1', 'secrets', namespace, name)
        return path('%s/%s' % (api.GROUP, self.version_of(kind)), api.PLURALS[kind], namespace or None, name)

    def get(self, key):
        """The live object of ``key`` (Secrets too, as JSON), or None."""
        kind, namespace, name = key
        return self.cluster.get(self._path(kind, namespace, name))
