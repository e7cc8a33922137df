"""Module processes forked from a warm interpreter, in the test runs only (CI time: docs/dev/ci-time.md).

Every task of an ansible-playbook run that runs a module starts a Python process that imports, before the module does
anything, ansible-core's ``basic`` and the libraries the collection's module_utils use (urllib3, requests, its
OAuth helpers, yaml, dateutil; pydantic on kubernetes 37; the Azure SDK for kueue_extension): 0.15 to 0.5 CPU s of
each process, a fifth of the suite's CPU. A test worker starts, beside its cluster, one server (``serve``) that has
imported those libraries once; a module process of that worker's runs hands itself to it and the server forks a
child that runs the module (the way Mitogen runs Ansible's modules, and Android its apps):

- tests/conftest.py installs this file as ``_kueueops_module_zygote`` in the site-packages of the venv that runs the
  tests, with a ``.pth`` line that imports it at interpreter start-up, and starts the worker's server with
  ``KUEUEOPS_MODULE_ZYGOTE`` set to its socket's name; the ansible-playbook runs pass the variable to their module
  processes.
- At start-up, a process of that venv with the variable set and run as ``python`` alone, its program on standard
  input (how ansible-core starts a module with pipelining, which tests/integration/ansible.py turns on), connects
  to the server and sends its standard input, output and error (the descriptors themselves), its environment,
  working directory, umask and process group. Anything else (a script, ``-c``, ``-m``, no variable, no server)
  starts as Python always does, and so does a module process the server refuses.
- The server refuses a process of another Python (``sys.prefix``, version) or whose environment differs in any
  variable the preloaded libraries read when imported (recorded while importing them) or in one that decides how
  Python starts (``PYTHON*``, ``LANG``, ``LC_*``, and the bytecode cache's ``KUEUEOPS_ZIPIMPORT_CACHE``): such a
  process runs fresh.
- Otherwise it forks. The child takes the descriptors as 0, 1 and 2, the environment (``os.environ``: what the module
  and its helm processes see), working directory, umask and process group, reads the program from standard input
  and runs it as ``__main__`` as ``python`` would: ``sys.argv`` ``['']``, ``SystemExit`` and uncaught exceptions
  give the exit status and the traceback they give, then threads, ``atexit`` and the flush of the standard streams.
  The process that handed itself over waits and exits with the child's status (or dies of its signal); it passes
  SIGTERM, SIGINT, SIGHUP and SIGQUIT on to the child, and the child is killed if it dies first.

The same file serves ``ansible-playbook`` itself (``serve(name, 'playbook')``, the variable
``KUEUEOPS_PLAYBOOK_ZYGOTE``): a process of this venv started as its ``ansible-playbook`` script hands itself over to a
server that has imported ansible-core's controller (``ansible.cli.playbook``, the executor, ``PLAYBOOK_PRELOAD``:
0.3 to 0.45 CPU s of each run). Importing it reads ansible-core's configuration (``ansible.constants``: every
``ANSIBLE_*`` setting of the environment and the configuration file found from the working directory and ``HOME``), so
the server refuses a process whose environment differs in any variable read then or whose working directory is not the
server's, and serves nothing when reading the configuration warned (ansible-core 2.16 prints those warnings when
importing it: a child would not). Its child runs the script as ``python`` would (``sys.argv`` the script and its
arguments, ``sys.executable`` the process's own) after doing again what a fresh ``ansible-playbook`` does for its own
process when imported: the check of blocking standard streams, the locale, its local temporary folder
(``DEFAULT_LOCAL_TMP``, named after the process and removed at its exit; the server removes the one its import made)
and tests/zipimport_cache.py's key of the cached payloads.

What is not preloaded runs as in a fresh process: the module, the collection's module_utils and ansible-core's own
module_utils other than ``basic`` and what it imports come from the AnsiballZ payload, as ansible-core ships them;
``kubernetes`` is imported by the child (its kubeconfig location is read from the environment when imported, and
tests/integration's lazy import of kubernetes < 37 is the path users run). ansible-core's ``basic`` comes from the
installed ansible-core, the same release as the payload's (a module process of these venvs can already reach it:
the payload's ``ansible`` package extends its path to the installed one). The children share the server's hash
seed (``random`` is reseeded at fork); the tests that check the output of ``-vvv`` and the AWX runs do without
pipelining, so without this.

``KUEUEOPS_MODULE_ZYGOTE=`` (empty) turns it off; bench/ and users' runs never set it.
"""

