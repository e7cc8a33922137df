# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/module_utils/kube/wait.py: the loops' logic on a fake clock and a scripted cluster (the
waits themselves run on the real API server in the integration tests and the fault drills)."""

import pytest

from ansible_collections.kueueops.aks.plugins.module_utils.kube import wait
from ansible_collections.kueueops.aks.plugins.module_utils.kube.kube_import import ApiException
from tests.unit.fakes import Answers, FakeCluster, Pages, Stream


class Clock:
    """A monotonic clock that moves only when someone pauses."""

    def __init__(self):
        self.now = 1000.0
        self.pauses = []

    def __call__(self):
        return self.now

    def pause(self, seconds):
        self.pauses.append(seconds)
        self.now += seconds


def test_deadline_is_monotonic_and_never_negative():
    clock = Clock()
    deadline = wait.Deadline(10, clock=clock)
    assert deadline.remaining() == 10 and not deadline.expired()
    clock.now += 4
    assert deadline.remaining() == 6
    clock.now += 7
    assert deadline.remaining() == 0.0 and deadline.expired()
    assert wait.Deadline(0, clock=clock).expired()
    assert wait.Deadline(None, clock=clock).remaining() == 0.0
    # The real one reads time.monotonic, not the wall clock.
    assert wait.Deadline(5).end - wait.time.monotonic() <= 5


def test_poll_until_done_timed_out_and_raising():
    clock = Clock()
    values = iter([3, 2, 1, 0])
    value, done = wait.poll_until(lambda: next(values), lambda v: v == 0, wait.Deadline(60, clock=clock), 2,
                                  pause=clock.pause)
    assert (value, done) == (0, True) and clock.pauses == [2, 2, 2]

    clock = Clock()
    reads = []
    value, done = wait.poll_until(lambda: reads.append(clock.now) or 'pending', lambda v: False,
                                  wait.Deadline(5, clock=clock), 2, pause=clock.pause)
    # Read at 0, 2, 4 and at the deadline (5); the last pause is what was left.
    assert (value, done) == ('pending', False) and clock.pauses == [2, 2, 1] and len(reads) == 4

    # A zero deadline reads once.
    clock = Clock()
    assert wait.poll_until(lambda: 'x', lambda v: False, wait.Deadline(0, clock=clock), 1,
                           pause=clock.pause) == ('x', False) and clock.pauses == []

    def failing():
        raise RuntimeError('the operation failed')
    with pytest.raises(RuntimeError):
        wait.poll_until(failing, lambda v: True, wait.Deadline(5, clock=clock), 1, pause=clock.pause)


def scripted(collection, lists, watches):
    """LIST answers of ``collection`` in order, each ``(items, resourceVersion)`` or an exception, and the watches'
    streams in order."""
    return FakeCluster(collections={collection: Answers(*[
        a if isinstance(a, Exception) else Pages((a[0], {'resourceVersion': a[1]})) for a in lists])},
        watches=Answers(*watches))


def _gone(name):
    return lambda items: [i for i in items if i == name]


def test_watch_until_ends_on_the_event_that_clears_what_is_pending():
    clock = Clock()
    cluster = scripted('/api/v1/namespaces', [(['ns'], '7')],
                       [Stream([{'type': 'MODIFIED'}, {'type': 'DELETED'}, {'type': 'ADDED'}])])
    seen = []

    def changed(event):
        seen.append(event['type'])
        return event['type'] != 'DELETED'
    assert not wait.watch_until(cluster, '/api/v1/namespaces', wait.Deadline(30, clock=clock), _gone('ns'), changed,
                                wait.WatchRules(round_seconds=10, pause=clock.pause), fieldSelector='metadata.name=ns')
    assert seen == ['MODIFIED', 'DELETED']
    assert cluster.calls == [('list', '/api/v1/namespaces', {'fieldSelector': 'metadata.name=ns'}),
                             ('watch', '/api/v1/namespaces', {'fieldSelector': 'metadata.name=ns',
                                                              'resourceVersion': '7', 'timeoutSeconds': 10})]
    assert cluster.streams[0].closed


def test_watch_until_lists_again_after_an_expired_or_ended_watch():
    clock = Clock()
    gone = ApiException(status=410, reason='Expired')
    cluster = scripted('/c', [(['a'], '1'), (['a'], '5'), ([], '9')],
                       [Stream([], fail=gone), Stream([{'type': 'MODIFIED'}])])
    assert wait.watch_until(cluster, '/c', wait.Deadline(30, clock=clock), _gone('a'), lambda e: True,
                            wait.WatchRules(pause=clock.pause)) == []
    assert [c[0] for c in cluster.calls] == ['list', 'watch', 'list', 'watch', 'list']
    assert clock.pauses == []  # a 410 lists again at once
    assert all(e.closed for e in cluster.streams)


def test_watch_until_raises_a_broken_watch_unless_told_to_relist():
    clock = Clock()
    forbidden = ApiException(status=403, reason='Forbidden')
    cluster = scripted('/c', [(['a'], '1')], [Stream([], fail=forbidden)])
    with pytest.raises(ApiException):
        wait.watch_until(cluster, '/c', wait.Deadline(30, clock=clock), _gone('a'), lambda e: True, wait.WatchRules(pause=clock.pause))
    assert cluster.streams[0].closed

    dropped = ConnectionResetError('reset by peer')
    cluster = scripted('/c', [(['a'], '1'), (['a'], '2'), ([], '3')],
                       [Stream([], fail=forbidden), Stream([], fail=dropped)])
    assert wait.watch_until(cluster, '/c', wait.Deadline(30, clock=clock), _gone('a'), lambda e: True,
                            wait.WatchRules(errors='relist', pause=clock.pause)) == []
    assert clock.pauses == [1.0, 1.0]

    # The LIST raises what is really wrong, whatever errors says.
    cluster = scripted('/c', [ConnectionRefusedError('down')], [])
    with pytest.raises(ConnectionRefusedError):
        wait.watch_until(cluster, '/c', wait.Deadline(30, clock=clock), _gone('a'), lambda e: True, wait.WatchRules(errors='relist'))


def test_watch_until_returns_what_is_pending_at_the_deadline():
    clock = Clock()

    class Slow(Stream):
        def __iter__(self):
            clock.now += 12  # the watch ran to its end
            return iter([])
    cluster = scripted('/c', [(['a', 'b'], '1'), (['a'], '2')], [Slow([])])
    assert wait.watch_until(cluster, '/c', wait.Deadline(10, clock=clock), lambda items: sorted(items),
                            lambda e: True, wait.WatchRules(pause=clock.pause)) == ['a']
    # The watch asked for no more than what was left of the deadline.
    assert cluster.calls[1] == ('watch', '/c', {'resourceVersion': '1', 'timeoutSeconds': 10})


def paged(collection, lists, watches):
    """LISTs of ``collection`` as pages: each answer of ``lists`` is [(items, resourceVersion), ...]; a paged wait
    never reads the whole list at once (whole_lists=False)."""
    return FakeCluster(collections={collection: Answers(*[
        Pages(*[(items, {'resourceVersion': rv, 'continue': 'more'}) for items, rv in answer]) for answer in lists])},
        watches=Answers(*watches), whole_lists=False)


def test_watch_until_paged_hands_the_list_over_one_page_at_a_time():
    clock = Clock()
    cluster = paged('/c', [[(['a', 'b'], '3'), (['c'], '4')]], [Stream([{'type': 'MODIFIED', 'name': 'c'}])])
    pages, state = [], set()

    def listed(items):
        pages.append(list(items))
        state.update(items)
        return sorted(state - {'a', 'b'})  # c is pending until its event

    def changed(event):
        state.discard(event['name'])
        return sorted(state - {'a', 'b'})
    assert wait.watch_until(cluster, '/c', wait.Deadline(30, clock=clock), listed, changed,
                            wait.WatchRules(pause=clock.pause, paged=True), labelSelector='x') == []
    assert pages == [['a', 'b'], ['c']]
    # The watch starts from the last page's resourceVersion (the list's).
    assert cluster.calls == [('pages', '/c', {'labelSelector': 'x'}),
                             ('watch', '/c', {'labelSelector': 'x', 'resourceVersion': '4', 'timeoutSeconds': 30})]


def test_watch_until_paged_counts_what_is_pending_after_the_last_page():
    clock = Clock()
    # Pending after the first page, nothing after the last: no watch.
    cluster = paged('/c', [[(['x'], '1'), ([], '2')]], [])
    answers = iter([['x'], []])
    assert wait.watch_until(cluster, '/c', wait.Deadline(30, clock=clock), lambda items: next(answers),
                            lambda e: True, wait.WatchRules(paged=True)) == []
    assert [c[0] for c in cluster.calls] == ['pages']
