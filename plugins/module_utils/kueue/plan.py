"""A queue configuration's plan (issue 42), as a value: what a run creates, changes, leaves unchanged and prunes, and
why, object by object, with the live object and the object as the run would leave it. Pure: ``build`` makes it from the
declared objects, the live objects and a judgement of each object (``by_dry_run``, kueue_queues': the server-side
dry-run's results and what managedFields already settle; kueue_drift_info judges by declared field); nothing here reads
or writes a cluster. kueue_queues' executor (queues/apply.py) writes a plan; its check mode and --diff render one
(``Plan.counts``, ``Plan.changed_objects``, ``Plan.diff``), and kueue_drift_info reads one without writing.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import namedtuple
from dataclasses import dataclass, field

from ansible_collections.kueueops.aks.plugins.module_utils.kueue import kueue_api as api
from ansible_collections.kueueops.aks.plugins.module_utils.kueue import managed_fields
from ansible_collections.kueueops.aks.plugins.module_utils.kueue import queues as q

CREATED, UPDATED, UNCHANGED, PRUNED = 'created', 'updated', 'unchanged', 'pruned'
ACTIONS = (CREATED, UPDATED, UNCHANGED, PRUNED)
REASONS = {
    CREATED: 'not in the cluster',
    UPDATED: 'the server-side dry-run differs from the live object, or takes a field over',
    UNCHANGED: 'the server-side dry-run is the live object',
    'settled': 'its managedFields show an apply would change nothing (no dry-run)',
    'new namespace': 'not in the cluster, nor is its namespace, which this run creates (the dry-run judged it under '
                     'a generated name in another namespace)',
    PRUNED: 'applied by this field manager and no longer declared (prune)',
}
# How ``Plan.diff`` heads its entries: the "after" side, an absent object (None: "<object> (live)") and a pruned one.
APPLY_LABELS = ('applied', None, '(pruned)')


def ref(key, action=None):
    """``{kind, name[, namespace][, action]}`` of an object's key, as every result lists objects."""
    out = {'kind': key[0], 'name': key[2]}
    if key[1]:
        out['namespace'] = key[1]
    if action:
        out['action'] = action
    return out


class Entry(namedtuple('Entry', 'key action reason declared before after fields')):
    """One object of a plan. ``key``: (kind, namespace, name); ``action``: created, updated, unchanged or pruned;
    ``reason``: why, in words; ``declared``: the declared object (None when pruned); ``before``: the live object
    (None when absent); ``after``: the object as the run leaves it (the dry-run's result, else the declared object;
    None when pruned); ``fields``: the declared fields whose live value differs, when the judgement compared fields
    (``[{field, declared, live}]``, drift), else ()."""

    __slots__ = ()

    @property
    def kind(self):
        return self.key[0]


def entry(key, action, declared, before, after=None, reason=None):
    """An Entry whose reason defaults to the action's (REASONS) and ``after`` to the declared object."""
    return Entry(key, action, reason or REASONS[action], declared, before,
                 declared if after is None else after, ())


