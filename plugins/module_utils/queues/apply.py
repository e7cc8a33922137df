# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The apply engine of kueue_queues, on a ``kubernetes.client.ApiClient``.

One run:

1. discovery: which version of each Kueue kind the cluster serves (v1beta2 first);
2. one LIST per kind (all namespaces for LocalQueues) and of Namespaces: the
   live state every cross-reference, prune and diff decision uses;
3. normalisation and cross-reference validation (``queues.validate``);
4. a server-side apply dry-run (``dryRun=All``, ``fieldValidation=Strict``) of
   EVERY object, so the CRD schema, CEL rules and Kueue's webhooks judge all of
   them; every failure is collected and nothing is written if there is one;
5. the plan, a value (``kueue/plan.py``, pure): each object created, updated,
   unchanged or pruned, and why, from the dry-run result against the live object
   (``queues.apply_changes``); unchanged objects are not written at all, so an
   idempotent run makes no write request; check mode and --diff render the plan;
6. ``Executor`` writes the plan in dependency order, concurrently within a kind
   (one shared ApiClient: its urllib3 PoolManager is thread-safe and the pool is
   sized to the workers), recording each confirmed write in one ``Progress``;
7. prune, in reverse order; 8. wait for ``Active=True`` with watches.

Everything raises ``KueueOpsError`` / ``QueueProblems``; nothing is meant to
escape as a traceback.
"""

import copy
import json
import re

from ansible_collections.kueueops.aks.plugins.module_utils.kube import cluster_identity
from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import KueueOpsError, api_exception_message
from ansible_collections.kueueops.aks.plugins.module_utils.kube.kube_client import describe_kube_error
from ansible_collections.kueueops.aks.plugins.module_utils.kueue import kueue_api as api
from ansible_collections.kueueops.aks.plugins.module_utils.kueue import admission_checks, multikueue
from ansible_collections.kueueops.aks.plugins.module_utils.kueue import queues as q
from ansible_collections.kueueops.aks.plugins.module_utils.kube import server_errors

from ansible_collections.kueueops.aks.plugins.module_utils.kube.kube_import import ApiException
from ansible_collections.kueueops.aks.plugins.module_utils.kube.kueue_cluster import is_unreachable, never_sent, path
from ansible_collections.kueueops.aks.plugins.module_utils.kueue.declared import (
    QueueProblems, configuration_of, load_declared, normalise_declared, scrub_problems)
from ansible_collections.kueueops.aks.plugins.module_utils.kueue import plan as plan_mod
from ansible_collections.kueueops.aks.plugins.module_utils.kueue.plan import PRUNED, UNCHANGED, ref
from ansible_collections.kueueops.aks.plugins.module_utils.kueue.reader import KueueReader
from ansible_collections.kueueops.aks.plugins.module_utils.kube.wait import Deadline, WatchRules, poll_until, watch_until

DRAIN_MANAGER = 'kueueops-drain'
DELETE_WAIT = 15.0  # seconds a run waits for the objects it deleted to be gone (then it warns)
LIST_OVER = 50  # wait_gone reads a kind with more deleted objects left than this with a LIST, not a GET each
_FIELD_RE = re.compile(r'((?:spec|metadata)(?:\.[A-Za-z0-9_]+(?:\[[^\]]*\])*)+)')


def _status_body(exc):
    body = getattr(exc, 'body', None)
    if isinstance(body, bytes):
        body = body.decode('utf-8', 'replace')
    try:
        data = json.loads(body) if body else None
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def problems_from_api_error(exc, label, obj=None):
    """Problems (one per field the API server names) for a failed request on ``label``: the refusals of the
    schema, of Kueue's CEL rules and webhooks and of server-side apply's typed patch, translated by
    server_errors into field path, plain words and fix (``obj`` is what was sent: it turns the server's paths
    back into the declared object's)."""
    if not isinstance(exc, ApiException):
        return [q.Problem(label, None, '%s: %s' % (type(exc).__name__, exc))]
    data = _status_body(exc) or {}
    message = str(data.get('message') or api_exception_message(exc))
    if exc.status == 403 and 'admission webhook' not in message:  # "permission denied: cannot <verb> ...", as everywhere
        return [q.Problem(label, None, api_exception_message(exc))]
    causes = (data.get('details') or {}).get('causes') or []
    if exc.status == 409 and causes and any(c.get('reason') == 'FieldManagerConflict' for c in causes):
        return [q.Problem(label, (c.get('field') or '').lstrip('.') or None, c.get('message') or 'conflict',
                          'set force: true to take the field over from that manager') for c in causes]
    obj = obj if isinstance(obj, dict) else {}
    kind_label = '%s %s' % (obj.get('apiVersion') or api.GROUP, obj.get('kind') or 'object')
    found = server_errors.typed_patch(message, obj, kind_label) or server_errors.webhook(message, obj)
    if not found:
        real = [c for c in causes if 'some validation rules were not checked' not in (c.get('message') or '')]
        found = [server_errors.cause(c.get('field'), c.get('message') or c.get('reason') or message, obj)
                 for c in real or causes]
    if found:
        return [q.Problem(label, field, text, fix) for field, text, fix in found]
    match = _FIELD_RE.search(message)
    return [q.Problem(label, match.group(1) if match else None, 'refused by the API server: %s' % message,
                      'correct the object as the API server says')]


class Unreachable(Exception):
    """Raised by ``apply_kind`` when some writes got no answer: ``stored`` holds those that were
    confirmed, ``unconfirmed`` the keys whose request broke (written or not, nobody knows)."""

    def __init__(self, cause, stored, unconfirmed):
        super().__init__(str(cause))
        self.cause = cause
        self.stored = stored
        self.unconfirmed = unconfirmed


class ApplyInterrupted(KueueOpsError):
    """The API server stopped answering after this run began writing. ``progress`` (Progress) says what was
    written (``applied``, each with its action) and which ClusterQueues are still held; ``unconfirmed`` lists the
    writes in flight when it happened; ``total`` the writes the run had to make."""

    SHOWN = 5

    def failure_result(self):
        """What a failed module returns besides the message: what was written (KueueOpsModule.run)."""
        return {'applied': self.applied, 'unconfirmed': self.unconfirmed,
                'changed': bool(self.applied or self.unconfirmed)}

    def __init__(self, progress, cause, host, total, unconfirmed=()):
        self.stage = progress.stage
        self.applied = list(progress.applied)
        self.total = total
        self.unconfirmed = list(unconfirmed)
        self.held_cqs = list(progress.holding)
        reason = describe_kube_error(cause, host=host).problem
        parts = ['the API server stopped answering during %s (%s)' % (self.stage, reason)]
        parts.append('%d of the %d write(s) this run had to make were done before that%s' % (
            len(self.applied), total, (': ' + self._summary(self.applied)) if self.applied else ''))
        if self.unconfirmed:
            parts.append('%d more were in flight and may or may not have been written: %s' % (
                len(self.unconfirmed), self._summary(self.unconfirmed)))
        parts.append('nothing else was written (the result\'s applied list names every object written)')
        if self.held_cqs:
            parts.append('ClusterQueue(s) %s were left with stopPolicy Hold by hold_admission until the re-run '
                         'releases them' % ', '.join(self._names(self.held_cqs)))
        super().__init__('; '.join(parts), field='host',
                         fix='re-run the same configuration once the API server answers: it converges, writing only '
                             'what is missing or different')

    @classmethod
    def _names(cls, names):
        names = list(names)
        shown = names[:cls.SHOWN]
        more = len(names) - len(shown)
        return shown + (['and %d more' % more] if more > 0 else [])

    @classmethod
    def _summary(cls, refs):
        """'ClusterQueue x120 (cq-000, cq-001, ... and 115 more), LocalQueue x3 (team-a/q, ...)'."""
        by_kind = {}
        for item in refs:
            name = ('%s/%s' % (item['namespace'], item['name'])) if item.get('namespace') else item['name']
            by_kind.setdefault(item['kind'], []).append(name)
        order = ['Namespace'] + list(api.KIND_ORDER)
        kinds = sorted(by_kind, key=lambda k: order.index(k) if k in order else len(order))
        return ', '.join('%s x%d (%s)' % (kind, len(by_kind[kind]), ', '.join(cls._names(by_kind[kind])))
                         for kind in kinds)


class ConcurrentChange(Exception):
    """An object changed between this run's read and its write, to something else than this run wants."""


def is_stale_write(exc):
    """A 409 from the resourceVersion precondition (not a field manager conflict)."""
    if not isinstance(exc, ApiException) or exc.status != 409:
        return False
    data = _status_body(exc) or {}
    causes = (data.get('details') or {}).get('causes') or []
    if any(c.get('reason') == 'FieldManagerConflict' for c in causes):
        return False
    return 'has been modified' in str(data.get('message') or '') or data.get('reason') == 'Conflict'


class QueueEngine(KueueReader):
    """Server-side apply of a Kueue configuration; see the module docstring. Reads through KueueReader."""

    def __init__(self, api_client, manager=q.FIELD_MANAGER, workers=8, log=None):
        super().__init__(api_client, workers=workers, log=log)
        self.manager = manager
        self.checked_queues = False  # some ClusterQueue of the input has AdmissionChecks (wait_active)
        self.wait_stopped = []  # the queues whose cause cannot heal, at which the last wait_active ended

    # ------------------------------------------------------------ writes
    def server_apply(self, obj, dry_run=False, force=False, manager=None):
        """Server-side apply of ``obj``; returns the object as stored (or as it would be)."""
        kind, namespace, name = api.obj_key(obj)
        if kind == 'Secret':
            api_path = path('v1', 'secrets', namespace, name)
        else:
            api_path = path(obj['apiVersion'], api.PLURALS[kind], namespace or None, name)
        return self.cluster.apply(api_path, obj, manager or self.manager, force=force, dry_run=dry_run,
                                  fieldValidation='Strict')

    def dry_run_create_elsewhere(self, obj, namespace):
        """Dry-run create of a LocalQueue under a generated name in an existing namespace:
        validates its content when its own namespace does not exist yet."""
        body = copy.deepcopy(obj)
        meta = body['metadata']
        meta['generateName'] = meta.pop('name')[:40] + '-'
        meta['namespace'] = namespace
        return self.cluster.create(path(obj['apiVersion'], api.PLURALS[obj['kind']], namespace), body, dryRun='All',
                                   fieldManager=self.manager, fieldValidation='Strict')

    def delete(self, key, dry_run=False):
        kind, namespace, name = key
        return self.cluster.delete(self._path(kind, namespace, name), propagationPolicy='Background',
                                   dryRun='All' if dry_run else None)

    def create_namespace(self, name):
        body = {'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': name}}
        try:
            self.cluster.create(path('v1', 'namespaces'), body, fieldManager=self.manager)
        except ApiException as exc:
            if exc.status == 409:
                return False
            raise
        return True

    # ------------------------------------------------------------- phases
    def dry_run_all(self, objects, live, namespaces, force=False, hold=False):
        """Dry-run every object; returns ({key: dry-run result or None}, [problems])."""
        substitute = None
        for candidate in ('default', 'kube-system'):
            if candidate in namespaces:
                substitute = candidate
                break
        if substitute is None and namespaces:
            substitute = sorted(namespaces)[0]

        def run(obj):
            key = api.obj_key(obj)
            if obj['kind'] == 'LocalQueue' and key[1] not in namespaces:
                if substitute is None:
                    return None
                self.dry_run_create_elsewhere(obj, substitute)
                return None
            result = self.server_apply(obj, dry_run=True, force=force)
            if hold and obj['kind'] == 'ClusterQueue':
                self.server_apply(held(obj), dry_run=True, force=force)
            return result

        results = {}
        problems = []
        unreachable = []
        for obj, result, exc in self._map(run, objects):
            if exc is not None and is_unreachable(exc):
                unreachable.append((obj, exc))
            elif exc is not None:
                problems.extend(problems_from_api_error(exc, api.obj_label(obj), obj))
            else:
                results[api.obj_key(obj)] = result
        if unreachable:
            raise Unreachable(unreachable[0][1], {}, [api.obj_key(o) for o, _e in unreachable])
        return results, problems

    def apply_kind(self, objects, force=False, expected=None):
        """Apply ``objects`` (one kind) concurrently; returns ({key: stored}, [problems]).

        ``expected`` maps keys to the object as this run read (and validated) it: its
        resourceVersion is sent as an optimistic lock, so a write by someone else in between
        (another run of this module, with another configuration) is never silently overwritten.
        See ``_apply_locked``.
        """
        expected = expected or {}

        def apply(obj):
            key = api.obj_key(obj)
            if key not in expected:
                return self.server_apply(obj, force=force)
            return self._apply_locked(obj, expected[key], force)

        stored = {}
        problems = []
        unconfirmed = []
        cause = None
        for obj, result, exc in self._map(apply, objects):
            if isinstance(exc, ConcurrentChange):
                problems.append(q.Problem(api.obj_label(obj), None, str(exc)))
            elif exc is not None and is_unreachable(exc):
                if not never_sent(exc):
                    unconfirmed.append(api.obj_key(obj))
                cause = cause or exc
            elif exc is not None:
                problems.extend(problems_from_api_error(exc, api.obj_label(obj), obj))
            else:
                stored[api.obj_key(obj)] = result
        if cause is not None:
            raise Unreachable(cause, stored, unconfirmed)
        return stored, problems

    def _apply_locked(self, obj, read, force, attempts=5):
        """Apply ``obj`` on condition that nobody changed it since ``read``. A controller's status or
        finalizer update in between is not a change of configuration: retry on the new version.
        When the configuration now already is what this run wants (two runs with the same
        input), that is success. Otherwise the other writer's version stays and the run says so."""
        key = api.obj_key(obj)
        for _attempt in range(attempts):
            locked = copy.deepcopy(obj)
            locked['metadata']['resourceVersion'] = read['metadata']['resourceVersion']
            try:
                return self.server_apply(locked, force=force)
            except ApiException as exc:
                if not is_stale_write(exc):
                    raise
            live = self.get(key)
            if live is None:
                raise ConcurrentChange('deleted by another writer after this run read it; re-run to create it again')
            if configuration_of(live) == configuration_of(read):
                read = live
                continue
            dry = self.server_apply(obj, dry_run=True, force=force)
            if q.apply_changes(dry, live, self.manager) == 'unchanged':
                return live
            raise ConcurrentChange(
                'changed by another writer after this run read it (another run of kueue_queues or configure_queues '
                'with a different configuration?); it was left as the other writer made it. Re-run to apply this '
                'configuration over it, or make the two configurations agree')
        raise ConcurrentChange('kept changing while this run tried to apply it (%d attempts); re-run' % attempts)

    def drain(self, key):
        """Set stopPolicy HoldAndDrain on a ClusterQueue (own field manager, forced)."""
        body = {'apiVersion': '%s/%s' % (api.GROUP, self.version_of(key[0])), 'kind': key[0],
                'metadata': {'name': key[2]}, 'spec': {'stopPolicy': 'HoldAndDrain'}}
        self.server_apply(body, force=True, manager=DRAIN_MANAGER)

    def waiting_reason(self, key, obj):
        """Why a deleted object is still there (Kueue's resource-in-use finalizer)."""
        finalizers = (obj.get('metadata') or {}).get('finalizers') or []
        status = obj.get('status') or {}
        others = [f for f in finalizers if f != q.RESOURCE_IN_USE_FINALIZER]
        reasons = []
        if q.RESOURCE_IN_USE_FINALIZER in finalizers and key[0] == 'ClusterQueue':
            reasons.append('held by finalizer %s: %s admitted and %s reserving workload(s) still use it; they '
                           'finish, or set prune_drain: true to evict them (stopPolicy HoldAndDrain)'
                           % (q.RESOURCE_IN_USE_FINALIZER, status.get('admittedWorkloads', 0),
                              status.get('reservingWorkloads', 0)))
        elif q.RESOURCE_IN_USE_FINALIZER in finalizers and key[0] == 'ResourceFlavor':
            reasons.append('held by finalizer %s: a ClusterQueue still references this flavor (or is being deleted '
                           'while workloads use it)' % q.RESOURCE_IN_USE_FINALIZER)
        elif q.RESOURCE_IN_USE_FINALIZER in finalizers:
            others = finalizers
        if others:
            reasons.append('held by finalizer(s) %s, which Kueue does not remove: whoever added them removes them'
                           % ', '.join(others))
        return '; '.join(reasons) or 'deletion in progress'

    def _present(self, kind, keys):
        """{key: live object} of the ``keys`` (all of ``kind``) that one LIST of the kind holds, read page by page
        and keeping only those."""
        wanted = set(keys)
        return dict((api.obj_key(item), item) for item in self._items(kind) if api.obj_key(item) in wanted)

    def wait_gone(self, keys, seconds):
        """Read ``keys`` until they are gone or ``seconds`` pass; {key: live object} of those left. A round reads a
        Kueue kind with more than LIST_OVER keys left with one LIST (page by page), the others with a GET per object:
        the prune of 1,000 LocalQueues is a few LIST pages a round, not 1,000 GETs. A read that fails leaves its keys
        as they were for the next round."""
        left = dict((k, None) for k in keys)

        def read():
            by_kind = {}
            for key in left:
                by_kind.setdefault(key[0], []).append(key)
            listed = [k for k, kind_keys in by_kind.items() if k not in api.CORE_KINDS and len(kind_keys) > LIST_OVER]
            for kind, found, exc in self._map(lambda k: self._present(k, by_kind[k]), listed):
                if exc is None:
                    for key in by_kind[kind]:
                        if key in found:
                            left[key] = found[key]
                        else:
                            left.pop(key)
            single = [key for kind, kind_keys in by_kind.items() if kind not in listed for key in kind_keys]
            for key, obj, exc in self._map(self.get, single):
                if exc is None and obj is None:
                    left.pop(key)
                elif exc is None:
                    left[key] = obj
            return left

        poll_until(read, lambda still: not still, Deadline(seconds), 0.5)
        return left

    def wait_deleted(self, keys, deadline):
        """Wait for the deleted ``keys`` to be gone, at most DELETE_WAIT s (within ``deadline``); {key: {kind, name[,
        namespace], reason, waited}} of those still there, in the order of ``keys`` (why: ``waiting_reason``)."""
        if not keys:
            return {}
        waited = min(DELETE_WAIT, deadline.remaining())
        left = self.wait_gone(keys, waited)
        return dict((key, dict(ref(key), reason=self.waiting_reason(key, left[key] or {}), waited=int(round(waited))))
                    for key in keys if key in left)

    # ------------------------------------------------------------ waiting
    def wait_active(self, keys_by_kind, deadline):
        """Wait until every key reports Active=True; {key: reason} of those that do not. A ClusterQueue inactive
        because of an AdmissionCheck gets the chain's causes before Kueue's reason, deepest first
        (admission_checks.explain); when one of them cannot heal by waiting, the wait ends at once (the remaining
        kinds are read once) and ``wait_stopped`` is true. With ``checked_queues`` (some ClusterQueue of the input has
        AdmissionChecks, whose MultiKueueClusters change without a ClusterQueue event) a ClusterQueue watch round is
        5 s, so such a cause is seen within seconds."""
        not_active, final = {}, []
        for kind in q.ACTIVE_KINDS:
            keys = set(keys_by_kind.get(kind) or ())
            if not keys:
                continue
            not_active.update(self._wait_kind_active(
                kind, keys, Deadline(0) if final else deadline, final,
                5 if self.checked_queues and kind == 'ClusterQueue' else 60))
        self.wait_stopped = list(final)
        return not_active

    def _wait_kind_active(self, kind, keys, deadline, final=None, round_seconds=60):
        # {key: reason} of the keys not Active yet, kept up to date item by item: an event costs the same whatever
        # the number of queues (10,000 LocalQueues turning Active are 10,000 events; recomputing the pending set
        # over every key on each of them was quadratic).
        pending = dict((key, 'not found') for key in keys)
        final = [] if final is None else final

        def seen(item):
            item.setdefault('kind', kind)
            key = api.obj_key(item)
            if key in keys:
                active, reason = q.active_state(item)
                if active:
                    pending.pop(key, None)
                    return
                causes = admission_checks.explain(self.cluster, self.version_of(kind), item) \
                    if kind == 'ClusterQueue' else []
                pending[key] = admission_checks.text(causes, reason)
                if any(c.final for c in causes) and key not in final:
                    final.append(key)

        def listed(items):
            for item in items:
                seen(item)
            return {} if final else pending

        def changed(event):
            item = event.get('object') if isinstance(event, dict) else None
            if isinstance(item, dict) and event.get('type') in ('ADDED', 'MODIFIED'):
                seen(item)
            return {} if final else pending

        # A watch that breaks or expires ends its round; the next LIST is the truth (errors='relist'). Only each
        # queue's Active state is kept, so the LIST is read page by page (paged): 10,000 LocalQueues are never in
        # memory at once. A cause that cannot heal ends the wait (an empty pending for watch_until).
        watch_until(self.cluster, self._path(kind, None), deadline, listed, changed,
                    WatchRules(round_seconds=round_seconds, errors='relist', paged=True))
        return dict(pending)


