"""Fixtures for tests on the real local control plane (tests/harness).

The `cluster` fixture reuses a cluster that `make cluster-up` started (and leaves
it running), or starts one for the session and stops it afterwards: whoever
starts it stops it.
"""
from __future__ import annotations

import fcntl
import os
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from tests.harness.cluster import Cluster, run_dir  # noqa: E402


@pytest.fixture(scope="session")
def cluster():
    os.makedirs(run_dir(), exist_ok=True)
    with open(os.path.join(run_dir(), ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the same lock as `python -m tests.harness up|down`
        handle = Cluster()
        started_here = False
        if not handle.running():
            handle.up()
            started_here = True
    env = handle.env()
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    yield handle
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    if started_here:
        with open(os.path.join(run_dir(), ".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            handle.down()


@pytest.fixture(scope="session")
def kube(cluster):
    from kubernetes import client, config
    api_client = config.new_client_from_config(cluster.kubeconfig)
    return api_client
