"""What `ansible-galaxy collection build` ships (issue 13, item 7): every Python file in the tarball imports
only what the tarball holds (or a requirement such as ansible, kubernetes, azure): a shipped test that imports
an excluded helper (tests/reliability importing tests/integration and tests/harness did) cannot run where the
collection is installed. The test builds the tarball exactly as users and hack/sanity.sh do."""
import ast
import os
import subprocess
import sys
import tarfile

import pytest

from tests.unit.python_sources import imports, plugin_sources

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTION = 'ansible_collections.kueueops.aks'
# Top-level names that are folders or files of this repository: an import of one must resolve in the tarball.
LOCAL = {name[:-3] if name.endswith('.py') else name for name in os.listdir(ROOT) if not name.startswith('.')}


# A run folder of a pytest-xdist worker (tests/conftest.py: .run-gw0, .run-gw1, their -fleet clusters) holds etcd
# data, PKI keys and kubeconfigs; one exists beside the checkout whenever another worker builds the tarball.
# Named per process: the compat job runs these tests at the same time as the main run (hack/test.sh).
PROBE = os.path.join(ROOT, '.run-packaging-probe-%d' % os.getpid())
# The plays tests/integration/ansible.py writes for one run sit beside the shipped targets while other tests run.
PLAY_PROBE = os.path.join(ROOT, 'tests', 'integration', 'play-packaging-probe-%d.yml' % os.getpid())
# The copy hack/venv.sh makes of a cached venv beside its destination (.venv-compat.tmp.<pid>) while the sanity job
# builds the tarball (hack/test.sh starts both at once): a build that listed it walked a venv that was then renamed,
# and failed (CI, session 8).
VENV_PROBE = os.path.join(ROOT, '.venv-compat.tmp.%d' % os.getpid())


@pytest.fixture(scope='module')
def shipped(tmp_path_factory):
    out = tmp_path_factory.mktemp('build')
    galaxy = os.path.join(os.path.dirname(sys.executable), 'ansible-galaxy')
    os.makedirs(PROBE, exist_ok=True)
    os.makedirs(VENV_PROBE, exist_ok=True)
    try:
        with open(os.path.join(PROBE, 'admin.kubeconfig'), 'w') as probe:
            probe.write('probe: a run folder must never be shipped\n')
        with open(os.path.join(VENV_PROBE, 'pyvenv.cfg'), 'w') as probe:
            probe.write('probe: a venv being copied must never be shipped\n')
        with open(PLAY_PROBE, 'w') as probe:
            probe.write('[]\n')
        subprocess.run([galaxy, 'collection', 'build', ROOT, '--output-path', str(out)], check=True,
                       capture_output=True)
    finally:
        os.remove(os.path.join(PROBE, 'admin.kubeconfig'))
        os.rmdir(PROBE)
        os.remove(os.path.join(VENV_PROBE, 'pyvenv.cfg'))
        os.rmdir(VENV_PROBE)
        os.remove(PLAY_PROBE)
    (tarball,) = [p for p in os.listdir(out) if p.endswith('.tar.gz')]
    with tarfile.open(str(out / tarball)) as tar:
        members = {m.name: m for m in tar.getmembers() if m.isfile()}
        sources = {name: tar.extractfile(m).read().decode() for name, m in members.items() if name.endswith('.py')}
    return set(members), sources


def _defined(source):
    names = set()
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split('.')[0] for a in node.names)
    return names


def _missing(module, names, relative, files, sources):
    """What of `from module import names` (or `import module`) the shipped files do not hold."""
    if module.startswith(COLLECTION + '.') or module == COLLECTION:
        module = module[len(COLLECTION) + 1:]
    elif not relative and module.split('.')[0] not in LOCAL:
        return []  # a requirement (ansible, kubernetes, azure, yaml) or the standard library
    path = module.replace('.', '/')
    if path + '.py' in files:
        return []  # a module: the names are its attributes
    init = path + '/__init__.py'
    if not any(f.startswith(path + '/') for f in files):
        return [module]  # neither a module nor a package (collection folders are namespace packages)
    if names is None:
        return []
    defined = _defined(sources.get(init, ''))
    return ['%s.%s' % (module, n) for n in names
            if n not in defined and path + '/' + n + '.py' not in files and path + '/' + n + '/__init__.py' not in files]


def test_shipped_python_imports_only_what_is_shipped(shipped):
    files, sources = shipped
    assert 'plugins/module_utils/common/errors.py' in files and 'tests/config.yml' in files
    missing = sorted('%s imports %s' % (name, what) for name, source in sources.items()
                     for module, names, relative in imports(name, source)
                     for what in _missing(module, names, relative, files, sources))
    assert not missing, 'shipped files import what build_ignore leaves out:\n' + '\n'.join(missing)


