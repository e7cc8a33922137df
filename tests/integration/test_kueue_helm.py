"""The Helm install path end to end (issue 3): playbooks/site.yml and the modules,
through real ansible-playbook, against the real local control plane, with the real
Kueue chart from the local OCI registry, for both helm majors.
"""
from __future__ import annotations

import json
import os
import signal

import pytest
from kubernetes import client

from .ansible import run_playbook
from .kubeutil import helm, kueue_crds, wait_for

SITE = os.path.join(os.path.dirname(__file__), "..", "..", "playbooks", "site.yml")
UPGRADE = os.path.join(os.path.dirname(__file__), "..", "..", "playbooks", "upgrade.yml")
SEED_GATES = {"TopologyAwareScheduling": True, "LocalQueueMetrics": True}
SEED_FRAMEWORKS = ["batch/job", "kubeflow.org/mpijob", "ray.io/rayjob", "ray.io/raycluster", "jobset.x-k8s.io/jobset",
                   "kubeflow.org/paddlejob", "kubeflow.org/pytorchjob", "kubeflow.org/tfjob",
                   "kubeflow.org/xgboostjob", "kubeflow.org/jaxjob"]


def helm_env(binary):
    return {"PATH": os.path.dirname(binary) + os.pathsep + os.environ["PATH"]}


def release_revision(cluster, binary):
    out = helm(cluster, binary, "list", "-n", "kueue-system", "-o", "json").stdout
    items = json.loads(out or "[]")
    return (int(items[0]["revision"]), items[0]["chart"]) if items else None


def uninstall_play(extra=None):
    args = {"state": "absent", "delete_namespace": True, "timeout": 240}
    args.update(extra or {})
    return [{"name": "Uninstall", "hosts": "local", "gather_facts": False, "tasks": [
        {"name": "Uninstall Kueue", "kueueops.aks.kueue_helm": args}]}]


def module_play(module, args, name="Run module"):
    return [{"name": "Run", "hosts": "local", "gather_facts": False,
             "tasks": [{"name": name, "kueueops.aks.%s" % module: args}]}]


@pytest.mark.parametrize("helm_major", ["v3", "v4"])
def test_site_install_upgrade_idempotence_uninstall(cluster, kube, helm_major, tmp_path):
    binary = os.environ["HELM_V3"] if helm_major == "v3" else os.environ["HELM_V4"]
    env = helm_env(binary)
    versions = cluster.state["chart_versions"]
    newest, previous = versions[0], versions[1]

    # 1. Install the previous minor, pinned.
    first = run_playbook(SITE, extravars={"kueue_version": previous}, env=env)
    assert first.rc == 0, first.stdout[-3000:]
    assert first.result("Install or upgrade Kueue")["chart_version"] == previous
    assert release_revision(cluster, binary) == (1, "kueue-" + previous)

    # 2. The defaults a new user has (kueue_version: latest) on the previous minor: a real run stays on it - `latest`
    # is the newest good patch of the installed minor, never a newer minor (issue 39) - and says a newer one is out.
    nightly = run_playbook(SITE, env=env)
    assert nightly.rc == 0, nightly.stdout[-3000:]
    res = nightly.result("Install or upgrade Kueue")
    assert res["changed"] is False and res["chart_version"] == previous, res
    assert any(newest in n and "playbooks/upgrade.yml" in n for n in res["notices"]), res["notices"]
    assert release_revision(cluster, binary) == (1, "kueue-" + previous)

    # 3. The newer minor pinned through site.yml: refused before Helm runs, naming the way that crosses it.
    pinned = run_playbook(SITE, extravars={"kueue_version": newest}, env=env)
    msg = " ".join(pinned.failure_messages())
    assert pinned.rc != 0 and "playbooks/upgrade.yml" in msg and newest in msg, pinned.stdout[-3000:]
    assert "Traceback" not in pinned.stdout + pinned.stderr
    assert release_revision(cluster, binary) == (1, "kueue-" + previous)

    # The module with the explicit opt-in, in check mode: reports the hop and its diff, changes nothing.
    check = run_playbook(module_play("kueue_helm", {
        "chart_ref": os.environ["KUEUE_CHART_REF"], "plain_http": True, "binary_path": binary,
        "chart_version": newest, "allow_minor_change": True}), check=True, diff=True)
    assert check.rc == 0, check.stdout[-3000:]
    res = check.result("Run module")
    assert res["changed"] is True and res["chart_version"] == newest
    assert res["diff"]["before"]["chart_version"] == previous and res["diff"]["after"]["chart_version"] == newest
    assert release_revision(cluster, binary) == (1, "kueue-" + previous)

    # 4. The explicit way across: playbooks/upgrade.yml to `latest`, a real Helm upgrade with this helm major.
    upgrade = run_playbook(UPGRADE, extravars={"kueue_version": "latest", "kueue_backup_dir": str(tmp_path / "bk")},
                           env=env)
    assert upgrade.rc == 0, upgrade.stdout[-3000:]
    hops = [r["chart_version"] for name, r in upgrade.tasks() if "Upgrade Kueue with Helm to" in name
            and "chart_version" in r]
    assert hops == [newest], hops
    assert release_revision(cluster, binary) == (2, "kueue-" + newest)

    # 5. site.yml again on the new minor changes nothing, and verifies the upgraded Kueue.
    again = run_playbook(SITE, env=env)
    assert again.rc == 0 and again.changed == 0, again
    assert release_revision(cluster, binary) == (2, "kueue-" + newest)
    verify = again.result("Verify Kueue")
    assert verify["ok"] is True and verify["failed_checks"] == []
    assert verify["version"] == "v" + newest
    assert verify["feature_gates"] == SEED_GATES
    assert verify["integrations"] == SEED_FRAMEWORKS
    names = {c["name"] for c in verify["checks"]}
    assert {"deployment/kueue-controller-manager", "crds", "webhook-roundtrip", "helm-release",
            "feature-gates", "integrations"} <= names

    # 6. Uninstall: the release, its CRDs and the namespace are gone; a second uninstall is a no-op.
    gone = run_playbook(uninstall_play({"binary_path": binary}))
    assert gone.rc == 0 and gone.changed == 1, gone
    core = client.CoreV1Api(kube)
    assert "kueue-system" not in {n.metadata.name for n in core.list_namespace().items}
    assert not kueue_crds(kube)
    twice = run_playbook(uninstall_play({"binary_path": binary}))
    assert twice.rc == 0 and twice.changed == 0, twice


