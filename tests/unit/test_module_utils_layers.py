"""plugins/module_utils is packages by layer (issue 42): a package imports only the layers below it, a feature never
imports another feature, and a read-only module's payload holds no write code. The import graph is read from the
source (every ``ansible_collections.kueueops.aks.plugins.module_utils`` import, the lazy ones inside functions too,
as ansible-core's AnsiballZ builder finds them)."""
from __future__ import annotations

import os
import re

import pytest

from tests.unit.python_sources import ROOT, imports, plugin_sources

MU = os.path.join(ROOT, 'plugins', 'module_utils')
BASE = 'ansible_collections.kueueops.aks.plugins.module_utils'

# Each package's rank: a package imports only packages of a lower rank (and itself). FEATURE is the top: features
# import the layers, never one another. The __init__ of each package says the same in words.
FEATURE = 6
RANK = {'common': 0, 'kube': 1, 'kueue': 2, 'helm': 3, 'azure': 3, 'verify': 4, 'install': 5,
        'queues': FEATURE, 'backup': FEATURE, 'drift': FEATURE, 'capacity': FEATURE, 'upgrade': FEATURE,
        'multikueue': FEATURE}
# The module_utils that write to a cluster, to Azure or to the controller's disk. (upgrade.upgrade_run plans only:
# it reads through helm.helm_session, the read side of kueue_helm's session.)
WRITE_CODE = {'queues.apply', 'install.helm_install', 'azure.extension_arm', 'multikueue.multikueue_worker',
              'upgrade.storage_migration', 'backup.backup', 'backup.gitops'}
READ_ONLY_MODULES = ('kueue_info', 'kueue_jobs_info', 'kueue_capacity_info', 'kueue_drift_info', 'kueue_upgrade_plan')
# Read-only modules that still ship write code, each with what it reads through it; the test fails when one is
# fixed (remove it here) or another appears. None since issue 42 split kueue_capacity_info's (azure/arm.py) and
# kueue_upgrade_plan's (helm/helm_session.py).
KNOWN_WRITE_CODE = {}


def imports_of(source, name='plugins/x.py'):
    """The module_utils modules ``source`` imports, as ``package.module`` (python_sources.imports reads them)."""
    out = set()
    for module, names, _relative in imports(name, source):
        if not module.startswith(BASE + '.'):
            continue
        parts = module[len(BASE) + 1:].split('.')
        if len(parts) == 1 and names:
            out.update('%s.%s' % (parts[0], n) for n in names)
        else:
            out.add('.'.join(parts[:2]))
    return out


def graph(sources=None):
    """{``package.module``: the module_utils it imports} of every module_utils file under plugins/."""
    sources = sources or plugin_sources()
    prefix = 'plugins/module_utils/'
    return {path[len(prefix):-3].replace('/', '.'): imports_of(source, path) for path, source in sources.items()
            if path.startswith(prefix) and not path.endswith('/__init__.py')}


def layer_violations(edges):
    """``a -> b`` for every import of a package by one of the same or a higher rank (features: by another feature)."""
    out = []
    for module, targets in sorted(edges.items()):
        mine = module.split('.')[0]
        for target in sorted(targets):
            theirs = target.split('.')[0]
            if theirs != mine and RANK.get(theirs, FEATURE) >= RANK.get(mine, FEATURE):
                out.append('%s -> %s' % (module, target))
    return out


def closure(edges, start):
    seen, todo = set(), list(start)
    while todo:
        name = todo.pop()
        if name not in seen and name in edges:
            seen.add(name)
            todo.extend(edges[name])
    return seen


def module_imports(name):
    path = 'plugins/modules/%s.py' % name
    return imports_of(plugin_sources()[path], path)


def test_module_utils_is_packages_each_documented_with_its_rank():
    """Every package has a rank here and the same rank in docs/dev/architecture.md's table, which says what it owns
    (its ``__init__.py`` stays empty: ansible-test sanity's empty-init on ansible-core 2.16 refuses any content)."""
    flat = sorted(n for n in os.listdir(MU) if n.endswith('.py') and n != '__init__.py')
    assert not flat, 'module_utils files outside a package: %s' % flat
    packages = sorted(n for n in os.listdir(MU) if os.path.isdir(os.path.join(MU, n)) and n != '__pycache__')
    assert set(packages) == set(RANK), 'a package without a rank here, or a rank without its package'
    for package in packages:
        assert os.path.getsize(os.path.join(MU, package, '__init__.py')) == 0, package
    documented = {}
    with open(os.path.join(ROOT, 'docs', 'dev', 'architecture.md')) as handle:
        for line in handle:
            match = re.match(r'^\| (\d) \| ((?:`\w+`(?:, )?)+) \| .+ \|$', line)
            if match:
                documented.update((name, int(match.group(1))) for name in re.findall(r'`(\w+)`', match.group(2)))
    assert documented == RANK


def test_a_package_imports_only_the_layers_below_it():
    assert layer_violations(graph()) == []


@pytest.mark.parametrize('name', READ_ONLY_MODULES)
def test_a_read_only_module_ships_no_write_code(name):
    shipped = closure(graph(), module_imports(name))
    assert shipped & WRITE_CODE == KNOWN_WRITE_CODE.get(name, set())


def test_the_checks_see_a_feature_importing_a_feature_and_write_code_in_a_payload():
    edges = {'drift.drift': {'queues.apply', 'kueue.queues'}, 'kueue.queues': {'common.errors'},
             'kube.wait': {'kueue.kueue_api'}, 'queues.apply': {'kube.wait'}, 'common.errors': set(),
             'kueue.kueue_api': set()}
    assert layer_violations(edges) == ['drift.drift -> queues.apply', 'kube.wait -> kueue.kueue_api']
    assert closure(edges, {'drift.drift'}) & WRITE_CODE == {'queues.apply'}
    assert imports_of('from %s.kube import wait, kueue_cluster as kc\n'
                      'def f():\n    from %s.queues.apply import run\n' % (BASE, BASE)) == \
        {'kube.wait', 'kube.kueue_cluster', 'queues.apply'}
