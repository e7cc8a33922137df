# Copyright: (c) 2026, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The storage migration of Kueue's objects (issue 15): every object of a Kueue CRD rewritten at the CRD's storage
version, then the CRD's ``status.storedVersions`` trimmed to that version.

When a Kueue release changes a CRD's storage version (0.16: v1beta1 -> v1beta2), the objects already in etcd stay
encoded at the old version until something writes them, and the CRD keeps the old version in
``status.storedVersions``; a later release that stops serving that version (0.20) or removes it (0.21) then breaks
on them. This is what Kueue's ``hack/migrate-to-v1beta2.sh`` and Kubernetes' storage version migrator do: read each
object and write it back unchanged (a PUT conditional on its resourceVersion), which makes the API server encode
it at the storage version; once every object of a CRD is rewritten, ``storedVersions`` is set to the storage
version alone through the CRD's status.

Paged (``page_size`` objects per LIST), one CRD at a time, each page's objects written by ``workers`` threads; a CRD is trimmed only after all its objects were
rewritten, so a migration cut short (API server stopped, timeout) leaves every CRD either done or still listing
the old version, and a re-run finishes it. An object changed by someone else between the LIST and its PUT (409) was
written after the storage version changed, so it is already migrated; one deleted meanwhile (404) needs nothing.
"""

from ansible_collections.kueueops.aks.plugins.module_utils.kube.kueue_cluster import is_unreachable, never_sent
from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import KueueOpsError, api_exception_message
from ansible_collections.kueueops.aks.plugins.module_utils.kube.kube_import import ApiException
from ansible_collections.kueueops.aks.plugins.module_utils.kueue.kueue_api import GROUP
from ansible_collections.kueueops.aks.plugins.module_utils.kueue.kueue_crds import (
    CRD_API, crd_state, kueue_crds, needs_migration, storage_version)
from ansible_collections.kueueops.aks.plugins.module_utils.kube.kueue_cluster import Cluster, parallel_map, path, size_pool
from ansible_collections.kueueops.aks.plugins.module_utils.kube.wait import Deadline

FIELD_MANAGER = 'kueueops-storage-migration'


class MigrationInterrupted(KueueOpsError):
    """A migration cut short: what was done and what remains, for the result and the message."""

    def __init__(self, problem, report, fix, field=None):
        KueueOpsError.__init__(self, problem, field=field, fix=fix)
        self.report = report

    def failure_result(self):
        return dict(self.report, changed=bool(self.report['rewritten']))


class StorageMigration:
    """One run over the Kueue CRDs (``crds``: names to limit it to, else all that need it)."""

    def __init__(self, cluster, crds=None, page_size=500, timeout=600, check_mode=False, workers=8):
        self.cluster = cluster if isinstance(cluster, Cluster) else Cluster(cluster)
        self.only = set(crds or ())
        self.page_size = page_size
        self.workers = max(1, int(workers))
        if getattr(self.cluster, 'api_client', None) is not None:
            size_pool(self.cluster.api_client, self.workers)
        self.deadline = Deadline(timeout)
        self.timeout = timeout
        self.check_mode = check_mode
        self.report = {'crds': [], 'rewritten': 0, 'trimmed': [], 'remaining': 0}

    def run(self):
        crds = kueue_crds(self.cluster)
        unknown = sorted(self.only - set(c['metadata']['name'] for c in crds))
        if unknown:
            raise KueueOpsError('no Kueue CRD named %s in the cluster' % ', '.join(unknown), field='crds',
                                fix='name CRDs of the kueue.x-k8s.io group (kubectl get crd | grep kueue), or '
                                    'leave crds empty for all of them')
        crds = [c for c in crds if not self.only or c['metadata']['name'] in self.only]
        todo = [c for c in crds if needs_migration(c)]
        for crd in crds:
            self.report['crds'].append(dict(crd_state(crd), objects=0, rewritten=0, trimmed=False))
        try:
            # Every object to rewrite is counted first (one LIST of one item per CRD: the API server's
            # remainingItemCount), so a run cut short says how many remain in all, not only in the CRD it was at.
            for crd in todo:
                self.entry(crd)['objects'] = self.count(crd)
        except Exception as exc:  # pylint: disable=broad-except
            if not isinstance(exc, (ApiException, KueueOpsError)) and not is_unreachable(exc):
                raise
            self.interrupted(todo[0], todo[1:], exc)
        for index, crd in enumerate(todo):
            try:
                self.migrate(crd)
            except Exception as exc:  # pylint: disable=broad-except
                if not isinstance(exc, (ApiException, KueueOpsError)) and not is_unreachable(exc):
                    raise
                self.interrupted(crd, todo[index + 1:], exc)
        self.report['changed'] = bool(self.report['trimmed'])
        return self.report

    def entry(self, crd):
        return next(c for c in self.report['crds'] if c['name'] == crd['metadata']['name'])

    def count(self, crd):
        """The number of objects of ``crd``: one page of one item and the list's remainingItemCount."""
        for items, meta in self.cluster.pages(self._collection(crd, storage_version(crd)), limit=1):
            return len(items) + int(meta.get('remainingItemCount') or 0)
        return 0

    def _collection(self, crd, version):
        return path('%s/%s' % (GROUP, version), crd['spec']['names']['plural'])

    def migrate(self, crd):
        name = crd['metadata']['name']
        version = storage_version(crd)
        entry = self.entry(crd)
        if self.check_mode:
            return
        namespaced = crd['spec'].get('scope') == 'Namespaced'
        plural = crd['spec']['names']['plural']
        listed = 0
        for items, _meta in self.cluster.pages(self._collection(crd, version), limit=self.page_size):
            listed += len(items)
            entry['objects'] = max(entry['objects'], listed)  # objects created since the count
            if self.deadline.expired():
                raise KueueOpsError('the timeout of %ss passed' % self.timeout, field='timeout')

            def rewrite(obj):
                meta = obj['metadata']
                target = path('%s/%s' % (GROUP, version), plural, meta.get('namespace') if namespaced else None,
                              meta['name'])
                try:
                    self.cluster.replace(target, obj, fieldManager=FIELD_MANAGER)
                except ApiException as exc:
                    if exc.status not in (404, 409):
                        raise
            # The page's objects on the worker pool (they are independent); every one done is counted before the
            # first failure is raised, so a run cut short counts exactly what it rewrote.
            failures = []
            for _obj, _result, exc in parallel_map(rewrite, items, self.workers):
                if exc is None:
                    entry['rewritten'] += 1
                    self.report['rewritten'] += 1
                else:
                    failures.append(exc)
            if failures:
                raise failures[0]
        # The storage version must not have changed under us (a Helm upgrade running beside this one).
        live = self.cluster.get(path(CRD_API, 'customresourcedefinitions', None, name))
        if live is None or storage_version(live) != version:
            raise KueueOpsError('CRD %s changed its storage version while its objects were rewritten' % name,
                                field='crds', fix='let the Kueue upgrade that changed it finish, then run again')
        self.cluster.patch(path(CRD_API, 'customresourcedefinitions', None, name, 'status'),
                           {'status': {'storedVersions': [version]}})
        entry.update(stored_versions=[version], needs_migration=False, trimmed=True)
        self.report['trimmed'].append(name)

    def interrupted(self, crd, rest, exc):
        name = crd['metadata']['name']
        entry = self.entry(crd)
        left = [crd] + list(rest)
        self.report['remaining'] = sum(max(self.entry(c)['objects'] - self.entry(c)['rewritten'], 0) for c in left)
        self.report['crds_remaining'] = [c['metadata']['name'] for c in left]
        if isinstance(exc, KueueOpsError):
            reason = exc.message()
        elif isinstance(exc, ApiException):
            reason = api_exception_message(exc)
        else:
            reason = 'the API server stopped answering%s' % (': connection refused' if never_sent(exc) else '')
        raise MigrationInterrupted(
            'the storage migration stopped at CRD %s after rewriting %d of its %d objects (%s); %d object(s) of %d '
            'CRD(s) remain to be rewritten, and those CRDs still list an old version in status.storedVersions: %s. '
            'Done: %s'
            % (name, entry['rewritten'], entry['objects'], reason, self.report['remaining'],
               len(self.report['crds_remaining']), ', '.join(self.report['crds_remaining']),
               ', '.join(self.report['trimmed']) or 'no CRD yet'),
            self.report,
            'nothing is half-migrated: every object keeps its data and the CRDs not yet trimmed still list the old '
            'version; run the same task (or playbooks/upgrade.yml) again once the API server answers, and it '
            'rewrites the objects of the CRDs that remain', field=getattr(exc, 'field', None))