def test_no_run_folder_or_local_cache_is_shipped(shipped):
    files, _ = shipped
    hidden = sorted(name for name in files if name.split('/')[0].startswith('.'))
    assert not hidden, 'the tarball ships local state (add it to build_ignore in galaxy.yml):\n' + \
        '\n'.join(hidden)
    assert 'tests/conftest.py' not in files
    test_files = sorted(name for name in files if name.startswith('tests/integration/')
                        and not name.startswith('tests/integration/targets/'))
    assert not test_files, 'the tarball ships pytest files or their leftovers:\n' + '\n'.join(test_files)
    # Of tests/, only ansible-test's config and the integration targets ship (not the test helpers nor test data).
    helpers = sorted(name for name in files if name.startswith('tests/') and name != 'tests/config.yml'
                     and not name.startswith('tests/integration/targets/'))
    assert not helpers, 'the tarball ships test helpers or test data (add them to build_ignore):\n' + '\n'.join(helpers)
    assert 'tests/integration/targets/kueue_queues/tasks/main.yml' in files


def test_the_check_sees_an_unshipped_import():
    files = {'plugins/module_utils/common/errors.py', 'tests/__init__.py', 'tests/reliability/__init__.py',
             'tests/reliability/badinput.py', 'tests/integration/__init__.py'}

    def missing(source):
        return [what for module, names, rel in imports('tests/reliability/test_x.py', source)
                for what in _missing(module, names, rel, files, {})]
    assert missing('from tests.integration.ansible import run_playbook\nfrom . import rbac\nimport tests.harness\n') \
        == ['tests.integration.ansible', 'tests.reliability.rbac', 'tests.harness']
    assert missing('from tests.integration import ansible\n') == ['tests.integration.ansible']
    assert missing('from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import KueueOpsError\n'
                   'from ansible_collections.kueueops.aks.plugins.module_utils.common import errors\n'
                   'from .badinput import Case\nfrom . import badinput\nimport yaml\nimport os.path\n') == []


def plugin_import_problems(sources):
    """What is wrong with the imports of ``sources`` ({path under plugins/: source}): a plugin that imports from
    tests/ (test code and test data are not shipped), and a module of plugins/module_utils that nothing else under
    plugins/ imports (test data or dead code shipped in every module's payload: the rules data of issue 42 was)."""
    problems, imported = [], set()
    for name, source in sorted(sources.items()):
        for module, names, _relative in imports(name, source):
            if module.startswith(COLLECTION + '.'):
                module = module[len(COLLECTION) + 1:]
            if module.split('.')[0] == 'tests':
                problems.append('%s imports %s: plugins must not import from tests/' % (name, module))
            found = {module} | {'%s.%s' % (module, n) for n in names or ()}
            imported |= {m for m in found if m.replace('.', '/') + '.py' != name}
    for name in sorted(sources):
        if name.startswith('plugins/module_utils/') and not name.endswith('/__init__.py') and \
                name[:-3].replace('/', '.') not in imported:
            problems.append('%s: nothing under plugins/ imports it (test data belongs under tests/)' % name)
    return problems


def test_plugins_import_nothing_from_tests_and_every_module_util_is_used():
    sources = plugin_sources()
    assert 'plugins/module_utils/kube/server_errors.py' in sources
    assert plugin_import_problems(sources) == []


def test_the_plugin_import_check_sees_a_test_import_and_an_unused_module_util():
    prefix = 'from ansible_collections.kueueops.aks.plugins.module_utils'
    sources = {'plugins/modules/m.py': prefix + ' import used\nfrom tests.unit.data import kueue_rules_data\n',
               'plugins/module_utils/used.py': 'import json\nfrom . import helper\n',
               'plugins/module_utils/helper.py': '',
               'plugins/module_utils/kueue_rules_data.py': 'RULES = {}\n',
               'plugins/module_utils/self_only.py': prefix + '.self_only import x\n',
               'plugins/module_utils/pkg/__init__.py': '',
               'plugins/module_utils/pkg/deep.py': '',
               'plugins/filter/f.py': prefix + '.pkg.deep import thing\n'}
    assert plugin_import_problems(sources) == [
        'plugins/modules/m.py imports tests.unit.data: plugins must not import from tests/',
        'plugins/module_utils/kueue_rules_data.py: nothing under plugins/ imports it (test data belongs under tests/)',
        'plugins/module_utils/self_only.py: nothing under plugins/ imports it (test data belongs under tests/)']
