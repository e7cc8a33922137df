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


if _FOLDER:
    _install(_FOLDER)
