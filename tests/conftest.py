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
  idles. A file the cache has not timed takes its figure from ``tests/durations.json`` (committed, measured on a
  whole run: a fresh machine, whose cache is empty, or one whose cache a partial local run left, still starts the
  long files first); a file timed in neither (a new file) goes first, as it may be long. The order inside a file
  never changes. Every worker reads the same files before the run and only the controller writes the cache after,
  so all workers collect the same order (xdist requires it).
- **CPU per file.** Each worker adds up, per file, the CPU seconds of its own process tree: itself, what it
  started and reaped (ansible-playbook, module processes, helm) and what still runs (its cluster: kube-apiserver,
  etcd, the Kueue managers, ...). The controller prints them after the run, the files with the most CPU first,
  with the processes that used it (ansible-playbook, with its modules, counted apart: its runs and CPU seconds, from
  tests/integration/ansible.py), and keeps them in ``$KUEUEOPS_CACHE/test-cpu-ansible-<minor>.json``: on a
  CPU-bound machine that is where a shorter CI has to come from (docs/dev/ci-time.md).
- **The module processes' bytecode and the AnsiballZ payloads.** The controller installs tests/zipimport_cache.py in
  the venv and points ``KUEUEOPS_ZIPIMPORT_CACHE`` at ``$KUEUEOPS_RUN_DIR-zipimport``: the module processes of the
  run's ansible-playbook take the code of the AnsiballZ sources from there instead of compiling them each time, and
  the ansible-playbook runs take the payloads ansible-core built in an earlier run of the same sources instead of
  building them again (the same code runs).
- **The module processes' and ansible-playbook's imports.** The controller also installs tests/module_zygote.py in
  the venv; each worker (or a serial run) starts two servers of it: one has imported ansible-core's ``basic`` and the
  libraries the modules use, and ``KUEUEOPS_MODULE_ZYGOTE`` points the runs' module processes at it (the module and
  the collection's module_utils still come from the payload); the other has imported ansible-core's controller with
  run_playbook's environment, and ``KUEUEOPS_PLAYBOOK_ZYGOTE`` points run_playbook's ansible-playbook at it (a run
  with another environment, such as ``ANSIBLE_PIPELINING=0``, starts fresh). Each is forked from its server instead
  of importing all that again. ``KUEUEOPS_MODULE_ZYGOTE=`` or ``KUEUEOPS_PLAYBOOK_ZYGOTE=`` turns one off.
"""
from __future__ import annotations

import json
import os
import signal
import threading

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_WORKER = os.environ.get("PYTEST_XDIST_WORKER")


COMMITTED_DURATIONS = os.path.join(REPO, "tests", "durations.json")


def _cache_file(kind: str) -> str:
    """``$KUEUEOPS_CACHE/test-<kind>-ansible-<minor>.json``: one file per ansible-core minor (the compat job on 2.16
    runs a subset, at its own pace)."""
    from ansible.release import __version__

    cache = os.environ.get("KUEUEOPS_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "kueueops")
    return os.path.join(cache, "test-%s-ansible-%s.json" % (kind, ".".join(__version__.split(".")[:2])))


def _durations_file() -> str:
    return _cache_file("durations")


def _run_dir() -> str:
    """$KUEUEOPS_RUN_DIR as an absolute path (``.run`` of the checkout when unset)."""
    return os.path.abspath(os.environ.get("KUEUEOPS_RUN_DIR") or os.path.join(REPO, ".run"))


def _worker_run_dir() -> None:
    """$KUEUEOPS_RUN_DIR of this worker: the run folder of the run, suffixed with the worker's id (once)."""
    if not _WORKER:
        return
    base = _run_dir()
    if not base.endswith("-" + _WORKER):
        os.environ["KUEUEOPS_RUN_DIR"] = "%s-%s" % (base, _WORKER)


ZIPIMPORT_CACHE_MODULE = "_kueueops_zipimport_cache"
ZYGOTE_MODULE = "_kueueops_module_zygote"
ZYGOTE_VARIABLES = {"module": "KUEUEOPS_MODULE_ZYGOTE", "playbook": "KUEUEOPS_PLAYBOOK_ZYGOTE"}
ZIPIMPORT_CACHE_LIMIT = 2000
PAYLOAD_CACHE_LIMIT = 40  # entries of ansiballz/: a key folder and its lock file for each set of sources