import os
import sys

_VARIABLE = 'KUEUEOPS_MODULE_ZYGOTE'
_PLAYBOOK_VARIABLE = 'KUEUEOPS_PLAYBOOK_ZYGOTE'
# Imported once by the server, each in its own try: a library this venv lacks is skipped.
PRELOAD = (
    'ansible.module_utils.basic', 'json', 'yaml', 'urllib3', 'requests', 'requests_oauthlib', 'oauthlib.oauth2',
    'dateutil.parser', 'six', 'certifi', 'pydantic', 'concurrent.futures', 'ipaddress', 'tempfile', 'shutil',
    'subprocess', 'hashlib', 'base64', 'ssl', 'http.client', 'email.utils', 'azure.core.rest', 'azure.core.exceptions',
    'azure.core.pipeline', 'azure.identity', 'azure.mgmt.containerservice', 'azure.mgmt.kubernetesconfiguration',
)
# The playbook server's (kind 'playbook'): the controller, and what every run imports after it (the executor, its
# worker processes and the task includes).
PLAYBOOK_PRELOAD = (
    'ansible.cli.playbook', 'ansible.executor.playbook_executor', 'ansible.executor.task_executor',
    'ansible.executor.process.worker', 'ansible.playbook.included_file', 'ansible.playbook.role_include',
    'ansible.playbook.handler_task_include', 'multiprocessing.synchronize', 'pty', 'pprint',
)
# Variables a preload reads whose value does not change what it set up: azure-identity builds its user agent with
# platform.platform(), which runs uname, found on PATH (the tests' runs put their venv first on it).
IGNORED_READS = ('PATH',)
FORWARDED = ('SIGTERM', 'SIGINT', 'SIGHUP', 'SIGQUIT')
_HEADER = 8  # one kind byte and an int32, network order: b'P' the child's pid, b'S' its wait status, b'R' refused


def _startup_env(env):
    """The variables that decide how Python starts (and so what the server's interpreter already is), with the
    bytecode cache's folder, which tests/zipimport_cache.py reads at start-up."""
    return {k: v for k, v in env.items()
            if k.startswith(('PYTHON', 'LC_')) or k in ('LANG', 'KUEUEOPS_ZIPIMPORT_CACHE')}


def _message(kind, value=0):
    import struct
    return struct.pack('!ci3x', kind, value)


def _read_message(conn):
    import struct
    data = b''
    while len(data) < _HEADER:
        chunk = conn.recv(_HEADER - len(data))
        if not chunk:
            return None, None
        data += chunk
    kind, value = struct.unpack('!ci3x', data)
    return kind, value


# The module process's side ---------------------------------------------------------------------------------------

def _hand_off(name):
    """Run this process's program in a child of the server ``name``; returns only if the server is not there or
    refuses (the process then starts as always)."""
    import array
    import json
    import signal
    import socket

    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect('\0' + name)
    except OSError:
        conn.close()
        return
    umask = os.umask(0)
    os.umask(umask)
    payload = json.dumps({'prefix': sys.prefix, 'version': sys.version, 'executable': sys.executable,
                          'env': dict(os.environ), 'cwd': os.getcwd(),
                          'umask': umask, 'pgid': os.getpgid(0), 'orig_argv': list(sys.orig_argv)}).encode()
    data = len(payload).to_bytes(4, 'big') + payload
    try:
        sent = conn.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array('i', [0, 1, 2]))])
        conn.sendall(data[sent:])
        kind, child = _read_message(conn)
    except OSError:
        kind = None
    if kind != b'P':  # refused, or the server went away before forking: nothing ran, start as always
        conn.close()
        return

    def forward(signum, _frame):
        try:
            os.kill(child, signum)
        except OSError:
            pass
    for signame in FORWARDED:
        signal.signal(getattr(signal, signame), forward)
    try:
        kind, status = _read_message(conn)
    except OSError:
        kind = None
    if kind != b'S':  # the server died with the child running: wait for the child as its parent would have
        while os.path.exists('/proc/%d' % child):
            import time
            time.sleep(0.1)
        sys.stderr.write('module zygote %s: lost the server; child %d ended with an unknown status\n' % (name, child))
        os._exit(1)
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