def not_active_message(result, timeout):
    """kueue_queues' failure when queues are not Active: each queue and its reason (a ClusterQueue's AdmissionCheck
    chain first, deepest cause first); when the wait ended at a cause that cannot heal, that queue leads and the
    message says the timeout was not waited out."""
    def label(i):
        return '%s %s%s' % (i['kind'], i.get('namespace', '') and i['namespace'] + '/', i['name'])
    items = result['not_active']
    reasons = '; '.join('%s: %s' % (label(i), i['reason']) for i in items)
    if result.get('wait_stopped'):
        first = items[0]
        return ('%s cannot become Active: %s. The wait stopped at once rather than after %ss (timeout): waiting '
                'cannot heal this. %d queue(s) not Active: %s' % (label(first), first['reason'], timeout, len(items),
                                                                  reasons))
    return '%d queue(s) did not become Active within %ss: %s' % (len(items), timeout, reasons)


def all_active(live, keys_by_kind):
    """Whether every expected queue is in ``live`` (kind -> {key: object}) with Active=True."""
    return all(q.active_state(((live.get(kind) or {}).get(key)) or {})[0]
               for kind, keys in keys_by_kind.items() for key in keys)


def held(obj):
    """``obj`` with ``spec.stopPolicy: Hold`` (kept if it already stops admission)."""
    out = copy.deepcopy(obj)
    spec = out.setdefault('spec', {})
    if spec.get('stopPolicy') not in ('Hold', 'HoldAndDrain'):
        spec['stopPolicy'] = 'Hold'
    return out


