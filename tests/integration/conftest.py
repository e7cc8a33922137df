"""Fixtures for tests on the real local control plane (tests/harness).

The `cluster` fixture reuses a cluster that `make cluster-up` started (and leaves
it running), or starts one for the session and stops it afterwards: whoever
starts it stops it.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from tests.harness.cluster import Cluster, run_dir  # noqa: E402


@contextlib.contextmanager
def environ(env: dict):
    """`env` in os.environ for the block; the previous values (or their absence) restored after."""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


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
    with environ(handle.env()):
        yield handle
    if started_here:
        with open(os.path.join(run_dir(), ".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            handle.down()


def _kueue_installed(kubeconfig: str) -> bool:
    """Kueue's CRDs or its kueue-system namespace exist and are not being deleted (kubeutil.kueue_present)."""
    from kubernetes import config

    from .kubeutil import kueue_present

    api = config.new_client_from_config(kubeconfig)
    try:
        return bool(kueue_present(api))
    finally:
        api.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    if outcome.get_result().failed:
        item.module.__dict__["_kueueops_failed"] = True


@pytest.fixture(scope="module", autouse=True)
def no_kueue_left_by_a_failed_module(request):
    """A module that fails half-way may leave Kueue installed; the next modules, which start from a cluster
    without Kueue, would then fail for it (the cascade of session 3's red CI: one failed harness test, eight
    failures after it). Such a module's Kueue is removed after it. A module that passes yet leaves Kueue behind,
    when there was none before it, gets a warning in the summary (it is left alone: the next module tells)."""
    handle = Cluster()
    before = _kueue_installed(handle.kubeconfig) if handle.running() else False
    yield
    handle = Cluster()
    if before or not handle.running() or not _kueue_installed(handle.kubeconfig):
        return
    if not request.module.__dict__.get("_kueueops_failed"):
        import warnings
        warnings.warn("%s left Kueue installed on a cluster that had none before it" % request.module.__name__)
        return
    from kubernetes import config

    from .kubeutil import reset_kueue

    api = config.new_client_from_config(handle.kubeconfig)
    try:
        with environ(handle.env()):
            reset_kueue(api, [], extension=bool(os.environ.get("AKS_RESOURCE_GROUP")))
    finally:
        api.close()


@pytest.fixture(scope="session")
def kube(cluster):
    from kubernetes import config
    api_client = config.new_client_from_config(cluster.kubeconfig)
    return api_client


@pytest.fixture(scope="module")
def kueue(cluster, kube):
    """Kueue (the newest chart in the local registry) installed with Helm and answering its
    webhooks. Reused when already running; when installed here, uninstalled with its
    namespace afterwards, so the next module finds the cluster as it was."""
    from kubernetes import client

    from .kubeutil import delete_namespace, helm, wait_for

    apps = client.AppsV1Api(kube)
    installed_here = False
    try:
        apps.read_namespaced_deployment("kueue-controller-manager", "kueue-system")
    except client.exceptions.ApiException as exc:
        if exc.status != 404:
            raise
        helm(cluster, os.environ["HELM_V3"], "upgrade", "--install", "kueue", os.environ["KUEUE_CHART_REF"],
             "--version", cluster.state["chart_versions"][0], "--plain-http", "-n", "kueue-system",
             "--create-namespace", "--wait", "--timeout", "5m")
        installed_here = True
    wait_for("the Kueue manager", lambda: (apps.read_namespaced_deployment(
        "kueue-controller-manager", "kueue-system").status.available_replicas or 0) >= 1, timeout=300)
    probe = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "probe"}, "spec": {}}
    wait_for("Kueue's webhooks", lambda: client.CustomObjectsApi(kube).create_cluster_custom_object(
        "kueue.x-k8s.io", "v1beta2", "clusterqueues", probe, dry_run="All"), timeout=180)
    yield kube
    if installed_here:
        helm(cluster, os.environ["HELM_V3"], "uninstall", "kueue", "-n", "kueue-system", "--wait", check=False)
        delete_namespace(kube, "kueue-system")


@pytest.fixture(scope="session")
def arm(cluster):
    """The ARM emulator (tests/emulators/arm) beside the local cluster, reused when running,
    else started for the session and stopped afterwards. Its AZURE_* and AKS_* variables
    (ArmEmulator.env()) are set in os.environ for the session and restored afterwards."""
    from tests.emulators.arm.emulator import ArmEmulator

    emulator = ArmEmulator(cluster.folder)
    lock_path = os.path.join(cluster.folder, ".arm-lock")  # the lock of `python -m tests.emulators.arm up|down`
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        started_here = not emulator.running()
        if started_here:
            emulator.up()
    with environ(emulator.env()):
        yield emulator
    if started_here:
        with open(lock_path, "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            emulator.down()


@pytest.fixture
def arm_control(arm):
    """The emulator's switches (tests/emulators/arm/control.py): faults, provisioning, cluster
    properties, request log; reset before and after each test."""
    from tests.emulators.arm.control import Control

    ctl = Control(arm.url, arm.ca_path)
    ctl.reset()
    yield ctl
    ctl.reset()