def test_bad_input_fails_before_helm_runs(cluster, kube):
    core = client.CoreV1Api(kube)
    seed_values = {"controllerManager": {
        "featureGates": [{"name": "TopologyAwareScheduling", "enabled": True}],
        "managerConfig": {"controllerManagerConfigYaml": "apiVersion: config.kueue.x-k8s.io/v1beta1\n"
                                                         "kind: Configuration\nintegrations:\n  frameworks:\n"
                                                         "  - batch/job\n"}}}
    base = {"chart_ref": os.environ["KUEUE_CHART_REF"], "plain_http": True, "binary_path": os.environ["HELM_V3"]}
    misnested = run_playbook(module_play("kueue_helm", dict(base, values=seed_values)))
    assert misnested.rc != 0
    msg = " ".join(misnested.failure_messages())
    assert "managerConfig" in msg and "controllerManagerConfigYaml" in msg and "Fix:" in msg
    assert "Traceback" not in misnested.stdout + misnested.stderr

    unknown = run_playbook(module_play("kueue_helm", dict(base, feature_gates={"TopologyAwareSchedulingX": True})))
    assert unknown.rc != 0
    msg = " ".join(unknown.failure_messages())
    assert "TopologyAwareSchedulingX" in msg and "TopologyAwareScheduling" in msg and "feature_gates" in msg

    bad_framework = run_playbook(module_play("kueue_helm", dict(base, integrations=["batch/jobs"])))
    assert bad_framework.rc != 0 and "batch/jobs" in " ".join(bad_framework.failure_messages())

    no_helm = run_playbook(module_play("kueue_helm", dict(base, binary_path="/nonexistent/helm")))
    assert no_helm.rc != 0 and "/nonexistent/helm" in " ".join(no_helm.failure_messages())

    # The AKS managed extension owns the cluster: refused, with the migration path.
    apps = client.AppsV1Api(kube)
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="kube-extension-sim")))
    try:
        apps.create_namespaced_deployment("kube-extension-sim", client.V1Deployment(
            metadata=client.V1ObjectMeta(name="kueue-extension"),
            spec=client.V1DeploymentSpec(
                replicas=0, selector=client.V1LabelSelector(match_labels={"app": "kueue-extension"}),
                template=client.V1PodTemplateSpec(
                    metadata=client.V1ObjectMeta(labels={"app": "kueue-extension"}),
                    spec=client.V1PodSpec(containers=[client.V1Container(name="x", image="pause")])))))
        managed = run_playbook(module_play("kueue_helm", base))
        assert managed.rc != 0
        msg = " ".join(managed.failure_messages())
        assert "managed Kueue extension" in msg and "allow_managed_extension" in msg and "kueue_backup" in msg
    finally:
        core.delete_namespace("kube-extension-sim")
        wait_for("namespace gone", lambda: "kube-extension-sim" not in {
            n.metadata.name for n in core.list_namespace().items}, timeout=120)

    # Nothing was installed or created by any of them.
    assert "kueue-system" not in {n.metadata.name for n in core.list_namespace().items}
    assert json.loads(helm(cluster, os.environ["HELM_V3"], "list", "-A", "-o", "json").stdout or "[]") == []