def _kind_of(argv):
    """'module' for ``python`` alone (its program on standard input), 'playbook' for this venv's ``ansible-playbook``
    script (``python <venv>/bin/ansible-playbook ...``, as its first line starts it), None for anything else."""
    if len(argv) == 1:
        return 'module'
    if len(argv) >= 2 and os.path.basename(argv[1]) == 'ansible-playbook' \
            and os.path.dirname(os.path.abspath(argv[1])) == os.path.dirname(os.path.abspath(sys.executable)):
        return 'playbook'
    return None


def _playbook_server_ready():
    """After the playbook preload: False when reading ansible-core's configuration warned (2.16 prints the warnings
    while importing it, which a child would not). The local temporary folder the import made for this process is
    removed, and its removal at exit forgotten: each child makes its own (``_playbook_child_setup``)."""
    import atexit
    import shutil
    try:
        from ansible import constants
        from ansible.utils.path import cleanup_tmp_file
    except Exception:  # pylint: disable=broad-except
        return False
    atexit.unregister(cleanup_tmp_file)
    shutil.rmtree(constants.DEFAULT_LOCAL_TMP, ignore_errors=True)
    return not getattr(constants.config, 'WARNINGS', None)


def _playbook_child_setup():
    """What a fresh ``ansible-playbook`` does for its own process when importing ansible-core: the check of blocking
    standard streams and the locale (``ansible.cli``; a SystemExit as there), and its local temporary folder; and
    what tests/zipimport_cache.py does when ansible-core's ``module_common`` is imported: the key of the cached
    payloads, from the sources as they are now."""
    from ansible import cli, constants

    cli.check_blocking_io()
    cli.initialize_locale()
    # as ansible.constants does: its default, {{ ANSIBLE_HOME ~ "/tmp" }}, is a template of the constants
    constants.DEFAULT_LOCAL_TMP = constants.config.get_config_value('DEFAULT_LOCAL_TMP', variables=vars(constants))
    refresh = getattr(sys.modules.get('ansible.executor.module_common'), 'REFRESH_PAYLOAD_KEY', None)
    if refresh is not None:
        refresh()


# The server's side -----------------------------------------------------------------------------------------------

def _preload(modules):
    """Import ``modules``; returns the environment variables read while importing, with their values (None: unset)."""
    import importlib

    real = os.environ
    read = {}

    class Recording(type(real)):
        def __getitem__(self, key):
            read.setdefault(key, real.get(key))
            return super().__getitem__(key)

        def __contains__(self, key):
            read.setdefault(key, real.get(key))
            return super().__contains__(key)

        def __iter__(self):
            read.setdefault('*', None)
            return super().__iter__()

    os.environ = Recording(real._data, real.encodekey, real.decodekey, real.encodevalue,  # pylint: disable=protected-access
                           real.decodevalue)
    try:
        for name in modules:
            try:
                importlib.import_module(name)
            except Exception:  # pylint: disable=broad-except
                pass
    finally:
        os.environ = real
    for key in IGNORED_READS:
        read.pop(key, None)
    return read


def _refusal(request, read, kind):
    """Why the process of ``request`` cannot run here (None: it can)."""
    if request.get('prefix') != sys.prefix or request.get('version') != sys.version:
        return 'another Python'
    if _kind_of(request.get('orig_argv') or []) != kind:
        return 'not a %s process' % kind
    if kind == 'playbook' and request.get('cwd') != os.getcwd():
        return 'another working directory (the configuration file is looked for there)'
    env = request.get('env') or {}
    if '*' in read:
        return read['*'] or 'a preload read the whole environment'
    if _startup_env(env) != _startup_env(os.environ):
        return 'another start-up environment'
    for key, value in read.items():
        if env.get(key) != value:
            return 'another %s' % key
    return None