def _zipimport_cache() -> None:
    """The module processes' bytecode and payload caches (tests/zipimport_cache.py): install it in this venv's site-packages
    (its file and a ``.pth`` line that imports it at start-up; rewritten only when they differ) and point
    ``KUEUEOPS_ZIPIMPORT_CACHE`` at ``$KUEUEOPS_RUN_DIR-zipimport``, one folder for the run's workers. Runs once in
    the controller, before the workers start (they inherit the variable) and in a serial run; a variable already set
    is kept (``KUEUEOPS_ZIPIMPORT_CACHE=`` turns the cache off)."""
    if _WORKER:
        return
    import sysconfig

    from tests.harness.files import write_if_changed

    site = sysconfig.get_paths()["purelib"]
    for module, source in ((ZIPIMPORT_CACHE_MODULE, "zipimport_cache.py"), (ZYGOTE_MODULE, "module_zygote.py")):
        with open(os.path.join(REPO, "tests", source), "rb") as handle:
            write_if_changed(os.path.join(site, module + ".py"), handle.read(), 0o644)
        write_if_changed(os.path.join(site, module + ".pth"), b"import " + module.encode() + b"\n", 0o644)
    base = _run_dir()
    folder = os.environ.setdefault("KUEUEOPS_ZIPIMPORT_CACHE", base + "-zipimport")
    # A run leaves about 120 entries (2 MB) and one payload folder (ansiballz/<key>, about 5 MB) per set of sources; a
    # checkout's folder that has kept many versions of the sources is emptied (it fills again as the run goes).
    if folder and os.path.isdir(folder):
        import shutil

        payloads = os.path.join(folder, "ansiballz")
        if len(os.listdir(folder)) > ZIPIMPORT_CACHE_LIMIT:
            shutil.rmtree(folder, ignore_errors=True)
        elif os.path.isdir(payloads) and len(os.listdir(payloads)) > PAYLOAD_CACHE_LIMIT:
            shutil.rmtree(payloads, ignore_errors=True)


_zipimport_cache()
_worker_run_dir()

_ZYGOTE: dict = {}


