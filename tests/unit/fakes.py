"""The one stand-in for ``kueue_cluster.Cluster`` in the unit tests (issue 42, item 5): pure logic, nothing is sent.

``FakeCluster`` answers the calls the collection makes on a Cluster (``get``, ``pages``, ``list``, ``items``,
``served``, ``served_kinds``, ``deployment``, ``extension_running``, ``create``, ``apply``, ``replace``, ``patch``,
``delete``, ``watch``) from canned answers, JSON in and JSON out as the real one (every answer is a copy, as a
response is), and records each call. The real requests, paging and watches are tested against the ApiClient in
test_kueue_cluster.py and against the local control plane in tests/integration.

- ``objects``: {object path: object} for ``get`` (and ``deployment``, ``extension_running``). A path that is not
  there is a 404: ``get`` gives None. An exception as the value is raised, by a write to that path too.
- ``collections``: {collection path: answer} for ``pages``, ``list`` and ``items``; a path that is not there is a 404
  (raised). An answer is
  - a list of items: cut in pages of the call's ``limit`` (or of ``page_size``, the smaller), each page's metadata
    with ``continue`` and ``remainingItemCount`` while items remain, and ``resourceVersion`` when one is set;
  - ``Pages((items, metadata), ...)``: the pages exactly as given;
  - an exception: raised;
  - ``Answers(answer, ...)``: one answer per LIST, in order (a LIST past the last fails the test).
- ``labelSelector`` is applied as the API server applies it (``k=v``, ``k==v``, ``k!=v``, ``k``, ``!k``, joined by
  commas; a set-based term fails the test); every other query parameter (``fieldSelector``, ...) is recorded, not
  applied: an answer is what the API server gives for the query the test expects, which it asserts from ``calls``.
- ``served``: {group version: {resource name: kind}} for ``served`` and ``served_kinds`` (absent: not served).
- ``watches``: the answer of every ``watch``: a list of events, a ``Stream``, an exception (raised when the stream is
  read), or ``Answers(...)`` of those, one per watch (none given: a watch fails the test).
- Writes are recorded in ``writes`` as ``(method, path, body)`` and answered with a copy of the body; nothing is
  stored. ``writable=False``: a write fails the test.
- ``error``: raised by every call (an API server that is away).
- ``whole_lists=False``: ``list`` and ``items`` fail the test (the code under test must read page by page).

What was asked: ``calls``, ``(method, path, query)`` in order (``watch`` adds ``resourceVersion`` and
``timeoutSeconds`` to its query; ``served`` and ``served_kinds`` give the group version as the path), ``paths()``,
``pages_read`` (the path of each page handed out, as the real one sends a request per page), ``streams`` (each
watch's ``Stream``, ``closed`` once the caller closed it) and ``events_read``.
"""
import copy

from ansible_collections.kueueops.aks.plugins.module_utils.kube import kueue_cluster
from ansible_collections.kueueops.aks.plugins.module_utils.kube.kube_import import ApiException


class Answers(list):
    """Successive answers: one per call, in order."""

    def __init__(self, *answers):
        list.__init__(self, answers)


class Pages(list):
    """A LIST answered as these pages, each ``(items, metadata)``, exactly as given."""

    def __init__(self, *pages):
        list.__init__(self, pages)


class Stream:
    """The events of one watch, as ``Cluster.watch`` hands them: read once; ``fail`` is raised after the events (a
    watch that breaks); the caller closes it."""

    def __init__(self, events=(), fail=None):
        self.events, self.fail, self.closed, self.read = list(events), fail, False, 0

    def __iter__(self):
        for event in self.events:
            self.read += 1
            yield event
        if self.fail is not None:
            raise self.fail

    def close(self):
        self.closed = True


def selected(obj, selector):
    """Whether ``obj``'s labels match the equality-based label selector ``selector`` (None: every object)."""
    if not selector:
        return True
    labels = ((obj.get('metadata') or {}).get('labels') or {}) if isinstance(obj, dict) else None
    assert labels is not None, 'a labelSelector (%s) selects objects, not %r' % (selector, obj)
    for term in selector.split(','):
        assert not any(w in term for w in (' in ', ' notin ', '(')), 'set-based selector %r: not faked' % term
        if '!=' in term:
            key, value = term.split('!=', 1)
            ok = labels.get(key.strip()) != value.strip()
        elif '=' in term:
            key, value = term.replace('==', '=').split('=', 1)
            ok = labels.get(key.strip()) == value.strip()
        elif term.strip().startswith('!'):
            ok = term.strip()[1:] not in labels
        else:
            ok = term.strip() in labels
        if not ok:
            return False
    return True


def not_found(api_path):
    return ApiException(status=404, reason='Not Found: %s' % api_path)


