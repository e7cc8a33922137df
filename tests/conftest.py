"""What every test run shares: one local control plane per pytest-xdist worker, and the slowest files first.

`make test` runs pytest with ``-n 2 --dist loadfile`` (pytest-xdist): two workers, each taking whole files, so a
file's module fixtures (one Kueue install for its read-only tests) stay in one process. Most of a test's time is spent
waiting on controllers and on ansible-playbook, so two workers use the two cores that one leaves half idle.

- **One cluster per worker.** A worker (``PYTEST_XDIST_WORKER`` = gw0, gw1, ...) gets its own run folder,
  ``$KUEUEOPS_RUN_DIR-gw0`` and so on: its own etcd, kube-apiserver, registry, ARM emulator and Service range (tests
  install and uninstall Kueue, hold its manager, stop the API server: two files must never share a cluster). The
  ``cluster`` fixture starts it and stops it as it does for a serial run (whoever starts it stops it). Without
  ``-n`` nothing changes: the run folder is ``$KUEUEOPS_RUN_DIR`` (``make cluster-up``'s cluster is reused).
- **Slowest files first.** The durations of the last run, per file, are kept in
  ``$KUEUEOPS_CACHE/test-durations-ansible-<minor>.json`` (``~/.cache/kueueops``, beside the toolchain); under
  xdist, files are collected in that order, slowest first, so no long file starts last while the other worker
  idles. A file never timed (a new file) goes first, as it may be long; with no durations at all (a cold
  cache) pytest's order is kept. The order inside a file never changes. Every worker reads the
  same file before the run and only the controller writes it after, so all workers collect the same order (xdist
  requires it).
"""
from __future__ import annotations

import json
import os

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_WORKER = os.environ.get("PYTEST_XDIST_WORKER")


def _durations_file() -> str:
    """One file per ansible-core minor (the compat job on 2.16 runs a subset, at its own pace)."""
    from ansible.release import __version__

    cache = os.environ.get("KUEUEOPS_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "kueueops")
    return os.path.join(cache, "test-durations-ansible-%s.json" % ".".join(__version__.split(".")[:2]))


def _worker_run_dir() -> None:
    """$KUEUEOPS_RUN_DIR of this worker: the run folder of the run, suffixed with the worker's id (once)."""
    if not _WORKER:
        return
    base = os.path.abspath(os.environ.get("KUEUEOPS_RUN_DIR") or os.path.join(REPO, ".run"))
    if not base.endswith("-" + _WORKER):
        os.environ["KUEUEOPS_RUN_DIR"] = "%s-%s" % (base, _WORKER)


_worker_run_dir()


def _file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def _load_durations() -> dict:
    try:
        with open(_durations_file()) as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return {}
    return {k: float(v) for k, v in data.items() if isinstance(v, (int, float))} if isinstance(data, dict) else {}


def pytest_collection_modifyitems(session, config, items):
    """Under xdist, files slowest first (by the last run's durations), untimed files before them; a stable sort, so
    the tests inside a file keep their order. A serial run keeps pytest's order."""
    if not _WORKER:
        return
    durations = _load_durations()
    if not durations:
        return
    first_seen = {}
    for item in items:
        first_seen.setdefault(_file_of(item.nodeid), len(first_seen))
    items.sort(key=lambda item: (-durations.get(_file_of(item.nodeid), float("inf")), first_seen[_file_of(item.nodeid)]))


_SPENT: dict = {}


def pytest_runtest_logreport(report):
    """Sum setup, call and teardown per file (on the controller, the workers' reports arrive here too)."""
    if _WORKER:
        return
    path = _file_of(report.nodeid)
    _SPENT[path] = _SPENT.get(path, 0.0) + float(getattr(report, "duration", 0.0) or 0.0)


def pytest_sessionfinish(session, exitstatus):
    """Merge this run's per-file durations into the cache (a partial run updates only the files it ran)."""
    if _WORKER or not _SPENT:
        return
    durations = _load_durations()
    durations.update({path: round(spent, 1) for path, spent in _SPENT.items()})
    path = _durations_file()
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = path + ".%d" % os.getpid()
        with open(tmp, "w") as handle:
            json.dump(dict(sorted(durations.items())), handle, indent=1)
        os.replace(tmp, path)
    except OSError:
        pass
