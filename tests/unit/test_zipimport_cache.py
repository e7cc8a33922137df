"""The module processes' bytecode cache of the test runs (tests/zipimport_cache.py, installed by tests/conftest.py)."""
import os
import subprocess
import sys
import zipfile

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Imports a module from a zip, as AnsiballZ imports a module's payload, and prints what it returns and the file name
# of a nested function's frame in a traceback.
PROBE = """
import sys, traceback
sys.path.insert(0, %(tests)r)
import zipimport_cache
sys.path.insert(0, %(zip)r)
import payload_mod
print(payload_mod.value())
try:
    payload_mod.fail()
except ValueError:
    print(traceback.extract_tb(sys.exc_info()[2])[-1].filename)
"""

SOURCE = "def value():\n    return %d\n\n\ndef fail():\n    def inner():\n        raise ValueError('x')\n    inner()\n"


def _zip(path, number):
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("payload_mod.py", SOURCE % number)
    return str(path)


def _probe(zip_path, cache):
    env = dict(os.environ)
    env.pop("KUEUEOPS_ZIPIMPORT_CACHE", None)
    if cache is not None:
        env["KUEUEOPS_ZIPIMPORT_CACHE"] = str(cache)
    out = subprocess.run([sys.executable, "-c", PROBE % {"tests": TESTS, "zip": zip_path}], env=env, check=True,
                         capture_output=True, text=True).stdout.split()
    return int(out[0]), out[1]


def test_a_second_process_takes_the_code_from_the_cache_under_its_own_file_name(tmp_path):
    cache = tmp_path / "cache"
    first = _zip(tmp_path / "first.zip", 1)
    assert _probe(first, cache) == (1, first + "/payload_mod.py")
    entries = sorted(os.listdir(cache))
    assert len(entries) == 1 and entries[0].endswith(".bin")
    # The entry is keyed on the source bytes: replace it with the code of other source, and a process importing the
    # same source from another zip runs the cached code (so it did not compile), named after its own zip.
    other = compile(SOURCE % 2, "elsewhere.py", "exec")
    import marshal
    with open(cache / entries[0], "wb") as handle:
        handle.write(marshal.dumps(other))
    second = _zip(tmp_path / "second.zip", 1)
    assert _probe(second, cache) == (2, second + "/payload_mod.py")


def test_changed_source_is_compiled_again(tmp_path):
    cache = tmp_path / "cache"
    assert _probe(_zip(tmp_path / "a.zip", 1), cache)[0] == 1
    assert _probe(_zip(tmp_path / "b.zip", 3), cache)[0] == 3
    assert len(os.listdir(cache)) == 2


def test_without_the_variable_nothing_is_cached(tmp_path):
    path = _zip(tmp_path / "a.zip", 1)
    assert _probe(path, None) == (1, path + "/payload_mod.py")
    assert os.listdir(tmp_path) == ["a.zip"]


def test_the_test_venv_loads_it_at_start_up():
    """tests/conftest.py installed it in this venv, so the module processes of ansible-playbook (this venv's python)
    load it, with the folder conftest set (none when a run turns it off with ``KUEUEOPS_ZIPIMPORT_CACHE=``)."""
    out = subprocess.run([sys.executable, "-c", "import sys, _kueueops_zipimport_cache as m; print(m._FOLDER or '')"],
                         check=True, capture_output=True, text=True).stdout.strip()
    assert out == os.environ.get("KUEUEOPS_ZIPIMPORT_CACHE", "")
