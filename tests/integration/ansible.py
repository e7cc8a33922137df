"""Run real ansible-playbook against the local cluster, and read its results.

The JSON stdout callback gives per-task results and the play recap (stats), so
tests assert on what Ansible itself reported: `changed`, `failed`, messages.
"""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import threading

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENV_BIN = os.path.dirname(sys.executable)
# The collections folder of the venv running the tests: .venv/collections, or .venv-compat/collections
# when hack/compat.sh runs them with ansible-core 2.16; both link this checkout as kueueops.aks.
COLLECTIONS = os.path.join(os.path.dirname(VENV_BIN), "collections")
if not os.path.isdir(os.path.join(COLLECTIONS, "ansible_collections", "kueueops", "aks")):
    COLLECTIONS = os.path.join(REPO, ".venv", "collections")


# What run_playbook's ansible-playbook processes (with their module processes) used in this process: runs and CPU
# seconds, read per file by tests/conftest.py ("CPU per file"). Runs that overlap (threads) are measured as one span
# (RUSAGE_CHILDREN is the whole process's), so any other child reaped during a run counts too (rare: helm, kubectl).
PLAYBOOK_CPU = {"runs": 0, "cpu": 0.0}
_SPAN = {"running": 0, "start": 0.0}
_SPAN_LOCK = threading.Lock()


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _playbook_started() -> None:
    with _SPAN_LOCK:
        if not _SPAN["running"]:
            _SPAN["start"] = _children_cpu()
        _SPAN["running"] += 1
        PLAYBOOK_CPU["runs"] += 1


def _playbook_ended() -> None:
    with _SPAN_LOCK:
        _SPAN["running"] -= 1
        if not _SPAN["running"]:
            PLAYBOOK_CPU["cpu"] += _children_cpu() - _SPAN["start"]


def module_docs(*modules: str) -> dict:
    """{module: documentation} as ansible-doc shows it (the doc fragments merged in), for kueueops.aks modules."""
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, ANSIBLE_NOCOLOR="1")
    out = subprocess.run([os.path.join(VENV_BIN, "ansible-doc"), "-j", "-t", "module"]
                         + ["kueueops.aks." + m for m in modules], env=env, check=True, capture_output=True, text=True)
    return dict((name.split(".")[-1], entry["doc"]) for name, entry in json.loads(out.stdout).items())


class Result:
    def __init__(self, rc: int, data: dict, stdout: str, stderr: str):
        self.rc, self.data, self.stdout, self.stderr = rc, data, stdout, stderr

    @property
    def stats(self) -> dict:
        return self.data.get("stats", {})

    def host_stats(self, host: str = "local") -> dict:
        return self.stats.get(host, {})

    @property
    def changed(self) -> int:
        return sum(s.get("changed", 0) for s in self.stats.values())

    @property
    def failed(self) -> int:
        return sum(s.get("failures", 0) + s.get("unreachable", 0) for s in self.stats.values())

    def tasks(self, host: str = "local"):
        for play in self.data.get("plays", []):
            for task in play.get("tasks", []):
                res = task.get("hosts", {}).get(host)
                if res is not None:
                    yield task["task"]["name"], res

    def result(self, name_fragment: str, host: str = "local") -> dict:
        """The result of the last task whose name contains `name_fragment`."""
        found = [res for name, res in self.tasks(host) if name_fragment in name]
        if not found:
            raise AssertionError("no task matching %r; tasks: %s" % (
                name_fragment, [n for n, _ in self.tasks(host)]))
        return found[-1]

    def failure_messages(self, host: str = "local") -> list[str]:
        return [res.get("msg", "") for _name, res in self.tasks(host) if res.get("failed")]

    def __repr__(self):
        return "<ansible rc=%d changed=%d failed=%d %s>" % (self.rc, self.changed, self.failed,
                                                            self.failure_messages()[:3])