def expected_active(objects):
    """The ClusterQueues and LocalQueues that should become Active: those not stopped
    on purpose (stopPolicy Hold/HoldAndDrain on the queue or its ClusterQueue)."""
    stopped_cqs = set()
    out = {'ClusterQueue': [], 'LocalQueue': []}
    for obj in objects:
        if obj['kind'] == 'ClusterQueue':
            if (obj.get('spec') or {}).get('stopPolicy') in ('Hold', 'HoldAndDrain'):
                stopped_cqs.add(obj['metadata']['name'])
            else:
                out['ClusterQueue'].append(api.obj_key(obj))
    for obj in objects:
        if obj['kind'] == 'LocalQueue':
            spec = obj.get('spec') or {}
            if spec.get('stopPolicy') in ('Hold', 'HoldAndDrain') or spec.get('clusterQueue') in stopped_cqs:
                continue
            out['LocalQueue'].append(api.obj_key(obj))
    return out


def _multikueue_documents(mk, items, problems, kueue_ns, masked, present=True):
    """``(items, generated Secret names)``: the input documents with those the ``multikueue`` option generates
    added (multikueue.documents), after the option's own checks (its problems join ``problems``; then nothing is
    generated and the names are None). Every kubeconfig and the secrets in it join ``masked`` first."""
    if not mk:
        return items, None
    for cluster in mk.get('clusters') or []:
        kubeconfig = cluster.get('kubeconfig')
        if isinstance(kubeconfig, str) and kubeconfig:
            masked.add(kubeconfig)
            masked.update(multikueue.kubeconfig_secrets(kubeconfig))
    found = [q.Problem(*p) for p in multikueue.option_problems(mk, items, kueue_ns, present)]
    if found:
        problems.extend(scrub_problems(found, masked))
        return items, None
    generated = multikueue.documents(mk, kueue_ns)
    masked.update(q.secret_values([doc for _origin, doc in generated]))
    names = set(doc['metadata']['name'] for _origin, doc in generated if doc['kind'] == 'Secret')
    return items + generated, names