def _receive(conn):
    """The request and the three descriptors a module process sent."""
    import array
    import json
    import socket

    fds = array.array('i')
    data, ancdata, _flags, _addr = conn.recvmsg(65536, socket.CMSG_SPACE(3 * fds.itemsize))
    for level, kind, cdata in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(cdata[:len(cdata) - (len(cdata) % fds.itemsize)])
    size = int.from_bytes(data[:4], 'big') if len(data) >= 4 else -1
    while 0 <= size and len(data) < size + 4:
        chunk = conn.recv(size + 4 - len(data))
        if not chunk:
            break
        data += chunk
    try:
        request = json.loads(data[4:]) if len(fds) == 3 and len(data) == size + 4 else None
    except ValueError:
        request = None
    if not isinstance(request, dict):
        for fd in fds:
            os.close(fd)
        return None, None
    return request, list(fds)


def _run_child(request, fds, conn, kind):
    """In the forked child: become the process of ``request`` and run its program (a module's on standard input, or
    the ``ansible-playbook`` script); raises the SystemExit that ends this process as the program's end would end
    ``python``."""
    import builtins
    import importlib.machinery
    import signal
    import threading
    import types

    for target, fd in enumerate(fds):
        if fd != target:
            os.dup2(fd, target)
    for fd in fds:
        if fd > 2:
            os.close(fd)
    env = request['env']
    for key in [key for key in os.environ if key not in env]:
        del os.environ[key]
    for key, value in env.items():
        if os.environ.get(key) != value:
            os.environ[key] = value
    os.chdir(request['cwd'])
    os.umask(request['umask'])
    try:
        os.setpgid(0, request['pgid'])
    except OSError:
        pass
    sys.orig_argv = request['orig_argv']
    # the interpreter's path as the process was started (.venv/bin/python3 by ansible-playbook's first line, the
    # server's .venv/bin/python): ansible-core's ansible_playbook_python
    sys.executable = request.get('executable') or sys.executable
    if kind == 'module':
        sys.argv = ['']
    else:  # the script and its arguments; python puts the script's folder first on the path (the server's, -c: '')
        sys.argv = sys.orig_argv[1:]
        sys.path[0] = os.path.dirname(os.path.realpath(sys.argv[0]))

    def watch():  # the process that handed itself over died first: so does this one, as a killed module would
        try:
            while conn.recv(64):
                pass
        except OSError:
            pass
        os.kill(os.getpid(), signal.SIGKILL)
    threading.Thread(target=watch, name='module-zygote-watch', daemon=True).start()

    main = types.ModuleType('__main__')
    main.__dict__.update(__builtins__=builtins, __loader__=importlib.machinery.BuiltinImporter, __spec__=None)
    sys.modules['__main__'] = main
    status = 0
    try:
        if kind == 'module':
            exec(compile(sys.stdin.buffer.read(), '<stdin>', 'exec'), main.__dict__)  # pylint: disable=exec-used
        else:
            _playbook_child_setup()
            with open(sys.argv[0], 'rb') as script:
                code = compile(script.read(), sys.argv[0], 'exec')
            main.__dict__['__file__'] = sys.argv[0]
            exec(code, main.__dict__)  # pylint: disable=exec-used
    except SystemExit as exc:
        status = _exit_status(exc)
    except KeyboardInterrupt:  # Python prints it, flushes and ends by SIGINT
        _excepthook()
        _flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    except BaseException:  # pylint: disable=broad-except
        _excepthook()
        status = 1
    # The end of a Python program: the interpreter's own (threads joined, atexit, the standard streams flushed, 120
    # if that fails, the modules' objects finalized, so an unclosed file is flushed as in a fresh process).
    raise SystemExit(status)


def _excepthook():
    """The traceback Python prints for an exception that ends its program: from the program's frames (not this
    file's)."""
    kind, value, traceback = sys.exc_info()
    traceback = traceback.tb_next if traceback is not None else None
    sys.excepthook(kind, value.with_traceback(traceback), traceback)