def test_a_chart_value_option_to_the_pods_the_rerun_and_drift_then_verify_fails_with_the_reason(cluster, kube):
    """Issue 42, item 4: a Helm option added as kueue_helm's spec, code and documentation only (manager_priority_class,
    the chart's controllerManager.manager.priorityClassName) works through its role variable, which nothing but
    hack/gen_role_specs.py wrote: site.yml with kueue_helm_manager_priority_class installs Kueue with it (the real
    API server's Priority admission gives the manager's Pods that class's priority), the re-run changes nothing,
    status.yml declaring it finds no drift, and declaring the install without it names the chart value that differs.

    Then, on the same install, kueue_verify fails with the reason: the manager stopped (and held stopped) fails the
    deployment and webhook checks and says why, released it passes again; a missing CRD fails the crds check alone;
    report mode returns the same failure instead of failing the play."""
    status = os.path.join(os.path.dirname(SITE), "status.yml")
    flavor = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "pc-default"},
              "spec": {}}
    declared = {"kueue_helm_manager_priority_class": "system-cluster-critical", "kueue_resources": [flavor]}
    apps, core = client.AppsV1Api(kube), client.CoreV1Api(kube)
    try:
        first = run_playbook(SITE, extravars=declared)
        assert first.rc == 0, first.stdout[-3000:]
        values = first.result("Install or upgrade Kueue")["release_values"]
        assert values["controllerManager"]["manager"]["priorityClassName"] == "system-cluster-critical", values
        template = apps.read_namespaced_deployment("kueue-controller-manager", "kueue-system").spec.template
        assert template.spec.priority_class_name == "system-cluster-critical"
        selector = ",".join("%s=%s" % item for item in sorted(template.metadata.labels.items()))
        pods = core.list_namespaced_pod("kueue-system", label_selector=selector).items
        assert pods and all(p.spec.priority_class_name == "system-cluster-critical" and p.spec.priority == 2000000000
                            for p in pods), [(p.metadata.name, p.spec.priority) for p in pods]

        again = run_playbook(SITE, extravars=declared)
        assert again.rc == 0 and again.changed == 0, again

        clean = run_playbook(status, extravars=declared)
        assert clean.rc == 0 and clean.changed == 0, clean.stdout[-3000:]
        found = clean.result("Compare the declared queue configuration")
        assert found["drift"] is False and found["install"]["differences"] == [], found

        undeclared = run_playbook(status, extravars={"kueue_resources": [flavor]})
        assert undeclared.rc == 0, undeclared.stdout[-3000:]
        found = undeclared.result("Compare the declared queue configuration")
        assert found["drift"] is True and found["install"]["differences"] == [{
            "source": "helm values", "key": "controllerManager.manager", "declared": "(absent)",
            "live": {"priorityClassName": "system-cluster-critical"}}], found["install"]

        verify_fails_with_the_reason(cluster, kube)
    finally:
        done = run_playbook(uninstall_play())
        assert done.rc == 0, done


def verify_fails_with_the_reason(cluster, kube):
    """kueue_verify on an installed Kueue made unhealthy, two ways: each failure names its check and its cause."""
    apps = client.AppsV1Api(kube)
    verify_args = {"install_method": "helm", "timeout": 20}
    # The manager stopped (and held stopped): the deployment check fails and says why.
    open(cluster.path("agent", "hold"), "w").close()
    try:
        with open(cluster.path("agent", "managers.json")) as handle:
            pid = next(iter(json.load(handle).values()))["pid"]
        os.kill(pid, signal.SIGKILL)
        wait_for("deployment unready", lambda: not (apps.read_namespaced_deployment(
            "kueue-controller-manager", "kueue-system").status.ready_replicas or 0))
        stopped = run_playbook(module_play("kueue_verify", verify_args, name="Verify"))
        assert stopped.rc != 0
        res = stopped.result("Verify")
        assert "deployment/kueue-controller-manager" in res["failed_checks"]
        assert "webhook-roundtrip" in res["failed_checks"]
        assert "0/1 ready" in res["msg"] and "HeldByHarness" in res["msg"]
    finally:
        os.unlink(cluster.path("agent", "hold"))
    recovered = run_playbook(module_play("kueue_verify", dict(verify_args, timeout=180), name="Verify"))
    assert recovered.rc == 0, recovered

    # A missing CRD.
    client.ApiextensionsV1Api(kube).delete_custom_resource_definition("topologies.kueue.x-k8s.io")
    wait_for("CRD gone", lambda: "topologies.kueue.x-k8s.io" not in kueue_crds(kube))
    missing = run_playbook(module_play("kueue_verify", dict(verify_args, wait=False), name="Verify"))
    assert missing.rc != 0
    res = missing.result("Verify")
    assert res["failed_checks"] == ["crds"] and "missing: topologies" in res["msg"]

    # Report mode: the same failure, returned instead of failing the play.
    report = run_playbook(module_play("kueue_verify", dict(verify_args, wait=False, fail_on_error=False), name="Verify"))
    assert report.rc == 0 and report.result("Verify")["ok"] is False