def playbook_env(env: dict | None = None) -> dict:
    """The environment of run_playbook's ansible-playbook: this process's, the settings below, then ``env``.
    tests/conftest.py starts the worker's playbook server (tests/module_zygote.py) with it (no ``env``): a run whose
    environment differs in a variable ansible-core's configuration reads starts fresh."""
    full_env = dict(os.environ)
    full_env.update({
        "ANSIBLE_STDOUT_CALLBACK": "test_json",
        "ANSIBLE_CALLBACK_PLUGINS": os.path.join(REPO, "tests", "integration", "callback_plugins"),
        "ANSIBLE_COLLECTIONS_PATH": COLLECTIONS,
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_RETRY_FILES_ENABLED": "0",
        "ANSIBLE_LOCALHOST_WARNING": "0",
        "ANSIBLE_INVENTORY_UNPARSED_WARNING": "0",
        # Pipelining (the local connection's module fed on stdin, no temporary AnsiballZ file, no chmod): less CPU
        # per run (docs/dev/ci-time.md). The modules run the same either way; tests/reliability/test_secrets.py and
        # the AWX tests run without it, as ansible-core's default does; ANSIBLE_PIPELINING=0 turns it off here.
        "ANSIBLE_PIPELINING": os.environ.get("ANSIBLE_PIPELINING", "1"),
        "PATH": VENV_BIN + os.pathsep + full_env.get("PATH", ""),
    })
    full_env.update(env or {})
    return full_env


def run_playbook(playbook, extravars: dict | None = None, check: bool = False, diff: bool = False,
                 env: dict | None = None, inventory: str | None = None, verbosity: int = 0,
                 extra_args: list | None = None, timeout: int = 900, cwd: str = REPO) -> Result:
    """Run a playbook (a path, or a list of plays written to a temp file), in ``cwd``."""
    tmp = None
    if not isinstance(playbook, str):
        fd, tmp = tempfile.mkstemp(prefix="play-", suffix=".yml", dir=os.path.join(REPO, "tests", "integration"))
        with os.fdopen(fd, "w") as handle:
            yaml.safe_dump(playbook, handle, sort_keys=False)
        playbook = tmp
    inv = inventory or os.path.join(REPO, "playbooks", "inventory", "local.yml")
    argv = [os.path.join(VENV_BIN, "ansible-playbook"), "-i", inv, playbook]
    if extravars:
        argv += ["-e", json.dumps(extravars)]
    if check:
        argv.append("--check")
    if diff:
        argv.append("--diff")
    if verbosity:
        argv.append("-" + "v" * verbosity)
    argv += list(extra_args or [])
    full_env = playbook_env(env)
    _playbook_started()
    try:
        # stdin: no terminal, as in CI and AWX (a playbook that would ask on one, uninstall.yml, answers nothing).
        proc = subprocess.run(argv, capture_output=True, text=True, env=full_env, timeout=timeout, cwd=cwd,
                              stdin=subprocess.DEVNULL)
    finally:
        _playbook_ended()
        if tmp:
            os.unlink(tmp)
    data = {}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith('{"plays"'):
            data = json.loads(line)
            break
    return Result(proc.returncode, data, proc.stdout, proc.stderr)


def aks_host(**hostvars) -> dict:
    """The variables of a local host for the ARM emulator's AKS cluster (kueue_aks_* from $AKS_*), `hostvars` over
    them."""
    host = {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}",
            "kueue_aks_resource_group": "{{ lookup('ansible.builtin.env', 'AKS_RESOURCE_GROUP') }}",
            "kueue_aks_cluster_name": "{{ lookup('ansible.builtin.env', 'AKS_CLUSTER_NAME') }}"}
    host.update(hostvars)
    return host


def aks_inventory(path, **hostvars) -> str:
    """Write an inventory of one local host (aks_host) for the ARM emulator's AKS cluster; returns its path."""
    with open(path, "w") as handle:
        yaml.safe_dump({"kueue_clusters": {"hosts": {"local": aks_host(**hostvars)}}}, handle)
    return str(path)