def _exit_status(exc):
    """The exit status Python gives a SystemExit that ends its program."""
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xff
    try:
        sys.stderr.write('%s\n' % (code,))
    except Exception:  # pylint: disable=broad-except
        pass
    return 1


def _flush():
    """Flush the standard streams as Python does at exit."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # pylint: disable=broad-except
            pass


def serve(name, kind='module'):
    """The server of ``name`` (an abstract socket) for the module processes (``kind`` 'module') or the
    ``ansible-playbook`` processes ('playbook') of this venv: preload, then fork a child for each process that hands
    itself over, and send it the child's pid and wait status. Ends when its parent (the test worker) does, or on
    SIGTERM."""
    import ctypes
    import gc
    import selectors
    import signal
    import socket

    try:  # the name ps, top and tests/conftest.py's CPU per file show for this process and its children
        ctypes.CDLL(None).prctl(15, kind.encode() + b'-zygote', 0, 0, 0)  # PR_SET_NAME
    except (OSError, AttributeError):
        pass
    parent = os.getppid()
    os.setpgid(0, 0)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind('\0' + name)
    except OSError:
        return  # another server has the name
    read = _preload(PLAYBOOK_PRELOAD if kind == 'playbook' else PRELOAD)
    if kind == 'playbook' and not _playbook_server_ready():
        read['*'] = 'reading ansible-core\'s configuration warned'  # every process is refused: it starts fresh
    gc.collect()
    gc.freeze()  # the preloaded objects are left out of the children's collections: their pages stay shared
    listener.listen(64)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    os.set_blocking(wake_r, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    running = {}  # child pid -> the connection of the process that handed itself over
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, 'accept')
    selector.register(wake_r, selectors.EVENT_READ, 'child')
    while os.getppid() == parent:
        for key, _events in selector.select(timeout=5):
            if key.data == 'child':
                try:
                    os.read(wake_r, 4096)
                except BlockingIOError:
                    pass
            else:
                _accept(read, kind, running, (listener, selector, wake_r, wake_w))
        _reap(running)
    for conn in running.values():
        conn.close()


def _accept(read, kind, running, server_fds):
    """Take one connection on the listener (``server_fds[0]``): refuse it, or fork the child that runs its program."""
    import socket
    import struct

    listener, selector, wake_r, wake_w = server_fds
    conn, _addr = listener.accept()
    fds = []
    try:
        uid = struct.unpack('3i', conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize('3i')))[1]
        conn.settimeout(10)  # a module process sends its request at once; nothing else may hold the server
        request, fds = _receive(conn) if uid == os.getuid() else (None, None)
        conn.settimeout(None)
        refusal = 'no request (another user, or nothing sent)' if request is None else _refusal(request, read, kind)
        if refusal:  # in the server's log ($KUEUEOPS_RUN_DIR-zygote.log): why a process ran fresh
            sys.stderr.write('%s zygote: refused a %s process: %s\n' % (kind, kind, refusal))
            sys.stderr.flush()
        pid = -1 if refusal else os.fork()
    except OSError:
        pid = -1
    if pid == -1:  # refused (or failed): the process starts as always, with its descriptors
        for fd in fds or ():
            os.close(fd)
        try:
            conn.sendall(_message(b'R'))
        except OSError:
            pass
        conn.close()
        return
    if pid == 0:  # the child leaves the server's loop only by the SystemExit that ends its program
        import signal
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        selector.close()
        listener.close()
        os.close(wake_r)
        os.close(wake_w)
        for other in running.values():
            other.close()
        _run_child(request, fds, conn, kind)
    for fd in fds:
        os.close(fd)
    running[pid] = conn
    try:
        conn.sendall(_message(b'P', pid))
    except OSError:
        pass


def _reap(running):
    while running:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = running.pop(pid, None)
        if conn is not None:
            try:
                conn.sendall(_message(b'S', status))
            except OSError:
                pass
            conn.close()


_KIND = _kind_of(getattr(sys, 'orig_argv', ()))
_NAME = os.environ.get(_VARIABLE if _KIND == 'module' else _PLAYBOOK_VARIABLE) if _KIND else None
if _NAME and (_KIND == 'playbook' or not os.isatty(0)):
    _hand_off(_NAME)
