# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The one waiter of the collection (issue 14, item 3): every wait of a module (objects gone, queues Active, the
manager ready, a smoke-test Job admitted, an Azure extension settled, a namespace or CRDs deleted) is a ``Deadline``
and one of two loops.

* ``Deadline(seconds)``: on ``time.monotonic``, so a clock step (NTP, a VM resumed) neither ends a wait early nor
  stretches it; ``remaining()`` is what is left, never negative.
* ``poll_until(read, done, deadline, period)``: read, until ``done(value)`` or the deadline; between reads it pauses
  ``period`` (or what is left), with ``time.sleep`` or a ``pause`` of the caller's (a watch that returns at the
  first change, for instance).
* ``watch_until(cluster, collection, deadline, listed, changed)``: a LIST, then a WATCH from its resourceVersion
  until nothing is pending; a watch that ends (its own timeout, 410 Gone when the version expired, a dropped
  stream) is followed by a new LIST, which is the truth. ``paged=True`` hands the LIST to ``listed`` one page at
  a time, for a caller that keeps only a little of each item (a large collection is then never whole in memory).

Both return what was still pending when they stopped, so each caller reports it (which objects, which state) in
its own message: "<what> still <state> after <N>s: <which>". Importable without Ansible.
"""

import collections
import time

from ansible_collections.kueueops.aks.plugins.module_utils.kube.kube_import import ApiException


class Deadline:
    """``seconds`` from now on the monotonic clock (``clock`` for tests)."""

    def __init__(self, seconds, clock=time.monotonic):
        self.seconds = seconds
        self._clock = clock
        self.end = clock() + max(0.0, float(seconds or 0))

    def remaining(self):
        """Seconds left, 0.0 once passed."""
        return max(0.0, self.end - self._clock())

    def expired(self):
        return self._clock() >= self.end

    def __repr__(self):
        return '<Deadline %ss, %.1fs left>' % (self.seconds, self.remaining())


def poll_until(read, done, deadline, period, pause=time.sleep):
    """Call ``read()`` until ``done(value)`` is true or ``deadline`` passes (``read`` runs at least once).

    Returns ``(value, True)`` when done, ``(last value, False)`` when the time ran out. What ``read`` raises
    (a failed operation, an unreachable API server) ends the wait at once.
    """
    while True:
        value = read()
        if done(value):
            return value, True
        if deadline.expired():
            return value, False
        pause(min(period, deadline.remaining()))


class WatchRules(collections.namedtuple('WatchRules', 'round_seconds errors paged pause')):
    """How ``watch_until`` watches: a watch lasts at most ``round_seconds``; ``errors='relist'`` lists again after a
    failed watch instead of raising; ``paged`` reads the LIST page by page; ``pause`` waits before that new LIST."""
    __slots__ = ()


WatchRules.__new__.__defaults__ = (60, 'raise', False, time.sleep)
DEFAULT_RULES = WatchRules()


def watch_until(cluster, collection, deadline, listed, changed, rules=DEFAULT_RULES, **query):
    """Wait on ``collection`` (a REST path of kueue_cluster.path) until nothing is pending or ``deadline`` passes.

    ``listed(items)`` gives what is pending after a LIST, ``changed(event)`` after each watch event (a watch is
    at most ``rules.round_seconds``; ``query`` goes to both, e.g. ``fieldSelector``). An empty (false) pending ends the
    wait. A watch whose resourceVersion expired (410) is followed by a new LIST at once; any other failure of the
    watch raises, or with ``rules.errors='relist'`` pauses up to a second and lists again (the LIST raises what is
    really wrong). Returns the last pending.

    With ``rules.paged``, ``listed(items)`` is called once per page of the LIST (``cluster.pages``), in order, and what
    it returns after the last page is what is pending; ``listed`` keeps what it needs of each page itself.
    """
    while True:
        if rules.paged:
            pending, meta = None, {}
            for items, meta in cluster.pages(collection, **query):
                pending = listed(items)
            resource_version = meta.get('resourceVersion')
        else:
            items, resource_version = cluster.list(collection, **query)
            pending = listed(items)
        if not pending or deadline.expired():
            return pending
        events = None
        try:
            events = cluster.watch(collection, resource_version, max(1, min(rules.round_seconds, deadline.remaining())),
                                   **query)
            for event in events:
                pending = changed(event)
                if not pending or deadline.expired():
                    break
        except Exception as exc:  # pylint: disable=broad-except
            # 410 Gone: the version expired, list again at once. Anything else (a dropped stream, a read timeout, a
            # refused watch) raises, or with errors='relist' the next LIST says what is true (or raises what is wrong).
            if not (isinstance(exc, ApiException) and exc.status == 410):
                if rules.errors != 'relist':
                    raise
                rules.pause(min(1.0, deadline.remaining()))
        finally:
            if events is not None:
                events.close()
        if not pending:
            return pending
