"""Where our users live (issue 7): playbooks/site.yml launched through ansible-runner the way
AWX launches a job (a private data folder with project, inventory, extravars, and the
credentials AWX's credential types inject as environment and files), judged on the job
events; molecule's helm scenario; playbooks/status.yml's report."""
from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys

import ansible_runner
import yaml

from .ansible import COLLECTIONS, REPO, run_playbook
from .kubeutil import wait_for

BIN = os.path.dirname(sys.executable)
# Recognisable fake secrets, injected as AWX's Microsoft Azure Resource Manager credential
# type does; the Helm path does not use them, and nothing may print them.
FAKE = {"AZURE_SECRET": "kueueops-FAKE-client-secret-4c1d", "AZURE_CLIENT_ID": "0000aaaa-fake-client",
        "AZURE_TENANT": "0000bbbb-fake-tenant", "AZURE_SUBSCRIPTION_ID": "0000cccc-fake-subscription"}


def embedded_kubeconfig(path: str, dest: str) -> list[str]:
    """The harness kubeconfig with certificate and key inlined (as a user's AKS kubeconfig is);
    returns the secret strings (key data) that must never appear in a job event."""
    cfg = yaml.safe_load(open(path))
    secrets = []
    for user in cfg["users"]:
        u = user["user"]
        for field in ("client-certificate", "client-key", "certificate-authority"):
            if field in u:
                u[field + "-data"] = base64.b64encode(open(u.pop(field), "rb").read()).decode()
        if "client-key-data" in u:
            secrets.append(u["client-key-data"])
            pem = base64.b64decode(u["client-key-data"]).decode()
            secrets.extend(line for line in pem.splitlines() if len(line) > 40)
    for cluster in cfg["clusters"]:
        c = cluster["cluster"]
        if "certificate-authority" in c:
            c["certificate-authority-data"] = base64.b64encode(open(c.pop("certificate-authority"), "rb").read()).decode()
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        yaml.safe_dump(cfg, handle)
    return secrets


