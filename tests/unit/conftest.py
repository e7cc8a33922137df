"""Make ``ansible_collections.kueueops.aks`` importable for the unit tests.

`make venv` links this checkout at .venv/collections/ansible_collections/kueueops/aks;
when ansible_collections is not importable yet, put that folder on sys.path.
ansible-test units provides the path itself.
"""

import importlib.util
import os
import sys

import pytest

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The collections folder of the venv running the tests (.venv, or .venv-compat under hack/compat.sh).
_COLLECTIONS = os.path.join(os.path.dirname(os.path.dirname(sys.executable)), 'collections')
if not os.path.isdir(os.path.join(_COLLECTIONS, 'ansible_collections', 'kueueops', 'aks')):
    _COLLECTIONS = os.path.join(_ROOT, '.venv', 'collections')

if importlib.util.find_spec('ansible_collections') is None or importlib.util.find_spec('ansible_collections.kueueops') is None:
    if os.path.isdir(os.path.join(_COLLECTIONS, 'ansible_collections', 'kueueops', 'aks')):
        sys.path.insert(0, _COLLECTIONS)


@pytest.fixture
def no_default_kubeconfig(monkeypatch, tmp_path):
    """No kubeconfig, in-cluster service account or K8S_AUTH_* variable of the machine reaches the test
    (the kube_client tests use it through ``pytestmark``)."""
    monkeypatch.setenv('KUBECONFIG', str(tmp_path / 'absent'))
    monkeypatch.delenv('KUBERNETES_SERVICE_HOST', raising=False)
    for name in list(os.environ):
        if name.startswith('K8S_AUTH_'):
            monkeypatch.delenv(name)


class _Refuse:
    """A meta path finder that refuses `names` and their submodules, as a Python without them installed does."""

    def __init__(self, names):
        self.names = names

    def find_spec(self, name, path=None, target=None):
        if any(name == n or name.startswith(n + '.') for n in self.names):
            raise ImportError('No module named %r' % name)


@pytest.fixture
def azure_sdk_missing(monkeypatch):
    """``azure_sdk_missing('azure.identity', ...)`` makes those Azure SDK modules really not importable for the test:
    gone from sys.modules, refused by the import system, and module_utils/azure/azure_sdk.py's remembered outcomes cleared."""
    from ansible_collections.kueueops.aks.plugins.module_utils.azure import azure_sdk

    def refuse(*names):
        for name in [m for m in sys.modules if any(m == n or m.startswith(n + '.') for n in names)]:
            monkeypatch.delitem(sys.modules, name)
        monkeypatch.setattr(sys, 'meta_path', [_Refuse(names)] + sys.meta_path)
        monkeypatch.setattr(azure_sdk, '_SDK_IMPORT_ERRORS', {})
    return refuse