def _start_zygote() -> None:
    """The servers of this worker or serial run (tests/module_zygote.py): one for the module processes, one for the
    ansible-playbook processes of run_playbook (started with its environment, tests/integration/ansible.py), each
    unless its variable is set (``KUEUEOPS_MODULE_ZYGOTE``, ``KUEUEOPS_PLAYBOOK_ZYGOTE``; empty: off). Their names
    are the worker's pid; their errors go to ``$KUEUEOPS_RUN_DIR-zygote.log``. A server that is not there (it failed,
    or ended) only means fresh processes."""
    import subprocess
    import sys

    for kind, variable in ZYGOTE_VARIABLES.items():
        if variable in os.environ:
            continue
        env = None
        if kind == "playbook":
            from tests.integration.ansible import playbook_env
            env = playbook_env()
        name = "kueueops-%s-zygote-%d" % (kind, os.getpid())
        with open(_run_dir() + "-zygote.log", "ab") as log:
            _ZYGOTE[kind] = subprocess.Popen(
                [sys.executable, "-c", "import %s as z; z.serve(%r, %r)" % (ZYGOTE_MODULE, name, kind)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, close_fds=True, cwd=REPO, env=env)
        os.environ[variable] = name


def _stop_zygote() -> None:
    while _ZYGOTE:
        _kind, process = _ZYGOTE.popitem()
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(10)
            except Exception:  # pylint: disable=broad-except
                process.kill()
                process.wait()


def _file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def _read_figures(path: str) -> dict:
    """A JSON object of file -> seconds; {} when missing or unreadable (an order is a hint, never a failure)."""
    try:
        with open(path) as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return {}
    return {k: float(v) for k, v in data.items() if isinstance(v, (int, float))} if isinstance(data, dict) else {}


def _load_durations() -> dict:
    """The committed figures, overridden file by file by this machine's last runs."""
    durations = _read_figures(COMMITTED_DURATIONS)
    durations.update(_read_figures(_durations_file()))
    return durations


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
    """A worker hands its CPU figures to the controller; the controller (or a serial run) merges this run's per-file
    durations and CPU into the cache. A run of whole files updates only the files it ran; a run of some of a file's
    tests (``-k``, ``-m``, ``file::test``) or one stopped early (``-x``, Ctrl-C) updates nothing, since its figures
    are not a file's."""
    _cpu_mark(None)
    if _WORKER:
        workeroutput = getattr(session.config, "workeroutput", None)
        if workeroutput is not None:
            workeroutput["kueueops_cpu"] = json.dumps(_CPU)
        return
    if not _SPENT or not whole_files(session.config, session.shouldstop or exitstatus == 2):
        return
    durations = _read_figures(_durations_file())
    durations.update({path: round(spent, 1) for path, spent in _SPENT.items()})
    _write_figures(_durations_file(), durations)
    if _CPU:
        cpu = _read_figures(_cache_file("cpu"))
        cpu.update({path: round(entry["cpu"], 1) for path, entry in _CPU.items()})
        _write_figures(_cache_file("cpu"), cpu)


def whole_files(config, stopped: bool) -> bool:
    """Whether the run ran every test of each file it ran (no selection inside a file, not stopped early)."""
    option = config.option
    if stopped or getattr(option, "keyword", "") or getattr(option, "markexpr", "") or getattr(option, "maxfail", 0):
        return False
    return not any("::" in str(arg) for arg in config.args)


def _write_figures(path: str, figures: dict) -> None:
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = path + ".%d" % os.getpid()
        with open(tmp, "w") as handle:
            json.dump(dict(sorted(figures.items())), handle, indent=1)
        os.replace(tmp, path)
    except OSError:
        pass


# CPU per file ---------------------------------------------------------------------------------------------------

_CPU: dict = {}  # file -> {"cpu": s, "wall": s, "by": {process name: s}}; a worker's own, then the controller's sum
_MARK: dict = {}  # the file now running, and the snapshot of its start
ROOT_NAME = "pytest + what it reaped"  # the worker itself, and helm, kubectl, harness clusters once they ended
PLAYBOOK_NAME = "ansible-playbook"  # run_playbook's processes with their modules (tests/integration/ansible.py)
PLAYBOOK_ZYGOTE_NAME = "playbook-zygote"  # the worker's playbook server, with the runs it forked (tests/module_zygote.py)


def _by_process(before: dict, after: dict, root: int) -> dict:
    """The CPU the tree used between two snapshots, by process name. A process that ended is taken off its
    parent's share (its seconds before the first snapshot reappear there when it is reaped)."""
    by: dict = {}

    def name(pid):
        return ROOT_NAME if pid == root else after[pid][1]
    for pid, entry in after.items():
        start = before[pid][2] if pid in before and before[pid][1] == entry[1] else 0.0
        _add(by, name(pid), entry[2] - start)
    for pid, entry in before.items():
        if pid not in after or after[pid][1] != entry[1]:
            _add(by, name(entry[0] if entry[0] in after else root), -entry[2])  # root is always in `after`
    return by


def _add(totals: dict, key, value) -> None:
    totals[key] = totals.get(key, 0.0) + value


def _add_file(path: str, cpu: float, wall: float, by: dict, runs: int = 0) -> None:
    """Add one measurement (a worker's window, or a worker's whole figures) to ``_CPU[path]``."""
    entry = _CPU.setdefault(path, {"cpu": 0.0, "wall": 0.0, "by": {}, "runs": 0})
    entry["cpu"] += cpu
    entry["wall"] += wall
    entry["runs"] += runs
    for key, value in by.items():
        _add(entry["by"], key, value)


def _cpu_mark(path) -> None:
    """Close the figures of the file that was running (if any) and start those of `path` (None: the run ends)."""
    if not _MARK.get("measure") or (_MARK.get("file") == path and path is not None):
        return
    import time

    from tests.harness import proc

    root, now, snap = os.getpid(), time.monotonic(), proc.tree(os.getpid())
    playbooks = _playbook_cpu()
    if _MARK.get("file") is not None:
        by = _by_process(_MARK["snap"], snap, root)
        runs, cpu = playbooks[0] - _MARK["playbooks"][0], playbooks[1] - _MARK["playbooks"][1]
        if runs:  # ansible-playbook (and its modules) told apart from the rest of what the worker reaped
            _add(by, PLAYBOOK_NAME, cpu)
            _add(by, ROOT_NAME, -cpu)
        _add_file(_MARK["file"], sum(by.values()), now - _MARK["time"], by, runs)
    _MARK.update(file=path, time=now, snap=snap, playbooks=playbooks)


def _playbook_cpu() -> tuple:
    """(runs, CPU s) of tests/integration/ansible.py's run_playbook so far in this process (0, 0 until imported)."""
    import sys

    module = sys.modules.get("tests.integration.ansible")
    figures = getattr(module, "PLAYBOOK_CPU", None) or {}
    return figures.get("runs", 0), figures.get("cpu", 0.0)


def _terminated(_signum, _frame):
    raise KeyboardInterrupt("SIGTERM")


def pytest_configure(config):
    """Measured where the tests run: a worker, or a serial run (not an xdist controller, which only hears of them).

    SIGTERM ends a run as Ctrl-C does (KeyboardInterrupt: the run reports what ran, then its teardown starts; an xdist
    worker's may be cut short when its controller ends, so hack/test.sh stops the clusters its run folders still hold
    afterwards): hack/test.sh stops a job's process group with it, and a CI timeout sends it. (A job hack/test.sh starts
    in the background cannot be sent SIGINT: a non-interactive shell starts its background commands with SIGINT
    ignored, and Python then never installs its own handler.)"""
    _MARK["measure"] = os.path.isdir("/proc") and bool(_WORKER or not getattr(config.option, "numprocesses", None))
    # The Go programs the tests start (helm and kubectl, directly and through ansible-playbook's modules) collect
    # garbage as the control plane's do (tests/harness/cluster.py, GOGC): measured side by side on a local cluster, helm
    # upgrade --install of the Kueue chart 2.6 -> 2.2 CPU s, its uninstall --wait 1.55 -> 1.3, list 0.15 -> 0.12
    # (docs/dev/ci-time.md). What they do is the same. A GOGC set in the environment wins; runs outside the tests
    # (make demo, bench/) keep Go's default.
    from tests.harness.cluster import GOGC

    os.environ.setdefault("GOGC", GOGC)
    if _WORKER or not getattr(config.option, "numprocesses", None):
        _start_zygote()
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminated)


