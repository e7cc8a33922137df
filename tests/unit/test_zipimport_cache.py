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


# The AnsiballZ payload cache of the same file: a collection of one module whose module_utils gives a number, and an
# ansible-playbook run of it with this venv's ansible-core, the cache on or off.
PROBE_MODULE = """#!/usr/bin/python
from ansible.module_utils.basic import AnsibleModule
from ansible_collections.demo.probe.plugins.module_utils.value import VALUE


def main():
    AnsibleModule(argument_spec={}).exit_json(changed=False, value=VALUE)


if __name__ == '__main__':
    main()
"""
PROBE_PLAY = """- hosts: localhost
  gather_facts: false
  tasks:
    - demo.probe.probe:
      register: probe
    - ansible.builtin.debug:
        msg: "value={{ probe.value }}"
"""


def _probe_collection(root, value):
    utils = root / "ansible_collections" / "demo" / "probe" / "plugins" / "module_utils"
    modules = utils.parent / "modules"
    for folder in (utils, modules):
        folder.mkdir(parents=True, exist_ok=True)
    (utils / "value.py").write_text("VALUE = %d\n" % value)
    (modules / "probe.py").write_text(PROBE_MODULE)
    (root / "play.yml").write_text(PROBE_PLAY)


def _play(root, cache):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(root), ANSIBLE_LOCAL_TEMP=str(root / "tmp"),
               ANSIBLE_NOCOLOR="1", ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    env.pop("KUEUEOPS_ZIPIMPORT_CACHE", None)
    if cache is not None:
        env["KUEUEOPS_ZIPIMPORT_CACHE"] = str(cache)
    playbook = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    out = subprocess.run([playbook, "-i", "localhost,", "-c", "local", "-e", "ansible_python_interpreter=" + sys.executable,
                          str(root / "play.yml")], env=env,
                         check=True, capture_output=True, text=True, cwd=str(root)).stdout
    return int(out.split("value=", 1)[1].split('"', 1)[0])


def _entries(cache):
    """The payload entries of the cache, by its key folders: {key: [entry file, ...]}."""
    base = cache / "ansiballz"
    if not base.is_dir():
        return {}
    return {key.name: sorted(p.name for p in (key / "ansiballz_cache").iterdir() if "probe" in p.name
                             and not p.name.endswith(".lock")) for key in base.iterdir() if key.is_dir()}


def _rewrite_value(entry, value):
    """Replace module_utils/value.py inside a cached payload: a pickled entry (ansible-core 2.19+) or the base64 zip
    itself (2.16)."""
    import base64
    import io
    import pickle

    raw = entry.read_bytes()
    try:
        cached = pickle.loads(raw)  # noqa: S301 - the test's own cache entry
    except Exception:  # noqa: BLE001 - not a pickle: 2.16's base64 zip
        cached = None
    data = base64.b64decode(cached.zip_data if cached is not None else raw)
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w") as target:
        for item in source.infolist():
            body = source.read(item.filename)
            if item.filename.endswith("module_utils/value.py"):
                body = b"VALUE = %d\n" % value
            target.writestr(item, body)
    encoded = base64.b64encode(out.getvalue())
    if cached is not None:
        import dataclasses

        entry.write_bytes(pickle.dumps(dataclasses.replace(cached, zip_data=encoded)))
    else:
        entry.write_bytes(encoded)


def test_a_second_run_takes_the_payload_from_the_cache_and_a_changed_source_builds_anew(tmp_path):
    cache = tmp_path / "cache"
    _probe_collection(tmp_path, 1)
    assert _play(tmp_path, cache) == 1
    entries = _entries(cache)
    assert len(entries) == 1 and len(next(iter(entries.values()))) == 1
    key, (name,) = next(iter(entries.items()))
    # Another run of the same sources takes the cached payload as it is: a payload changed in the cache runs (so
    # ansible-core did not build it again).
    _rewrite_value(cache / "ansiballz" / key / "ansiballz_cache" / name, 7)
    assert _play(tmp_path, cache) == 7
    # A changed module_utils file is another key: built again from the sources.
    _probe_collection(tmp_path, 2)
    assert _play(tmp_path, cache) == 2
    assert len(_entries(cache)) == 2


def test_without_the_variable_no_payload_is_kept(tmp_path):
    _probe_collection(tmp_path, 3)
    assert _play(tmp_path, None) == 3
    assert not (tmp_path / "cache").exists()