@dataclass(frozen=True)
class Plan:
    """What a run does, object by object (``entries``: the declared objects in dependency order, then the pruned
    ones in the order they were given), and the namespaces it creates for its LocalQueues (``namespaces``, sorted).
    A value: built once by ``build``, never changed after."""

    entries: tuple
    namespaces: tuple = ()
    _actions: dict = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, 'entries', tuple(self.entries))
        object.__setattr__(self, 'namespaces', tuple(self.namespaces))
        object.__setattr__(self, '_actions', dict((e.key, e.action) for e in self.entries))

    @property
    def objects(self):
        """The entries of the declared objects."""
        return [e for e in self.entries if e.action != PRUNED]

    @property
    def pruned(self):
        """The keys the run deletes, in the plan's order."""
        return [e.key for e in self.entries if e.action == PRUNED]

    @property
    def to_apply(self):
        """The declared objects the run writes (created or updated), in dependency order."""
        return [e.declared for e in self.entries if e.action in (CREATED, UPDATED)]

    @property
    def writes(self):
        """How many writes the run makes: namespaces, objects applied, objects pruned."""
        return len(self.namespaces) + sum(1 for e in self.entries if e.action != UNCHANGED)

    def action(self, key, default=PRUNED):
        """The action of ``key`` (``default`` for a key the plan does not hold)."""
        return self._actions.get(key, default)

    def counts(self, pruned=None):
        """``{kind: {created, updated, unchanged, pruned}}`` of every kind the plan holds, in dependency order.
        ``pruned``: the keys whose deletion completed (after the writes); all the plan prunes by default."""
        out = dict((k, dict.fromkeys(ACTIONS, 0)) for k in api.KIND_ORDER if any(e.kind == k for e in self.entries))
        for item in self.objects:
            out[item.kind][item.action] += 1
        for key in self.pruned if pruned is None else pruned:
            out[key[0]][PRUNED] += 1
        return out

    def changed_objects(self, pruned=None):
        """The objects created, updated and pruned, each with its action (``pruned`` as in ``counts``)."""
        return [ref(e.key, e.action) for e in self.objects if e.action != UNCHANGED] + \
            [ref(key, PRUNED) for key in (self.pruned if pruned is None else pruned)]

    def diff(self, pruned=None, labels=APPLY_LABELS):
        """--diff: ``[{before_header, after_header, before, after}]`` of every object the run changes (Secret values
        redacted), the pruned ones last: every one the plan prunes, or after the writes those of ``pruned`` (the keys
        a DELETE was sent for). ``labels``: (the "after" side, an absent object's header or None for "<object>
        (live)", a pruned object's "after" header)."""
        after_label, absent_label, pruned_label = labels
        out = []
        for item in self.objects:
            if item.action == UNCHANGED:
                continue
            label = api.key_label(item.key)
            out.append({'before_header': absent_label if absent_label and item.before is None else '%s (live)' % label,
                        'after_header': '%s (%s)' % (label, after_label), 'before': q.diff_view(item.before),
                        'after': q.diff_view(item.after, item.before)})
        deleted = None if pruned is None else set(pruned)
        for item in (e for e in self.entries if e.action == PRUNED and (deleted is None or e.key in deleted)):
            out.append({'before_header': '%s (live)' % api.key_label(item.key), 'after_header': pruned_label,
                        'before': q.diff_view(item.before), 'after': {}})
        return out


def live_object(live, key):
    """The live object of ``key`` in ``live`` (kind -> {key: object}), or None."""
    return (live.get(key[0]) or {}).get(key)


def build(objects, live, judge, pruned=(), namespaces=None, prune_reason=None):
    """The plan of ``objects`` (declared, normalised, in dependency order) against ``live`` (kind -> {key: live
    object}). ``judge(obj, key, live object)`` returns each object's Entry (``by_dry_run``); ``pruned``: the keys the
    run deletes (each with ``prune_reason``); ``namespaces``: the namespaces that exist, when the run creates those
    its LocalQueues lack (None: it creates none)."""
    entries = [judge(obj, key, live_object(live, key)) for obj, key in ((o, api.obj_key(o)) for o in objects)]
    entries.extend(entry(key, PRUNED, None, live_object(live, key), reason=prune_reason) for key in pruned)
    missing = () if namespaces is None else sorted(set(
        o['metadata']['namespace'] for o in objects
        if o['kind'] == 'LocalQueue' and o['metadata']['namespace'] not in namespaces))
    return Plan(entries, missing)


def settled(objects, live, converted, manager):
    """The keys of the objects an apply would not change, as their live object's managedFields show
    (managed_fields.unchanged_reason): those need no dry-run. An object declared at another API version
    (``converted``) is never settled so."""
    out = set()
    for obj in objects:
        key = api.obj_key(obj)
        if key not in converted and managed_fields.unchanged_reason(obj, live_object(live, key), manager) is None:
            out.add(key)
    return out


def to_judge(objects, same, hold=False):
    """The objects the API server judges with a dry-run: those not ``same`` (settled); with hold_admission every
    ClusterQueue too, as soon as anything changes (they are all written: held, then released)."""
    judged = [o for o in objects if api.obj_key(o) not in same]
    if judged and hold:
        judged = [o for o in objects if api.obj_key(o) not in same or o['kind'] == 'ClusterQueue']
    return judged


def by_dry_run(dry, same, manager=q.FIELD_MANAGER):
    """kueue_queues' judgement, for ``build``: ``dry`` {key: the server-side dry-run's result, None for a LocalQueue
    judged under a generated name since its namespace does not exist yet}; ``same``: the keys ``settled`` found
    unchanged without a dry-run. The dry-run's result compared with the live object (queues.apply_changes) decides
    the others."""
    def judge(obj, key, current):
        if key in dry and dry[key] is None:
            return entry(key, CREATED, obj, current, reason=REASONS['new namespace'])
        if key in same and key not in dry:
            return entry(key, UNCHANGED, obj, current, reason=REASONS['settled'])
        action = q.apply_changes(dry.get(key), current, manager)
        return entry(key, action, obj, current, dry.get(key))
    return judge