def _prune_keys(params, live, desired_keys, manager, aks_managed, objects=(), kueue_ns='kueue-system'):
    """What a run deletes: with ``prune``, everything this field manager applied that the input no longer declares
    (queues.prune_candidates); with ``multikueue`` (even without ``prune``), those of them that carry the option's
    label (multikueue.owned): the wiring of workers no longer listed."""
    mk = params.get('multikueue')
    if not params.get('prune') and not mk:
        return []
    keys = q.prune_candidates(live, desired_keys, manager, aks_managed, objects, kueue_ns)
    return keys if params.get('prune') else multikueue.owned(live, keys, mk['config'])


def _prune_reason(params):
    """Why the run prunes what it prunes (``_prune_keys``), for the plan."""
    if params.get('prune'):
        return plan_mod.REASONS[PRUNED]
    return 'generated by the multikueue option for a worker no longer listed'


def check_backup_cluster(params, identity):
    """When ``src`` is a kueue_backup folder: refuse it on another cluster than its own (cluster_identity.check,
    unless ``allow_other_cluster``) before anything is read or written; returns whether it is the same cluster, or
    None when ``src`` is not a backup. ``identity``: a callable reading the live cluster's identity."""
    recorded = cluster_identity.of_backup(params.get('src'))
    if recorded is None:
        return None
    return cluster_identity.check(recorded, identity() if identity else {}, 'the backup %s (src)' % params['src'],
                                  'src', 'allow_other_cluster', params.get('allow_other_cluster'))


