"""A bytecode cache for the module processes of the test runs (CI time: docs/dev/ci-time.md).

ansible-core ships a module and its module_utils to the module process as sources in a zip (AnsiballZ), imported with
``zipimport``, which compiles every file each time: about a fifth of a playbook run's CPU here, twice per file on
Python 3.11 (``find_spec`` compiles for ``get_filename``, ``exec_module`` again). Python caches the bytecode of files
on disk in ``__pycache__``; this does the same for the sources zipimport compiles, in the test runs only:

- tests/conftest.py installs this file as ``_kueueops_zipimport_cache`` in the site-packages of the venv that runs
  the tests (with a ``.pth`` line that imports it at interpreter start-up) and sets ``KUEUEOPS_ZIPIMPORT_CACHE`` to
  a folder of the run; the ansible-playbook runs the tests start pass it to their module processes.
- Without that variable (a user's run, ``make demo``, bench/) the import does nothing: the module processes compile as
  ansible-core's do everywhere else.
- With it, ``zipimport._compile_source`` (the one place zipimport turns source into code, Python 3.11 to 3.13) first
  looks for the code of those exact source bytes (keyed on their SHA-256 and Python's bytecode magic number) in the
  folder, and compiles and stores it otherwise. The cached code object gets the file name the module process asked for
  (its own temporary payload path), so tracebacks and warnings read as without the cache. The same bytes compile to the
  same code, so what runs is what ansible-core would run: only the compiling is skipped.

The same folder keeps the ansible-playbook runs' AnsiballZ payloads. ansible-core builds a module's payload (its
zip of the module and the module_utils it imports, found by parsing each of them with ``ast``) once per run, in the
run's own temporary folder (``ansiballz_cache`` under ``DEFAULT_LOCAL_TMP``), so every run of the suite built the
same payloads again: about 0.15-0.2 CPU s a module a run. With the variable set, ``module_common`` (patched when it
is imported, in the controller) looks for its cached payload under ``ansiballz/<key>`` of the folder instead, the
key a digest of the ansible-core and Python versions and of the path, size and modification time of every file a
payload can take (ansible-core's module_utils, the module itself, and every ``plugins/module_utils`` and
``plugins/modules`` of the collections found): a changed file, another checkout or another release builds its own.
A module that is not ansible-core's or a collection's keeps the run's folder. ansible-core writes and locks the
entries as in its own cache; what it builds and ships is unchanged.
"""

import os

_FOLDER = os.environ.get('KUEUEOPS_ZIPIMPORT_CACHE')


def _install(folder):
    import hashlib
    import marshal
    import zipimport
    from importlib.util import MAGIC_NUMBER

    compile_source = zipimport._compile_source  # pylint: disable=protected-access
    tag = MAGIC_NUMBER.hex()
    seen = {}

    def renamed(code, filename):
        consts = tuple(renamed(const, filename) if isinstance(const, type(code)) else const for const in code.co_consts)
        return code.replace(co_filename=filename, co_consts=consts)

    def cached_compile_source(pathname, source):
        key = hashlib.sha256(source).hexdigest()
        code = seen.get(key)
        if code is None:
            path = os.path.join(folder, '%s-%s.bin' % (tag, key))
            try:
                with open(path, 'rb') as handle:
                    code = marshal.loads(handle.read())
            except (OSError, EOFError, ValueError, TypeError):
                code = compile_source(pathname, source)
                # As tests/harness/files.write_if_changed does; this file runs from site-packages, without tests/.
                tmp = '%s.%d.tmp' % (path, os.getpid())
                try:
                    with open(tmp, 'wb') as handle:
                        handle.write(marshal.dumps(code))
                    os.replace(tmp, path)
                except OSError:
                    pass
            seen[key] = code
        return code if code.co_filename == pathname else renamed(code, pathname)

    os.makedirs(folder, exist_ok=True)
    zipimport._compile_source = cached_compile_source  # pylint: disable=protected-access