class FakeCluster(kueue_cluster.Cluster):
    """kueue_cluster.Cluster on canned answers (see the module doc)."""

    host = 'https://127.0.0.1:6443'

    def __init__(self, collections=None, objects=None, served=None, watches=None, page_size=None, resource_version=None,
                 error=None, writable=True, whole_lists=True, api_client=None, timeout=kueue_cluster.REQUEST_TIMEOUT):
        self.objects, self.collections, self.served_by = dict(objects or {}), dict(collections or {}), served or {}
        self.watches, self.page_size, self.resource_version = watches, page_size, resource_version
        self.error, self.writable, self.whole_lists = error, writable, whole_lists
        self.api_client, self.timeout = api_client, timeout
        self.calls, self.writes, self.pages_read, self.streams = [], [], [], []

    # ------------------------------------------------------------------ what was asked
    def paths(self, method=None):
        """The paths of the calls (of ``method`` only, when given), in order."""
        return [p for m, p, _q in self.calls if method in (None, m)]

    @property
    def events_read(self):
        return sum(stream.read for stream in self.streams)

    def _call(self, method, api_path, query):
        self.calls.append((method, api_path, dict(query)))
        if self.error is not None:
            raise self.error

    @staticmethod
    def _next(answer, what):
        if isinstance(answer, Answers):
            assert answer, 'no answer left for %s' % what
            return answer.pop(0)
        return answer

    def request(self, *args, **kwargs):
        raise AssertionError('FakeCluster sends no request: %r' % (args,))

    # ------------------------------------------------------------------ reads
    def get(self, api_path, timeout=None, **query):
        self._call('get', api_path, query)
        found = self.objects.get(api_path)
        if isinstance(found, Exception):
            raise found
        return copy.deepcopy(found)

    def _listing(self, api_path, query):
        """The pages of a LIST of ``api_path``: [(items, metadata)]."""
        if api_path not in self.collections:
            raise not_found(api_path)
        answer = self._next(self.collections[api_path], api_path)
        if isinstance(answer, Exception):
            raise answer
        if isinstance(answer, Pages):
            return [(copy.deepcopy(list(items)), dict(meta)) for items, meta in answer]
        items = [i for i in copy.deepcopy(list(answer)) if selected(i, query.get('labelSelector'))]
        limits = [n for n in (query.get('limit'), self.page_size) if n]
        size = min(limits) if limits else max(len(items), 1)
        out = []
        for start in range(0, max(len(items), 1), size):
            meta = {} if self.resource_version is None else {'resourceVersion': self.resource_version}
            left = len(items) - start - size
            if left > 0:
                meta.update({'continue': str(start + size), 'remainingItemCount': left})
            out.append((items[start:start + size], meta))
        return out

    def pages(self, api_path, timeout=None, **query):
        self._call('pages', api_path, query)
        for items, meta in self._listing(api_path, query):
            self.pages_read.append(api_path)
            yield items, meta

    def _whole(self, method, api_path, query):
        self._call(method, api_path, query)
        assert self.whole_lists, '%s of %s: the code must read it page by page' % (method, api_path)
        listing = self._listing(api_path, query)
        return [item for items, _meta in listing for item in items], listing[-1][1].get('resourceVersion')

    def list(self, api_path, timeout=None, **query):
        return self._whole('list', api_path, query)

    def items(self, api_path, timeout=None, **query):
        return self._whole('items', api_path, query)[0]

    def served(self, group_version, timeout=None):
        self._call('served', group_version, {})
        found = self.served_by.get(group_version)
        return None if found is None else set(found)

    def served_kinds(self, group_version, timeout=None):
        self._call('served_kinds', group_version, {})
        found = self.served_by.get(group_version)
        return None if found is None else set(kind for name, kind in found.items() if '/' not in name)

    # ------------------------------------------------------------------ writes
    def _write(self, method, api_path, body, query):
        self._call(method, api_path, query)
        assert self.writable, '%s %s: nothing may be written' % (method, api_path)
        found = self.objects.get(api_path)
        if isinstance(found, Exception):
            raise found
        self.writes.append((method, api_path, copy.deepcopy(body)))
        return copy.deepcopy(body)

    def create(self, api_path, body, timeout=None, **query):
        return self._write('create', api_path, body, query)

    def apply(self, api_path, body, field_manager, force=False, dry_run=False, timeout=None, **query):
        query = dict(query, fieldManager=field_manager, force=force or None, dryRun='All' if dry_run else None)
        return self._write('apply', api_path, body, dict((k, v) for k, v in query.items() if v is not None))

    def replace(self, api_path, body, timeout=None, **query):
        return self._write('replace', api_path, body, query)

    def patch(self, api_path, body, timeout=None, **query):
        return self._write('patch', api_path, body, query)

    def delete(self, api_path, timeout=None, **query):
        self._write('delete', api_path, None, query)
        return api_path in self.objects

    # ------------------------------------------------------------------ watch
    def watch(self, api_path, resource_version, timeout_seconds, **query):
        self._call('watch', api_path, dict(query, resourceVersion=resource_version, timeoutSeconds=timeout_seconds))
        assert self.watches is not None, 'watch of %s: the test gave no watch answer' % api_path
        answer = self._next(self.watches, 'the watch of %s' % api_path)
        if isinstance(answer, Exception):
            answer = Stream(fail=answer)
        elif not isinstance(answer, Stream):
            answer = Stream(copy.deepcopy(list(answer)))
        self.streams.append(answer)
        return answer