def pytest_unconfigure(config):
    """The module processes' server ends with its worker (it would within seconds anyway: tests/module_zygote.py)."""
    _stop_zygote()


def pytest_runtest_logstart(nodeid, location):
    """A new file closes the previous one's CPU."""
    _cpu_mark(_file_of(nodeid))


def pytest_testnodedown(node, error):
    """The controller adds up what each worker measured."""
    try:
        figures = json.loads(getattr(node, "workeroutput", {}).get("kueueops_cpu") or "{}")
    except ValueError:
        return
    for path, theirs in figures.items():
        _add_file(path, theirs["cpu"], theirs["wall"], theirs["by"], theirs.get("runs", 0))


def pytest_terminal_summary(terminalreporter):
    """The files that used the most CPU (with their cluster), and the processes that used it."""
    if _WORKER or not _CPU:
        return
    rows = sorted(_CPU.items(), key=lambda item: -item[1]["cpu"])
    total = sum(entry["cpu"] for _path, entry in rows)
    terminalreporter.write_sep("=", "CPU per file: %.0f CPU s in all (tests/conftest.py)" % total)
    for path, entry in rows[:40]:
        top = sorted(entry["by"].items(), key=lambda item: -item[1])[:4]
        terminalreporter.write_line("%7.1f CPU s %7.1f s  %s  (%s; %d ansible-playbook runs)" % (
            entry["cpu"], entry["wall"], path, ", ".join("%s %.0f" % (k, v) for k, v in top if v >= 0.5),
            entry.get("runs", 0)))
    by: dict = {}
    for _path, entry in rows:
        for key, value in entry["by"].items():
            _add(by, key, value)
    runs = sum(entry.get("runs", 0) for _path, entry in rows)
    spent = by.get(PLAYBOOK_NAME, 0.0) + by.get(PLAYBOOK_ZYGOTE_NAME, 0.0)
    terminalreporter.write_line("by process: " + ", ".join(
        "%s %.0f" % (k, v) for k, v in sorted(by.items(), key=lambda item: -item[1]) if v >= 1))
    if runs:
        terminalreporter.write_line("ansible-playbook: %d runs, %.0f CPU s (%.1f CPU s a run: %s and %s, with the modules"
                                    " that ran fresh; those forked by the worker's module server count as module-zygote)"
                                    % (runs, spent, spent / runs, PLAYBOOK_NAME, PLAYBOOK_ZYGOTE_NAME))