def run(api_client, params, check_mode=False, diff=False, log=None, no_log_values=None, identity=None):
    """One kueue_queues run. Returns the result dict; raises QueueProblems / KueueOpsError / ApiException.

    ``no_log_values`` (a set) receives every value of the Secrets read from the input or the
    cluster as soon as they are read, so that the caller masks them in whatever it prints. ``identity``: a
    callable returning the cluster's identity, read when ``src`` is a backup folder (check_backup_cluster).
    """
    same_cluster = check_backup_cluster(params, identity)
    engine = QueueEngine(api_client, workers=params.get('workers') or 8, log=log)
    this = QueueRun(engine, params, no_log_values if no_log_values is not None else set())
    objects, converted, problems = this.declared()
    result = this.header(same_cluster)
    if params.get('state') == 'absent':
        return _run_absent(engine, objects, problems, this.aks_managed, check_mode, this.deadline, result)
    live, namespaces, prune_keys = this.checked(objects, problems, result)
    plan = this.plan(objects, converted, live, namespaces, prune_keys, result)
    result.update({'implicit_cohorts': q.implicit_cohorts(objects, live), 'namespaces_created': list(plan.namespaces),
                   'pruned': [], 'prune_waiting': [], 'held': [], 'not_active': []})
    if check_mode:
        result.update(planned(plan, diff))
        return result
    progress = Executor(engine, plan, params, this.masked, this.deadline).run()
    result.update(written(plan, progress, diff))
    if params.get('wait', True):
        result.update(this.wait(plan, live, result['changed'], progress))
    return result


