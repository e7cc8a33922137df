"""The declared side of a queue configuration (issue 42): the documents of ``resources``, ``src`` and ``secrets``
read and normalised to the versions the cluster serves, and the problems found in them, with every Secret value
masked. kueue_queues (queues/apply.py) and kueue_drift_info (drift/drift.py) take their input this one way; it writes
nothing.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import KueueOpsError, scrub
from ansible_collections.kueueops.aks.plugins.module_utils.kueue import kueue_api as api
from ansible_collections.kueueops.aks.plugins.module_utils.kueue import queues as q


class QueueProblems(Exception):
    """Validation failed: ``problems`` lists every one; nothing was written."""

    def __init__(self, problems, stage):
        super().__init__('%d problem(s)' % len(problems))
        self.problems = problems
        self.stage = stage

    def message(self):
        lines = ['%d problem(s) in the Kueue configuration (%s); nothing was written:' % (
            len(self.problems), self.stage)]
        for idx, problem in enumerate(self.problems, 1):
            lines.append('%d) %s' % (idx, problem))
        return ' '.join(lines)

    def failure_result(self):
        """What a failed module returns besides the message (KueueOpsModule.run)."""
        return {'problems': [p.as_dict() for p in self.problems], 'changed': False}


def configuration_of(obj):
    """What a user configures in a Kueue object: no status, server bookkeeping, finalizers, and
    quantities in canonical form (controllers rewrite ``32`` as ``"32"``)."""
    view = q.comparable(obj)
    (view.get('metadata') or {}).pop('finalizers', None)
    return q.canonical_quantities(view)


def scrub_problems(problems, values):
    """Problems with every Secret value replaced by the one marker (the API server does not echo Secret data, but
    nothing is left to chance)."""
    return [q.Problem(p.obj, p.field, scrub(p.text, values), p.fix and scrub(p.fix, values)) for p in problems] \
        if values else problems


def load_declared(params, masked):
    """The declared documents of ``resources``, ``src`` and ``secrets`` as ``[(origin, document)]``, and the
    problems found so far (a Secret in ``resources``); read before the cluster is contacted. Every Secret value
    joins ``masked`` as soon as it is read. A file or folder that cannot be read raises KueueOpsError naming
    ``src``. kueue_queues and kueue_drift_info take their input this one way."""
    secret_docs = [('secrets[%d]' % idx, doc) for idx, doc in enumerate(params.get('secrets') or [])]
    masked.update(q.secret_values([doc for _origin, doc in secret_docs]))
    try:
        items = q.load_inputs(params.get('resources'), params.get('src'))
    except q.LoadError as exc:
        raise KueueOpsError(exc.text, field=exc.field, fix='give a readable YAML file or folder of Kueue manifests')
    masked.update(q.secret_values([doc for _origin, doc in items]))
    problems = []
    for origin, doc in items:
        if origin.startswith('resources[') and isinstance(doc, dict) and doc.get('kind') == 'Secret':
            problems.append(q.Problem(origin, 'kind', 'give Secrets in the secrets option (no_log) or in a src file, '
                                                      'never in resources, whose values Ansible may log'))
    items = [(o, d) for o, d in items
             if not (o.startswith('resources[') and isinstance(d, dict) and d.get('kind') == 'Secret')] + secret_docs
    return items, problems


def normalise_declared(engine, items, problems, kueue_ns, masked):
    """``(objects, converted)``: the declared documents normalised to the versions the cluster serves
    (``engine.discover()`` ran), in dependency order, and the keys of those declared at another API version."""
    converted = set(api.obj_key(doc) for _origin, doc in items if isinstance(doc, dict)
                    and doc.get('kind') in engine.served
                    and doc.get('apiVersion') != '%s/%s' % (api.GROUP, engine.served[doc['kind']]))
    objects = q.dependency_order(q.normalise_all(items, engine.served, problems, kueue_ns))
    masked.update(q.secret_values(objects))
    return objects, converted
