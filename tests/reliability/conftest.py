"""Fixtures of tests/reliability: the local control plane of tests/harness, reused from
tests/integration/conftest.py (the `cluster`, `kube`, `kueue`, `arm` fixtures), so a run
starts (or reuses) the same cluster in $KUEUEOPS_RUN_DIR and stops it only if it started it.

``ansible_collections.kueueops.aks`` is made importable as in tests/unit/conftest.py (`make venv`
links this checkout at .venv/collections/ansible_collections/kueueops/aks)."""
import importlib.util
import os
import sys

from tests.integration.conftest import (  # noqa: F401  pylint: disable=unused-import
    arm, arm_control, cluster, kube, kueue, no_kueue_left_by_a_failed_module, pytest_runtest_makereport)

_COLLECTIONS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                            '.venv', 'collections')
if importlib.util.find_spec('ansible_collections') is None or \
        importlib.util.find_spec('ansible_collections.kueueops') is None:
    if os.path.isdir(os.path.join(_COLLECTIONS, 'ansible_collections', 'kueueops', 'aks')):
        sys.path.insert(0, _COLLECTIONS)