class QueueRun:
    """The steps of one kueue_queues run before and after its writes (the writes are ``Executor``'s): the declared
    objects, the live state and the checks, the plan, the wait for Active. Holds what the steps share: the engine,
    the options, the values to mask, the run's deadline and whether the AKS managed extension runs."""

    def __init__(self, engine, params, masked):
        self.engine = engine
        self.params = params
        self.masked = masked
        self.deadline = Deadline(params.get('timeout') or 300)
        self.kueue_ns = params.get('kueue_namespace') or 'kueue-system'
        self.aks_managed = params.get('aks_extension')
        self.generated_secrets = None

    def declared(self):
        """``(objects, converted, problems)``: the declared objects (with those the ``multikueue`` option generates),
        normalised to the versions the cluster serves, after discovery."""
        items, problems = load_declared(self.params, self.masked)
        items, self.generated_secrets = _multikueue_documents(self.params.get('multikueue'), items, problems,
                                                              self.kueue_ns, self.masked,
                                                              self.params.get('state') != 'absent')
        self.engine.discover()
        if self.aks_managed is None:
            self.aks_managed = self.engine.detect_aks_extension(self.kueue_ns)
        objects, converted = normalise_declared(self.engine, items, problems, self.kueue_ns, self.masked)
        return objects, converted, problems

    def header(self, same_cluster):
        served = self.engine.served
        result = {'api_version': '%s/%s' % (api.GROUP, served.get('ClusterQueue', sorted(served.values())[0])),
                  'api_versions': dict(served), 'aks_extension': bool(self.aks_managed)}
        if same_cluster is not None:
            result['same_cluster'] = same_cluster
        return result

    def checked(self, objects, problems, result):
        """``(live, namespaces, prune_keys)``: one LIST per kind, the Namespaces when a LocalQueue is declared, the
        Secrets the run deals with, what it prunes; raises QueueProblems when a check of the input fails."""
        engine, params, kueue_ns = self.engine, self.params, self.kueue_ns
        live = engine.list_live()
        namespaces = engine.list_namespaces() if any(o['kind'] in api.NAMESPACED for o in objects) else set()
        desired_keys = set(api.obj_key(o) for o in objects)
        prune_keys = _prune_keys(params, live, desired_keys, engine.manager, self.aks_managed)
        result['local_queues'] = sorted('%s/%s' % (ns, name) for kind, ns, name in desired_keys if kind == 'LocalQueue')
        # The Secrets this run deals with: declared ones, those the declared MultiKueueClusters use, and
        # those of MultiKueueClusters being pruned (candidates for pruning themselves).
        secret_names = set(o['metadata']['name'] for o in objects if o['kind'] == 'Secret')
        users = [o for o in objects if o['kind'] == 'MultiKueueCluster']
        users += [live['MultiKueueCluster'][k] for k in prune_keys if k[0] == 'MultiKueueCluster']
        secret_names.update(name for (_ns, name) in q.multikueue_secret_refs(users, kueue_ns))
        live['Secret'] = engine.get_secrets(kueue_ns, secret_names) if secret_names else {}
        self.masked.update(q.secret_values(live['Secret'].values()))
        prune_keys = _prune_keys(params, live, desired_keys, engine.manager, self.aks_managed, objects, kueue_ns)
        mk = params.get('multikueue')
        if mk and self.generated_secrets is not None:
            problems.extend(q.Problem(*p) for p in multikueue.attach(objects, mk, live, prune_keys))
            result['multikueue'] = multikueue.summary(mk, multikueue.owned(live, prune_keys, mk['config']))
        provisioning_api = None
        if q.provisioning_request_checks(objects):
            provisioning_api = engine.serves(*q.PROVISIONING_REQUEST_API)
        problems.extend(q.validate(objects, live, namespaces, create_namespaces=params.get('create_namespaces'),
                                   aks_managed=self.aks_managed, pruned=prune_keys, kueue_namespace=kueue_ns,
                                   provisioning_request_api=provisioning_api,
                                   kubeconfigs_checked=self.generated_secrets or ()))
        problems.extend(engine.schema_problems(objects, skip=set(p.obj for p in problems)))
        if problems:
            raise QueueProblems(scrub_problems(problems, self.masked), 'input and cross-reference checks')
        return live, namespaces, prune_keys

    def plan(self, objects, converted, live, namespaces, prune_keys, result):
        """The run's plan (kueue/plan.py). Objects the live object shows an apply would not change need no dry-run
        (plan.settled); the others are judged by the API server before anything is written (plan.to_judge); a
        refusal raises QueueProblems, and nothing is written."""
        same = plan_mod.settled(objects, live, converted, self.engine.manager)
        judged = plan_mod.to_judge(objects, same, self.params.get('hold_admission'))
        result['dry_runs'] = len(judged)
        try:
            dry, dry_problems = self.engine.dry_run_all(judged, live, namespaces, force=self.params.get('force'),
                                                        hold=self.params.get('hold_admission'))
        except Unreachable as exc:
            raise KueueOpsError('the API server stopped answering during the server-side dry-run (%s); nothing was '
                                'written' % describe_kube_error(exc.cause, host=self.engine.cluster.host).problem,
                                field='host', fix='re-run once the API server answers')
        if dry_problems:
            raise QueueProblems(scrub_problems(dry_problems, self.masked),
                                'server-side dry-run: CRD schema, CEL rules and Kueue webhooks')
        return plan_mod.build(objects, live, plan_mod.by_dry_run(dry, same, self.engine.manager), prune_keys,
                              namespaces, prune_reason=_prune_reason(self.params))

    def wait(self, plan, live, changed, progress):
        """``{not_active, wait_stopped}``: the wait for the declared queues to become Active (kube/wait.py's
        watch_until, in QueueEngine.wait_active)."""
        engine = self.engine
        progress.stage = 'the wait for the queues to become Active (every write was done)'
        objects = [e.declared for e in plan.objects]
        expected = expected_active(objects)
        try:
            # Nothing written: the run's own LIST is as current as another would be, so queues it shows Active
            # need no second LIST (a re-run with nothing to do makes one LIST per kind).
            engine.checked_queues = any(admission_checks.check_names(o) for o in objects
                                        if o.get('kind') == 'ClusterQueue')
            not_active = {} if not changed and all_active(live, expected) else \
                engine.wait_active(expected, self.deadline)
        except Exception as exc:  # pylint: disable=broad-except
            if not is_unreachable(exc):
                raise
            raise progress.interrupted(exc, engine.cluster.host, plan.writes)
        stopped = set(engine.wait_stopped) if not_active else set()
        return {'not_active': [dict(ref(k), reason=r) for k, r in sorted(not_active.items(),
                                                                         key=lambda i: (i[0] not in stopped, i[0]))],
                'wait_stopped': bool(stopped)}