def _payload_sources(module_common):
    """The digest that names this ansible-core's, Python's and sources' payloads, and the folders whose modules it
    covers (module doc): ansible-core's own modules (its version is in the digest) and each collection's."""
    import hashlib
    import sys

    from ansible.release import __version__

    package = os.path.dirname(os.path.dirname(os.path.abspath(module_common.__file__)))
    walked = [os.path.join(package, 'module_utils')]
    for base in module_common.C.COLLECTIONS_PATHS or []:
        base = os.path.join(base, 'ansible_collections')
        for namespace in sorted(os.listdir(base)) if os.path.isdir(base) else []:
            for name in sorted(os.listdir(os.path.join(base, namespace))):
                walked += [os.path.join(base, namespace, name, 'plugins', kind) for kind in ('module_utils', 'modules')]
    digest = hashlib.sha256(('%s\0%s\0' % (__version__, sys.version)).encode())
    for root in walked:
        for folder, dirs, files in os.walk(os.path.realpath(root)):
            dirs.sort()
            for name in sorted(files):
                path = os.path.join(folder, name)
                stat = os.stat(path)
                digest.update(('%s\0%d\0%d\0' % (path, stat.st_size, stat.st_mtime_ns)).encode())
    covered = [os.path.join(package, 'modules')] + [root for root in walked if root.endswith('modules')]
    return digest.hexdigest()[:32], tuple(os.path.realpath(root) + os.sep for root in covered)


def _patch_module_common(module_common, folder):
    """Point ``_find_module_utils``'s lookup of cached payloads (``C.DEFAULT_LOCAL_TMP``) at ``folder``/ansiballz/<key>
    for the modules the key covers (module doc). The key is taken when ``module_common`` is imported, and again by
    ``module_common.REFRESH_PAYLOAD_KEY()``: tests/module_zygote.py's playbook server imported it long before the run
    its child makes, which calls that first (the sources are read when the run starts, as in a fresh run)."""
    import fcntl

    real_constants = module_common.C
    real_find = module_common._find_module_utils  # pylint: disable=protected-access

    class Constants:
        """ansible.constants, but for DEFAULT_LOCAL_TMP."""

        def __init__(self, local_tmp):
            self.DEFAULT_LOCAL_TMP = local_tmp  # pylint: disable=invalid-name

        def __getattr__(self, name):
            return getattr(real_constants, name)

    current = {}

    def refresh():
        current.clear()
        try:
            key, covered = _payload_sources(module_common)
        except OSError:
            return  # a collection folder unreadable: ansible-core's own per-run cache, as without the variable
        constants = Constants(os.path.join(folder, 'ansiballz', key))
        lock_path = constants.DEFAULT_LOCAL_TMP + '.lock'
        os.makedirs(os.path.dirname(lock_path), exist_ok=True)
        current.update(constants=constants, covered=covered, lock_path=lock_path)

    def find_module_utils(*args, **kwargs):
        module_path = kwargs.get('module_path', args[2] if len(args) > 2 else '')
        if not current or not os.path.realpath(module_path or '').startswith(current['covered']):
            return real_find(*args, **kwargs)
        # ansible-core locks the building of an entry between the workers of one run only before 2.19 (and all
        # of them write it through the same '-part' file): one build at a time across the runs sharing the folder.
        with open(current['lock_path'], 'a') as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            module_common.C = current['constants']
            try:
                return real_find(*args, **kwargs)
            finally:
                module_common.C = real_constants

    refresh()
    module_common._find_module_utils = find_module_utils  # pylint: disable=protected-access
    module_common.REFRESH_PAYLOAD_KEY = refresh


class _PatchOnImport:
    """A meta path finder: ``ansible.executor.module_common`` is imported as always, then patched."""

    name = 'ansible.executor.module_common'

    def __init__(self, folder):
        self.folder = folder

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.name:
            return None
        import importlib.machinery
        import sys

        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module
        folder = self.folder

        def patched_exec_module(module):
            exec_module(module)
            _patch_module_common(module, folder)

        spec.loader.exec_module = patched_exec_module
        return spec


if _FOLDER:
    _install(_FOLDER)
    __import__('sys').meta_path.insert(0, _PatchOnImport(_FOLDER))
