"""tests/module_zygote.py: a program handed to the server runs as a fresh ``python`` would run it (its output, exit
status, traceback, environment, working directory, umask, atexit and signals), and a process the server must refuse
runs fresh; this venv's ansible-playbook handed to a playbook server runs as it runs fresh (its results, exit status
and output, its own local temporary folder), and one with another configuration runs fresh. tests/conftest.py
installs the file in this venv (``_kueueops_module_zygote``, started by its ``.pth``)."""
import os
import signal
import socket
import subprocess
import sys
import textwrap

import pytest

from tests.integration.kubeutil import wait_for

MODULE = "_kueueops_module_zygote"
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def start_server(name, kind, env=None):
    """A server of this venv (``serve(name, kind)``), once it listens; fails at once should it end before."""
    process = subprocess.Popen([sys.executable, "-c", "import %s as z; z.serve(%r, %r)" % (MODULE, name, kind)],
                               stdin=subprocess.DEVNULL, env=env, cwd=REPO)

    def listening():
        if process.poll() is not None:
            return "ended"
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            probe.connect("\0" + name)
        return "listening"
    state = wait_for("the %s server to listen" % kind, listening, timeout=60, interval=0.1)
    assert state == "listening", "the %s server ended (exit status %s)" % (kind, process.returncode)
    return process


@pytest.fixture(scope="module")
def server():
    """A server of this venv of its own (the worker's, if any, is left alone); its name."""
    name = "kueueops-zygote-test-%d" % os.getpid()
    process = start_server(name, "module")
    yield name
    process.terminate()
    process.wait(10)


def run(program, zygote, env=None, cwd=None, **kwargs):
    """``python`` with ``program`` on standard input, through the server ``zygote`` ('' for none)."""
    full_env = dict(os.environ, KUEUEOPS_MODULE_ZYGOTE=zygote, **(env or {}))
    return subprocess.run([sys.executable], input=textwrap.dedent(program), capture_output=True, text=True,
                          env=full_env, cwd=cwd, timeout=60, **kwargs)


PROGRAM = """
    import atexit, os, sys
    atexit.register(lambda: print("atexit ran"))
    print(sys.argv, os.getcwd(), os.environ.get("ZYGOTE_TEST"), oct(os.umask(0o22)), __name__)
    sys.stderr.write("to stderr\\n")
    {end}
"""


@pytest.mark.parametrize("end,status", [
    ("pass", 0),
    ("sys.exit(3)", 3),
    ("sys.exit('a message')", 1),
    ("raise ValueError('boom')", 1),
    ("sys.stdout.write('unflushed'); os._exit(4)", 4),
])
def test_a_program_runs_as_a_fresh_python_runs_it(server, tmp_path, end, status):
    program = PROGRAM.format(end=end)
    fresh = run(program, "", env={"ZYGOTE_TEST": "x"}, cwd=tmp_path)
    forked = run(program, server, env={"ZYGOTE_TEST": "x"}, cwd=tmp_path)
    assert fresh.returncode == status
    assert (forked.returncode, forked.stdout) == (fresh.returncode, fresh.stdout)
    # the traceback names the same lines of <stdin>
    assert forked.stderr == fresh.stderr


def test_the_end_of_the_program_is_pythons_own(server, tmp_path):
    """Threads are joined, and an unclosed file is flushed when the interpreter finalizes the program's objects."""
    program = """
        import threading, time
        handle = open(%r, "w")
        handle.write("written, never closed")
        threading.Thread(target=lambda: (time.sleep(0.3), print("thread done"))).start()
    """
    for name, zygote in (("fresh", ""), ("forked", server)):
        path = tmp_path / name
        result = run(program % str(path), zygote)
        assert (result.returncode, result.stdout, result.stderr) == (0, "thread done\n", "")
        assert path.read_text() == "written, never closed"


def test_the_program_runs_in_a_child_of_the_server_and_a_refused_one_runs_fresh(server, tmp_path):
    program = "import os; print(os.getppid(), os.getpid())"
    forked = run(program, server)
    with open("/proc/%s/comm" % forked.stdout.split()[0]) as handle:
        assert handle.read().strip() == "module-zygote"
    # UNIXCONFDIR is read when ansible-core's basic is imported (its distro module): another value is refused
    refused = run(program, server, env={"UNIXCONFDIR": "/elsewhere"})
    with open("/proc/%s/comm" % refused.stdout.split()[0]) as handle:
        assert handle.read().strip() != "module-zygote"
    # nor one with another bytecode cache (tests/zipimport_cache.py reads its folder at start-up)
    elsewhere = run(program, server, env={"KUEUEOPS_ZIPIMPORT_CACHE": str(tmp_path / "elsewhere")})
    with open("/proc/%s/comm" % elsewhere.stdout.split()[0]) as handle:
        assert handle.read().strip() != "module-zygote"
    # without the variable: never handed over
    fresh = run(program, "")
    assert fresh.stdout.split()[0] != forked.stdout.split()[0]


def sleeping_child(server, tmp_path):
    """A process handed to ``server`` whose program sleeps: (the process, the pid of the child that runs it)."""
    marker = tmp_path / "pid"
    program = """
        import os, time
        open(%r, "w").write(str(os.getpid()))
        time.sleep(60)
    """ % str(marker)
    process = subprocess.Popen([sys.executable], stdin=subprocess.PIPE, text=True,
                               env=dict(os.environ, KUEUEOPS_MODULE_ZYGOTE=server))
    process.stdin.write(textwrap.dedent(program))
    process.stdin.close()
    child = int(wait_for("the child's pid", marker.read_text, timeout=30, interval=0.05))
    assert child != process.pid
    return process, child


