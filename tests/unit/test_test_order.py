"""tests/conftest.py: the order files start in (slowest first, the committed figures where the cache has none) and
the CPU per file (a process tree's CPU, by process, across processes that end and are reaped)."""
from __future__ import annotations

import json
import os

import pytest

from tests import conftest
from tests.harness import proc

ROOT = 100


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KUEUEOPS_CACHE", str(tmp_path))
    committed = tmp_path / "committed.json"
    monkeypatch.setattr(conftest, "COMMITTED_DURATIONS", str(committed))
    return tmp_path, committed


def test_committed_figures_fill_what_the_cache_lacks(cache):
    folder, committed = cache
    committed.write_text(json.dumps({"tests/a.py": 300, "tests/b.py": 50, "tests/c.py": 10}))
    with open(conftest._durations_file(), "w") as handle:
        json.dump({"tests/b.py": 400.0}, handle)
    assert conftest._load_durations() == {"tests/a.py": 300.0, "tests/b.py": 400.0, "tests/c.py": 10.0}


def test_no_figures_anywhere_is_an_empty_order(cache):
    assert conftest._load_durations() == {}


def test_unreadable_figures_are_ignored(cache):
    folder, committed = cache
    committed.write_text("not json")
    with open(conftest._durations_file(), "w") as handle:
        handle.write('["a list"]')
    assert conftest._load_durations() == {}


def test_the_committed_figures_name_files_that_exist():
    """tests/durations.json is read by path; a renamed file would silently lose its place."""
    with open(conftest.COMMITTED_DURATIONS) as handle:
        figures = json.load(handle)
    assert figures, "tests/durations.json is empty"
    missing = [path for path in figures if not os.path.isfile(os.path.join(conftest.REPO, path))]
    assert not missing, missing
    assert all(isinstance(v, (int, float)) and v >= 0 for v in figures.values())


def _entry(ppid, name, cpu):
    return (ppid, name, cpu)


def test_cpu_of_live_processes_is_their_growth():
    before = {ROOT: _entry(1, "python", 10.0), 101: _entry(ROOT, "kube-apiserver", 5.0)}
    after = {ROOT: _entry(1, "python", 12.0), 101: _entry(ROOT, "kube-apiserver", 9.0),
             102: _entry(ROOT, "etcd", 1.5)}
    by = conftest._by_process(before, after, ROOT)
    assert by == {conftest.ROOT_NAME: 2.0, "kube-apiserver": 4.0, "etcd": 1.5}


def test_a_reaped_process_is_not_counted_twice():
    """An apiserver killed and restarted by a drill: its seconds before the window reappear in the parent that
    reaped it (cutime), so the parent's share is its in-window growth only, and the new apiserver counts whole."""
    before = {ROOT: _entry(1, "python", 10.0), 101: _entry(ROOT, "kube-apiserver", 50.0)}
    # the old apiserver used 3 s more, then ended: the root's reaped share grew by 53 s, 1 s its own
    after = {ROOT: _entry(1, "python", 10.0 + 53.0 + 1.0), 103: _entry(ROOT, "kube-apiserver", 2.0)}
    by = conftest._by_process(before, after, ROOT)
    assert by == {conftest.ROOT_NAME: 4.0, "kube-apiserver": 2.0}
    assert sum(by.values()) == pytest.approx(sum(e[2] for e in after.values()) - sum(e[2] for e in before.values()))


def test_a_reused_pid_is_a_new_process():
    before = {ROOT: _entry(1, "python", 1.0), 101: _entry(ROOT, "helm", 7.0)}
    after = {ROOT: _entry(1, "python", 9.0), 101: _entry(ROOT, "kueue", 0.5)}
    by = conftest._by_process(before, after, ROOT)
    assert by == {conftest.ROOT_NAME: 1.0, "kueue": 0.5}


def test_the_tree_of_this_process_holds_its_children():
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"])
    try:
        tree = proc.tree(os.getpid())
        assert os.getpid() in tree and child.pid in tree
        assert tree[child.pid][0] == os.getpid()
        assert all(cpu >= 0 for _ppid, _name, cpu in tree.values())
    finally:
        child.kill()
        child.wait()


class _Config:
    def __init__(self, args=("tests/integration",), **option):
        import types

        self.args = list(args)
        self.option = types.SimpleNamespace(**dict({"keyword": "", "markexpr": "", "maxfail": 0}, **option))


def test_only_runs_of_whole_files_update_the_cache():
    assert conftest.whole_files(_Config(), stopped=False)
    assert conftest.whole_files(_Config(args=["tests/unit", "tests/integration/test_site.py"]), stopped=False)
    assert not conftest.whole_files(_Config(), stopped=True)
    assert not conftest.whole_files(_Config(keyword="flavor"), stopped=False)
    assert not conftest.whole_files(_Config(markexpr="slow"), stopped=False)
    assert not conftest.whole_files(_Config(maxfail=1), stopped=False)
    assert not conftest.whole_files(_Config(args=["tests/integration/test_site.py::test_site"]), stopped=False)


def test_ansible_playbook_cpu_is_the_span_of_its_runs(monkeypatch):
    """run_playbook's accounting: every run counted; runs that overlap (threads) measured as one span of the
    process's reaped children, so nothing is counted twice; a real child's CPU is seen."""
    import subprocess
    import sys

    from tests.integration import ansible

    monkeypatch.setattr(ansible, "PLAYBOOK_CPU", {"runs": 0, "cpu": 0.0})
    clock = {"cpu": 10.0}
    monkeypatch.setattr(ansible, "_children_cpu", lambda: clock["cpu"])
    ansible._playbook_started()       # run 1 starts at 10
    clock["cpu"] = 11.0
    ansible._playbook_started()       # run 2 overlaps
    clock["cpu"] = 14.0
    ansible._playbook_ended()         # run 1 (or 2) ends: the span goes on
    assert ansible.PLAYBOOK_CPU == {"runs": 2, "cpu": 0.0}
    clock["cpu"] = 15.5
    ansible._playbook_ended()
    assert ansible.PLAYBOOK_CPU == {"runs": 2, "cpu": 5.5}
    clock["cpu"] = 20.0               # a child reaped between runs is not a run's
    ansible._playbook_started()
    clock["cpu"] = 21.0
    ansible._playbook_ended()
    assert ansible.PLAYBOOK_CPU == {"runs": 3, "cpu": 6.5}

    monkeypatch.undo()
    monkeypatch.setattr(ansible, "PLAYBOOK_CPU", {"runs": 0, "cpu": 0.0})
    ansible._playbook_started()
    subprocess.run([sys.executable, "-c", "sum(i * i for i in range(3_000_000))"], check=True)
    ansible._playbook_ended()
    assert ansible.PLAYBOOK_CPU["runs"] == 1 and ansible.PLAYBOOK_CPU["cpu"] > 0.05