def planned(plan, diff):
    """Check mode's result: the plan rendered, nothing written."""
    changed_objects = plan.changed_objects()
    out = {'pruned': [ref(k) for k in plan.pruned], 'changed': bool(changed_objects or plan.namespaces),
           'counts': plan.counts(), 'changed_objects': changed_objects}
    if diff:
        out['diff'] = plan.diff()
    return out


def written(plan, progress, diff):
    """The result of a run that wrote ``plan``: the plan rendered with what its writes ended with (``progress``):
    the namespaces created, the ClusterQueues held, the pruned objects gone and those still being deleted."""
    changed_objects = plan.changed_objects(progress.pruned)
    out = {'namespaces_created': progress.namespaces_created, 'held': progress.held,
           'pruned': [ref(k) for k in progress.pruned], 'prune_waiting': progress.prune_waiting,
           'counts': plan.counts(progress.pruned), 'changed_objects': changed_objects,
           'changed': bool(changed_objects or progress.namespaces_created or progress.prune_waiting)}
    if diff:
        out['diff'] = plan.diff(pruned=progress.deleted)
    return out


HOLD_STAGE = 'the hold of ClusterQueues (hold_admission)'


class Progress:
    """What a run has written so far, recorded as each write is confirmed: when the API server stops answering
    half-way, the run says exactly that (``interrupted``: ApplyInterrupted) and a re-run converges. ``stage``: the
    step under way; ``applied``: every object written, with its action; ``in_flight``: the namespace creation sent
    and not answered yet; ``holding``: the ClusterQueues held by hold_admission and not released yet. And what the
    writes ended with: ``namespaces_created``, ``held`` (every ClusterQueue held), ``pruned`` (the keys deleted and
    gone, in the order of the prune), ``prune_waiting`` (those still being deleted, with why) and ``deleted`` (the
    keys of both: every object a DELETE removed or is removing, which --diff shows)."""

    def __init__(self):
        self.stage = 'the creation of namespaces'
        self.applied = []
        self.in_flight = []
        self.holding = []
        self.namespaces_created = []
        self.held = []
        self.pruned = []
        self.prune_waiting = []
        self.deleted = []

    def interrupted(self, cause, host, total, unconfirmed=()):
        """The ApplyInterrupted of a run cut short by ``cause`` now (``total``: the writes the run had to make)."""
        return ApplyInterrupted(self, cause, host, total, unconfirmed)


def _locks(pairs):
    """{key: object} of the ``(key, object)`` pairs whose object has a resourceVersion: the objects as this run read
    and validated them, optimistic locks for its writes (apply_kind's ``expected``)."""
    return dict((key, obj) for key, obj in pairs
                if isinstance(obj, dict) and (obj.get('metadata') or {}).get('resourceVersion'))