def wait_gone(pid, message):
    def gone():
        try:
            with open("/proc/%d/stat" % pid) as handle:
                return handle.read().rsplit(")", 1)[1].split()[0] == "Z"  # ended, not yet reaped by the server
        except OSError:  # gone between two reads (ENOENT, or ESRCH from the folder of a process being reaped)
            return True
    wait_for(message, gone, timeout=10, interval=0.05)


def test_a_signal_to_the_process_reaches_the_child(server, tmp_path):
    process, child = sleeping_child(server, tmp_path)
    process.send_signal(signal.SIGTERM)
    assert process.wait(30) == -signal.SIGTERM
    wait_gone(child, "the child outlived the process that handed itself over")


def test_the_child_dies_with_the_process_that_handed_itself_over(server, tmp_path):
    process, child = sleeping_child(server, tmp_path)
    process.kill()
    process.wait(30)
    wait_gone(child, "the child outlived a SIGKILL of the process that handed itself over")


# The playbook server (kind 'playbook'): this venv's ansible-playbook, handed over --------------------------------

PLAYBOOK = """
- hosts: local
  gather_facts: false
  tasks:
    - name: who runs the run
      ansible.builtin.debug:
        msg: "{{ lookup('ansible.builtin.pipe', 'cat /proc/$PPID/comm') }}"
    - name: its interpreter
      ansible.builtin.debug:
        msg: "{{ ansible_playbook_python }}"
    - name: its local temporary folders
      ansible.builtin.command: ls {{ local_tmp }}
      changed_when: false
    - name: the end the test asks for
      ansible.builtin.fail:
        msg: asked to fail
      when: fail | default(false) | bool
"""


@pytest.fixture(scope="module")
def playbook_server(tmp_path_factory):
    """A playbook server of this venv with run_playbook's environment and an ANSIBLE_HOME of its own, whose tmp folder
    holds the local temporary folders (ansible-core's default, a template of the constants: {{ ANSIBLE_HOME ~ "/tmp" }});
    (its name, that ANSIBLE_HOME)."""
    from tests.integration.ansible import playbook_env

    home = str(tmp_path_factory.mktemp("ansible-home"))
    name = "kueueops-playbook-zygote-test-%d" % os.getpid()
    process = start_server(name, "playbook", playbook_env({"ANSIBLE_HOME": home, "KUEUEOPS_PLAYBOOK_ZYGOTE": ""}))
    yield name, home
    process.terminate()
    process.wait(10)


def run_ansible_playbook(playbook_server, path, zygote, env=None, cwd=REPO, fail=False):
    """run_playbook with the server's environment, through ``zygote`` ('' for none)."""
    from tests.integration.ansible import run_playbook

    _name, home = playbook_server
    return run_playbook(str(path), extravars={"local_tmp": os.path.join(home, "tmp"), "fail": fail}, cwd=cwd,
                        env=dict({"ANSIBLE_HOME": home, "KUEUEOPS_PLAYBOOK_ZYGOTE": zygote}, **(env or {})), timeout=120)


@pytest.mark.parametrize("fail", [False, True])
def test_ansible_playbook_runs_in_a_child_of_the_playbook_server_as_it_runs_fresh(playbook_server, tmp_path, fail):
    path = tmp_path / "play.yml"
    path.write_text(PLAYBOOK)
    fresh = run_ansible_playbook(playbook_server, path, "", fail=fail)
    forked = run_ansible_playbook(playbook_server, path, playbook_server[0], fail=fail)
    again = run_ansible_playbook(playbook_server, path, playbook_server[0], fail=fail)
    assert fresh.rc == (2 if fail else 0)
    for run in (forked, again):
        assert (run.rc, run.host_stats(), run.stderr) == (fresh.rc, fresh.host_stats(), fresh.stderr)
        assert run.result("the end the test asks for").get("msg") == fresh.result("the end the test asks for").get("msg")
        # the interpreter's path as the script's first line gives it (the server's is another name of it)
        assert run.result("its interpreter")["msg"] == fresh.result("its interpreter")["msg"]
    # the worker processes of the run: forked from the controller, from the server (whose name they keep)
    assert fresh.result("who runs the run")["msg"] == "ansible-playbook"[:15]  # TASK_COMM_LEN
    assert forked.result("who runs the run")["msg"] == again.result("who runs the run")["msg"] == "playbook-zygote"
    # each run its own local temporary folder (named after its pid, as a fresh run's), removed at its end
    folders = [run.result("its local temporary folders")["stdout_lines"] for run in (fresh, forked, again)]
    assert all(len(names) == 1 and names[0].startswith("ansible-local-") for names in folders), folders
    assert len(set(names[0] for names in folders)) == 3
    assert os.listdir(os.path.join(playbook_server[1], "tmp")) == []


def test_another_playbook_environment_or_folder_runs_fresh(playbook_server, tmp_path):
    path = tmp_path / "play.yml"
    path.write_text(PLAYBOOK)
    # ANSIBLE_PIPELINING is read when ansible-core's configuration is (ansible.constants): another value is refused
    other_setting = run_ansible_playbook(playbook_server, path, playbook_server[0], env={"ANSIBLE_PIPELINING": "0"})
    # the configuration file is looked for in the working directory
    other_folder = run_ansible_playbook(playbook_server, path, playbook_server[0], cwd=str(tmp_path))
    for run in (other_setting, other_folder):
        assert run.rc == 0, run.stderr
        assert run.result("who runs the run")["msg"] == "ansible-playbook"[:15]  # TASK_COMM_LEN
    assert os.listdir(os.path.join(playbook_server[1], "tmp")) == []