def awx_job(tmp_path, cluster, name: str) -> ansible_runner.Runner:
    """One AWX-style job run of playbooks/site.yml."""
    pdd = tmp_path / name
    (pdd / "env").mkdir(parents=True)
    (pdd / "inventory").mkdir()
    shutil.copytree(os.path.join(REPO, "playbooks"), pdd / "project" / "playbooks",
                    ignore=shutil.ignore_patterns("backups"))
    (pdd / "inventory" / "hosts.yml").write_text(yaml.safe_dump({"kueue_clusters": {"hosts": {"aks-local": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}))
    extravars = yaml.safe_load(open(os.path.join(REPO, "playbooks", "vars", "queues.yml")))
    extravars.update({"kueue_helm_chart_ref": os.environ["KUEUE_CHART_REF"], "kueue_helm_plain_http": True,
                      "kueue_version": "latest", "kueue_smoke_test": True})
    (pdd / "env" / "extravars").write_text(yaml.safe_dump(extravars))
    envvars = dict(FAKE, K8S_AUTH_KUBECONFIG=str(tmp_path / "awx-kubeconfig"),
                   ANSIBLE_COLLECTIONS_PATH=COLLECTIONS,
                   PATH=BIN + ":" + os.environ["PATH"], KUBECONFIG="/nonexistent-awx-has-no-default")
    (pdd / "env" / "envvars").write_text(yaml.safe_dump(envvars))
    return ansible_runner.run(private_data_dir=str(pdd), playbook="playbooks/site.yml", quiet=True,
                              project_dir=str(pdd / "project"))


def test_site_through_ansible_runner_like_awx(cluster, tmp_path):
    secrets = embedded_kubeconfig(cluster.kubeconfig, str(tmp_path / "awx-kubeconfig")) + [FAKE["AZURE_SECRET"]]
    assert len(secrets) > 2  # the client key's base64 and PEM lines, and the Azure secret
    runs = []
    for name in ("first", "second"):
        run = awx_job(tmp_path, cluster, name)
        events = list(run.events)
        stdout = run.stdout.read()
        assert run.status == "successful" and run.rc == 0, stdout[-3000:]
        runs.append((run, events, stdout))
        dump = json.dumps(events) + stdout
        # Everything the job wrote: events, stdout, stderr. (Not runner's `command` record and
        # env/ folder: those are the job's inputs, which AWX keeps encrypted or redacted.)
        for folder, _dirs, files in os.walk(run.config.artifact_dir):
            for fname in files:
                if fname not in ("command",):
                    dump += open(os.path.join(folder, fname), errors="replace").read()
        leaked = [s[:12] + "..." for s in secrets if s in dump]
        assert not leaked, "secrets in %s job events/artifacts: %s" % (name, leaked)
    stats = [e for e in runs[1][1] if e["event"] == "playbook_on_stats"][0]["event_data"]
    assert stats["changed"] == {} or sum(stats["changed"].values()) == 0, stats["changed"]
    assert stats["failures"] == {} and stats["ok"].get("aks-local", 0) > 0
    # The smoke test ran in both jobs and passed.
    for _run, events, _ in runs:
        smoke = [e for e in events if e["event"] == "runner_on_ok" and "Smoke test" in e["event_data"].get("task", "")]
        assert smoke and all(c["ok"] for c in smoke[-1]["event_data"]["res"]["checks"])
    cleanup(cluster)


def cleanup(cluster):
    done = run_playbook([{"name": "Cleanup", "hosts": "local", "gather_facts": False, "tasks": [
        {"name": "Uninstall", "kueueops.aks.kueue_helm": {"state": "absent", "delete_namespace": True}},
        {"name": "Team namespaces", "ansible.builtin.command": {
            "argv": ["kubectl", "delete", "namespace", "team-vision", "team-nlp", "--ignore-not-found", "--wait",
                     "--timeout=120s"]}, "changed_when": True}]}])
    assert done.rc == 0, done


def test_molecule_helm_scenario(cluster, tmp_path):
    """`molecule test -s helm`: converge (site.yml), idempotence, verify, cleanup (uninstall with backup)."""
    molecule(cluster, tmp_path, "helm")


def test_molecule_extension_scenario(cluster, arm, tmp_path):
    """`molecule test -s extension` on the ARM emulator: the role creates the managed extension and takes the
    cluster's credentials from ARM (no kubeconfig given), idempotence, verify, cleanup deletes the extension
    after a backup."""
    molecule(cluster, tmp_path, "extension")


def molecule(cluster, tmp_path, scenario):
    env = dict(os.environ, PATH=BIN + ":" + os.environ["PATH"], MOLECULE_NO_LOG="false",
               ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, ANSIBLE_FORCE_COLOR="0",
               NO_COLOR="1", ANSIBLE_HOME=str(tmp_path / "ansible-home"))
    if scenario == "extension":
        # No kubeconfig anywhere: every Kubernetes call must use the credentials the role took from ARM.
        env.pop("K8S_AUTH_KUBECONFIG", None)
        env["KUBECONFIG"] = "/nonexistent/kubeconfig"
    run = subprocess.run([os.path.join(BIN, "molecule"), "test", "-s", scenario], cwd=os.path.join(REPO, "extensions"),
                         capture_output=True, text=True, env=env, timeout=1200)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out[-6000:]
    # molecule's idempotence step fails the scenario when the second converge reports a change.
    for step in ("converge", "idempotence", "verify", "cleanup"):
        assert "%s > %s: Executed: Successful" % (scenario, step) in out, out[-6000:]
    # cleanup uninstalled Kueue after a backup: the CRDs are gone.
    crds = subprocess.run(["kubectl", "--kubeconfig", cluster.kubeconfig, "get", "crds", "-o", "name"],
                          capture_output=True, text=True, env=env).stdout
    assert "kueue.x-k8s.io" not in crds
    subprocess.run(["kubectl", "--kubeconfig", cluster.kubeconfig, "delete", "namespace", "team-vision", "team-nlp",
                    "--ignore-not-found", "--wait", "--timeout=120s"], capture_output=True, env=env)


def test_status_playbook_report(cluster, kueue, tmp_path):
    """playbooks/status.yml prints the tables and writes Markdown/HTML; a failing check fails the host
    after the report is written."""
    from kubernetes import client

    custom = client.CustomObjectsApi(kueue)
    objects = [("resourceflavors", {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                                    "metadata": {"name": "status-flavor"}}),
               ("clusterqueues", {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                                  "metadata": {"name": "status-cq"}, "spec": {
                                      "namespaceSelector": {}, "cohortName": "status-cohort", "resourceGroups": [{
                                          "coveredResources": ["cpu"], "flavors": [{"name": "status-flavor", "resources": [
                                              {"name": "cpu", "nominalQuota": "7"}]}]}]}})]
    for plural, body in objects:
        custom.create_cluster_custom_object("kueue.x-k8s.io", "v1beta2", plural, body)
    try:
        md = tmp_path / "status.md"
        status = os.path.join(REPO, "playbooks", "status.yml")
        ok = run_playbook(status, extravars={"kueue_status_report": str(md)})
        assert ok.rc == 0, ok
        shown = ok.result("Show the status")["msg"]
        assert shown[0].startswith("local: Kueue v0.19.2 (helm): all ") and shown[0].endswith("checks passed")
        row = [line for line in shown if line.strip().startswith("status-cq")]
        assert row and "status-cohort" in row[0] and "status-flavor cpu 0/7" in row[0], shown
        text = md.read_text()
        assert text.startswith("# Kueue status") and "| status-cq | status-cohort | status-flavor cpu 0/7 |" in text
        html = tmp_path / "status.html"
        apps = client.AppsV1Api(kueue)
        # A failing check: the manager's Deployment scaled to zero.
        apps.patch_namespaced_deployment_scale("kueue-controller-manager", "kueue-system", {"spec": {"replicas": 0}})
        bad = run_playbook(status, extravars={"kueue_status_report": str(html)})
        assert bad.rc != 0 and "failed checks: deployment/kueue-controller-manager" in " ".join(bad.failure_messages())
        assert '<tr class="fail"><td>FAIL</td><td>deployment/kueue-controller-manager</td>' in html.read_text()
        report_only = run_playbook(status, extravars={"kueue_status_fail_on_error": False})
        assert report_only.rc == 0
    finally:
        # The manager back first: it removes the finalizers of the objects deleted next (without it
        # they, and later the CRDs of an uninstall, would stay terminating).
        apps = client.AppsV1Api(kueue)
        apps.patch_namespaced_deployment_scale("kueue-controller-manager", "kueue-system", {"spec": {"replicas": 1}})
        wait_for("the Kueue manager", lambda: (apps.read_namespaced_deployment(
            "kueue-controller-manager", "kueue-system").status.available_replicas or 0) >= 1, timeout=180)
        for plural, body in reversed(objects):
            custom.delete_cluster_custom_object("kueue.x-k8s.io", "v1beta2", plural, body["metadata"]["name"])
        for plural, _body in objects:
            wait_for("%s deleted" % plural, lambda p=plural: not [
                i for i in custom.list_cluster_custom_object("kueue.x-k8s.io", "v1beta2", p)["items"]
                if i["metadata"]["name"].startswith("status-")], timeout=120)


def test_nightly_drift_report_as_its_awx_schedule_launches_it(cluster, kueue, tmp_path):
    """The AWX template "Kueue - drift report" launched as its nightly schedule does (issue 16): ansible-runner, the
    schedule's extra_data (kueue_fail_on_drift: true, the declared manifests in the project's queues/ folder), the
    kubeconfig credential injected. A declared flavor missing from the cluster: the job fails, after the report was
    written; no secret in the job's events."""
    awx = yaml.safe_load(open(os.path.join(REPO, "awx", "controller_configuration.yml")))
    schedule = [s for s in awx["controller_schedules"] if s["unified_job_template"] == "Kueue - drift report"][0]
    template = [t for t in awx["controller_templates"] if t["name"] == schedule["unified_job_template"]][0]
    secrets = embedded_kubeconfig(cluster.kubeconfig, str(tmp_path / "awx-kubeconfig")) + [FAKE["AZURE_SECRET"]]
    pdd = tmp_path / "drift-job"
    (pdd / "env").mkdir(parents=True)
    (pdd / "inventory").mkdir()
    shutil.copytree(os.path.join(REPO, "playbooks"), pdd / "project" / "playbooks",
                    ignore=shutil.ignore_patterns("backups"))
    (pdd / "project" / "queues").mkdir()
    (pdd / "project" / "queues" / "flavors.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "awx-drift-flavor"}}))
    (pdd / "inventory" / "hosts.yml").write_text(yaml.safe_dump({"kueue_clusters": {"hosts": {"aks-local": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}))
    report = tmp_path / "kueue-drift.html"  # /runner/artifacts/ in the execution environment
    extravars = dict(schedule["extra_data"], kueue_status_report=str(report))
    (pdd / "env" / "extravars").write_text(yaml.safe_dump(extravars))
    (pdd / "env" / "envvars").write_text(yaml.safe_dump(dict(
        FAKE, K8S_AUTH_KUBECONFIG=str(tmp_path / "awx-kubeconfig"), ANSIBLE_COLLECTIONS_PATH=COLLECTIONS,
        PATH=BIN + ":" + os.environ["PATH"], KUBECONFIG="/nonexistent-awx-has-no-default")))
    run = ansible_runner.run(private_data_dir=str(pdd), playbook=template["playbook"], quiet=True,
                             project_dir=str(pdd / "project"))
    events = list(run.events)
    stdout = run.stdout.read()
    assert run.status == "failed", stdout[-3000:]
    failed = [e["event_data"]["task"] for e in events if e["event"] == "runner_on_failed"]
    assert failed == ["Fail the clusters that drifted from the declared configuration (kueue_fail_on_drift)"], failed
    drift = [e["event_data"]["res"] for e in events if e["event"] == "runner_on_ok"
             and e["event_data"].get("task", "").startswith("Compare the declared queue configuration")][0]
    assert drift["objects"]["missing"] == [{"kind": "ResourceFlavor", "name": "awx-drift-flavor"}], drift["objects"]
    assert "ResourceFlavor awx-drift-flavor" in report.read_text()
    dump = json.dumps(events) + stdout
    assert not [s[:12] + "..." for s in secrets if s in dump]