class Executor:
    """Writes a plan (the module docstring's steps 6 and 7): the namespaces, each kind in dependency order (with
    hold_admission, every ClusterQueue held first and released last), then the prune in reverse order, recording
    each confirmed write in one ``Progress``."""

    def __init__(self, engine, plan, params, masked, deadline):
        self.engine = engine
        self.plan = plan
        self.force = params.get('force')
        self.drain = params.get('prune_drain')
        self.masked = masked
        self.deadline = deadline
        self.progress = Progress()
        self.cluster_queues = [e.declared for e in plan.objects if e.kind == 'ClusterQueue']
        self.hold = bool(params.get('hold_admission')) and bool(plan.to_apply) and bool(self.cluster_queues)
        self.expected = _locks((e.key, e.before) for e in plan.objects)

    def run(self):
        """Every write of the plan; returns the Progress. Raises ApplyInterrupted when the API server stops
        answering, QueueProblems when it refuses a write."""
        try:
            self._namespaces()
            self._hold()
            self._apply()
            self._release()
            for kind, keys in _group_keys(self.plan.pruned):
                self._prune(kind, keys)
        except Unreachable as exc:
            raise self._cut_short(exc)
        except (KueueOpsError, QueueProblems):
            raise
        except Exception as exc:  # pylint: disable=broad-except
            if not is_unreachable(exc):
                raise
            raise self.progress.interrupted(exc, self.engine.cluster.host, self.plan.writes,
                                            [] if never_sent(exc) else self.progress.in_flight)
        return self.progress

    def _cut_short(self, exc):
        progress, plan = self.progress, self.plan
        if progress.stage == HOLD_STAGE:
            progress.holding.extend(key[2] for key in exc.stored)
        else:
            progress.applied.extend(ref(key, plan.action(key)) for key in exc.stored if plan.action(key) != UNCHANGED)
        return progress.interrupted(exc.cause, self.engine.cluster.host, plan.writes,
                                    [ref(key, plan.action(key)) for key in exc.unconfirmed])

    def _record(self, stored):
        self.progress.applied.extend(ref(key, self.plan.action(key)) for key in stored
                                     if self.plan.action(key, UNCHANGED) != UNCHANGED)

    def _namespaces(self):
        for ns in self.plan.namespaces:
            self.progress.in_flight = [{'kind': 'Namespace', 'name': ns, 'action': 'created'}]
            if self.engine.create_namespace(ns):
                self.progress.namespaces_created.append(ns)
                self.progress.applied.append({'kind': 'Namespace', 'name': ns, 'action': 'created'})
        self.progress.in_flight = []

    def _hold(self):
        if not self.hold:
            return
        self.progress.stage = HOLD_STAGE
        stored, errs = self.engine.apply_kind([held(o) for o in self.cluster_queues], force=self.force,
                                              expected=self.expected)
        if errs:
            raise QueueProblems(errs, 'holding ClusterQueues (stopPolicy Hold)')
        self.progress.held = [o['metadata']['name'] for o in self.cluster_queues]
        self.progress.holding = list(self.progress.held)
        # (The client returns no body for a 201, so objects this run just created stay unlocked.)
        self.expected.update(_locks(stored.items()))

    def _apply(self):
        for kind, group in q.group_by_kind(self.plan.to_apply):
            if self.hold and kind == 'ClusterQueue':
                continue
            self.progress.stage = 'the apply of %s objects' % kind
            stored, errs = self.engine.apply_kind(group, force=self.force, expected=self.expected)
            self._record(stored)
            if errs:
                raise QueueProblems(scrub_problems(errs, self.masked),
                                    'apply of %s (earlier kinds were applied)' % kind)

    def _release(self):
        if not self.hold:
            return
        self.progress.stage = 'the release of the held ClusterQueues'
        try:
            stored, errs = self.engine.apply_kind(self.cluster_queues, force=self.force, expected=self.expected)
        except Unreachable as exc:
            released = set(key[2] for key in exc.stored)
            self.progress.holding = [name for name in self.progress.holding if name not in released]
            raise
        self._record(stored)
        self.progress.holding = []
        if errs:
            raise QueueProblems(errs, 'releasing ClusterQueues to their desired stopPolicy')

    def _prune(self, kind, keys):
        engine, progress = self.engine, self.progress
        progress.stage = 'the prune of %s objects' % kind
        if self.drain and kind == 'ClusterQueue':
            for key, _res, exc in engine._map(engine.drain, keys):
                if exc is not None:
                    if is_unreachable(exc):
                        raise Unreachable(exc, {}, [])
                    raise QueueProblems(problems_from_api_error(exc, api.key_label(key)), 'draining %s' % kind)
        deleted, broken, cause = [], [], None
        for key, existed, exc in engine._map(engine.delete, keys):
            if exc is not None and is_unreachable(exc):
                if not never_sent(exc):
                    broken.append(key)
                cause = cause or exc
            elif exc is not None:
                raise QueueProblems(problems_from_api_error(exc, api.key_label(key)), 'prune of %s' % kind)
            elif existed:
                deleted.append(key)
        if cause is not None:
            raise Unreachable(cause, dict((k, None) for k in deleted), broken)
        waiting = engine.wait_deleted(deleted, self.deadline)
        for key in deleted:
            progress.applied.append(ref(key, PRUNED))
            progress.deleted.append(key)
            if key in waiting:
                progress.prune_waiting.append(waiting[key])
            else:
                progress.pruned.append(key)


def _group_keys(keys):
    groups = {}
    for key in keys:
        groups.setdefault(key[0], []).append(key)
    return [(k, groups[k]) for k in reversed(api.KIND_ORDER) if k in groups]


def _run_absent(engine, objects, problems, aks_managed, check_mode, deadline, result):
    for obj in objects:
        if aks_managed and obj['metadata']['name'].startswith(q.AKS_PREFIX):
            problems.append(q.Problem(api.obj_label(obj), 'metadata.name',
                                      'objects named %s* belong to the AKS managed Kueue extension; not deleting'
                                      % q.AKS_PREFIX))
    if problems:
        raise QueueProblems(problems, 'input checks')
    counts = dict((k, {'deleted': 0, 'absent': 0}) for k in api.KIND_ORDER if any(o['kind'] == k for o in objects))
    changed_objects = []
    waiting = []
    for kind, group in q.group_by_kind(objects, reverse=True):
        keys = [api.obj_key(o) for o in group]
        deleted = []
        for key, existed, exc in engine._map(lambda k: engine.delete(k, dry_run=check_mode), keys):
            if exc is not None:
                raise QueueProblems(problems_from_api_error(exc, api.key_label(key)), 'delete of %s' % kind)
            if existed:
                deleted.append(key)
            else:
                counts[kind]['absent'] += 1
        if not check_mode and deleted:
            waiting.extend(engine.wait_deleted(deleted, deadline).values())
        for key in deleted:
            counts[kind]['deleted'] += 1
            changed_objects.append(ref(key, 'deleted'))
    result.update(changed=bool(changed_objects), counts=counts, changed_objects=changed_objects,
                  delete_waiting=waiting)
    return result
