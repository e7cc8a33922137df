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
