"""`make test-cluster` (hack/test_cluster.py, issue 19 items 1 and 2) on a cluster the suite did not start for itself.

A second local control plane is started the way a person starts one, with the harness's command line
(``python -m tests.harness up`` in its own run folder); the test then knows it only by its kubeconfig, its chart
reference and its helm, as it would know a kind or a staging AKS cluster. On it, through the same `make` command a
platform team runs:

- a cluster that already runs Kueue is refused before anything is written, as is a kubeconfig that does not exist;
- a target that fails half-way (the cleanup drill) still leaves nothing of the run on the cluster;
- every ansible-test integration target passes, and the cluster ends with exactly the objects it had before.
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from kubernetes import client, config

from tests.harness.cluster import parse_exports, run_dir
from tests.reliability.rbac import snapshot

from .ansible import REPO
from .kubeutil import delete_namespaces

PY = sys.executable


def _script_targets() -> list:
    """The targets hack/test_cluster.py runs when given none (it finds them in tests/integration/targets/)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("kueueops_test_cluster", os.path.join(REPO, "hack", "test_cluster.py"))
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    return list(script.TARGETS)


def _harness(folder: str, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, KUEUEOPS_RUN_DIR=folder)
    return subprocess.run([PY, "-m", "tests.harness", *args], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=600, check=True)


@pytest.fixture(scope="module")
def by_hand():
    """A cluster started with the harness's command line; its exports as a person would `eval` them."""
    folder = run_dir().rstrip("/") + "-byhand"
    _harness(folder, "up")
    try:
        yield parse_exports(_harness(folder, "env").stdout)
    finally:
        _harness(folder, "down")


def _make_test_cluster(exports: dict, *targets: str, **env) -> subprocess.CompletedProcess:
    """`make test-cluster KUBECONFIG=...` with the chart, helm and options a user would give."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("K8S_AUTH_", "KUBECONFIG", "KUEUEOPS_TEST_"))}
    base.update(HELM=exports["HELM_V3"], KUEUE_CHART_REF=exports["KUEUE_CHART_REF"], KUEUE_PLAIN_HTTP="true")
    base.update(env)
    cmd = ["make", "-s", "test-cluster", "KUBECONFIG=" + env.get("KUBECONFIG", exports["KUBECONFIG"])]
    if targets:
        cmd.append("TARGETS=" + " ".join(targets))
    return subprocess.run(cmd, cwd=REPO, env=base, capture_output=True, text=True, timeout=2400)


def _api(exports):
    return config.new_client_from_config(exports["KUBECONFIG"])


def test_refuses_a_cluster_running_kueue_and_a_missing_kubeconfig(by_hand, tmp_path):
    api = _api(by_hand)
    missing = _make_test_cluster(by_hand, KUBECONFIG=str(tmp_path / "nope.kubeconfig"))
    assert missing.returncode != 0, missing.stdout + missing.stderr  # make's own status: 2 for any failed recipe
    assert "nope.kubeconfig does not exist" in missing.stderr and "fix: make test-cluster KUBECONFIG=" in \
        missing.stderr and "Traceback" not in missing.stderr
    core = client.CoreV1Api(api)
    core.create_namespace({"metadata": {"name": "kueue-system"}})
    try:
        before = snapshot(api)
        refused = _make_test_cluster(by_hand)
        assert refused.returncode != 0, refused.stdout + refused.stderr
        assert "already runs Kueue (namespace/kueue-system)" in refused.stderr
        assert "KUEUEOPS_TEST_REPLACE_KUEUE=true" in refused.stderr and "nothing was changed" in refused.stderr
        assert snapshot(api) == before
    finally:
        delete_namespaces(api, ["kueue-system"], timeout=120)


def test_a_target_failing_half_way_leaves_nothing_behind(by_hand):
    api = _api(by_hand)
    before = set(snapshot(api))
    run = _make_test_cluster(by_hand, "kueue_queues", KUEUEOPS_TEST_INJECT_FAILURE="kueue_queues",
                             KUEUEOPS_TEST_PREFIX="ktdrill")
    out = run.stdout + run.stderr
    assert run.returncode != 0, out[-6000:]
    assert "injected failure in kueue_queues" in out
    assert "removing namespace ktdrill-q-team" in out and "removing the Kueue this run installed" in out
    assert "targets FAILED; nothing of prefix ktdrill is left on the cluster" in out and "refused" not in out
    assert set(snapshot(api)) == before


def test_every_target_passes_and_the_cluster_ends_as_it_began(by_hand):
    api = _api(by_hand)
    before = set(snapshot(api))
    run = _make_test_cluster(by_hand)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out[-8000:]
    targets = _script_targets()
    assert targets == ["kueue_backup", "kueue_helm", "kueue_queues", "kueue_verify", "kueueops_roles"]
    for target in targets:
        assert "Running %s integration test role" % target in out, target
    assert "targets passed; nothing of prefix kt-" in out
    assert set(snapshot(api)) == before
