"""playbooks/configure_queues.yml and playbooks/status.yml on a Helm-installed Kueue, through real
ansible-playbook: the queue configuration of playbooks/vars/queues.yml applied (then changed=0), and
status.yml's report showing those queues.

It runs in hack/compat.sh's jobs (hack/matrix.sh): .venv-compat, ansible-core 2.16, the oldest meta/runtime.yml
accepts, and .venv-2.21, the newest release line (on which, as test_site.py and the uninstall/restore round trip,
it runs instead of in the main run), so both cover the role's configure_queues entry point and the status report
as their users run them.

The job roles kueueops.aks.install, configure_queues and uninstall_with_backup (issue 13) run here too, on the same
Kueue, in one playbook: all three through `roles:` (the uninstall backs up and uninstalls), then a reinstall through
include_role, a restore of that backup through import_role (from kueue_backup_path, the fact the first play set)
and an uninstall through include_role, which leaves the cluster as the fixture's teardown would; a `when: false`
import runs none of the shared role's tasks, and an import's tags reach them. A wrong-typed variable is refused by
the job role's own argument spec, before the shared role's.
"""
from __future__ import annotations

import os
import re

import yaml
from kubernetes import client

from .ansible import REPO, run_playbook
from .kubeutil import delete_namespaces, kueue_plurals, wait_for

CONFIGURE = os.path.join(REPO, "playbooks", "configure_queues.yml")
STATUS = os.path.join(REPO, "playbooks", "status.yml")
QUEUES_VARS = os.path.join(REPO, "playbooks", "vars", "queues.yml")
QUEUES = ["-e", "@" + QUEUES_VARS]
CONFIG = yaml.safe_load(open(QUEUES_VARS))["kueue_resources"]
PLURALS = kueue_plurals("ResourceFlavor", "Cohort", "WorkloadPriorityClass", "ClusterQueue", "LocalQueue")


def _remove_queue_objects(kube):
    custom = client.CustomObjectsApi(kube)
    for obj in reversed(CONFIG):
        group, version = obj["apiVersion"].split("/")
        meta = obj["metadata"]
        try:
            if meta.get("namespace"):
                custom.delete_namespaced_custom_object(group, version, meta["namespace"], PLURALS[obj["kind"]], meta["name"])
            else:
                custom.delete_cluster_custom_object(group, version, PLURALS[obj["kind"]], meta["name"])
        except client.exceptions.ApiException as exc:
            if exc.status != 404:
                raise
    core = client.CoreV1Api(kube)
    teams = sorted({o["metadata"]["namespace"] for o in CONFIG if o["metadata"].get("namespace")})
    delete_namespaces(kube, teams, wait=False)

    def gone():
        left = [n.metadata.name for n in core.list_namespace().items if n.metadata.name in teams]
        cqs = custom.list_cluster_custom_object("kueue.x-k8s.io", "v1beta2", "clusterqueues")["items"]
        return not left and not [c for c in cqs if c["metadata"]["name"].startswith("team-")]
    wait_for("the team namespaces and ClusterQueues to be gone", gone, timeout=180)


def test_configure_queues_then_status_report(cluster, kueue, tmp_path):
    try:
        first = run_playbook(CONFIGURE, extra_args=QUEUES)
        assert first.rc == 0, first.stdout[-4000:]
        applied = first.result("Apply the Kueue queue configuration")
        assert applied["changed"] is True
        assert applied.get("not_active", []) == []

        second = run_playbook(CONFIGURE, extra_args=QUEUES)
        assert second.rc == 0 and second.changed == 0, second

        report = tmp_path / "status.md"
        status = run_playbook(STATUS, extravars={"kueue_status_report": str(report)})
        assert status.rc == 0, status.stdout[-4000:]
        shown = status.result("Show the status")["msg"]
        assert shown[0].startswith("local: Kueue v") and "(helm): all " in shown[0], shown[:3]
        for cq in ("team-vision", "team-nlp"):
            row = [line for line in shown if line.strip().startswith(cq + " ")]
            assert row and "research" in row[0] and "cpu-on-demand cpu 0/" in row[0], (cq, shown)
        text = report.read_text()
        assert text.startswith("# Kueue status")
        assert "| team-vision | research |" in text and "| team-nlp | research |" in text, text
    finally:
        _remove_queue_objects(kueue)


JR_NS = "jr-team"
JR_CONFIG = [
    {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "jr-flavor"}},
    {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "jr-cq"},
     "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
         {"name": "jr-flavor", "resources": [{"name": "cpu", "nominalQuota": 1}]}]}]}},
    {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "jr-lq", "namespace": JR_NS},
     "spec": {"clusterQueue": "jr-cq"}},
]


def _job_role_plays(first_backups: str, second_backups: str) -> list:
    play = {"hosts": "kueue_clusters", "connection": "local", "gather_facts": False}
    return [
        dict(play, name="The job roles through roles:", roles=[
            {"role": "kueueops.aks.install"},
            {"role": "kueueops.aks.configure_queues",
             "vars": {"kueue_resources": JR_CONFIG, "kueue_create_namespaces": True}},
            {"role": "kueueops.aks.uninstall_with_backup", "vars": {"kueue_backup_dir": first_backups}}]),
        dict(play, name="The job roles through include_role and import_role", tasks=[
            {"name": "Not run (when: false)",
             "ansible.builtin.import_role": {"name": "kueueops.aks.uninstall_with_backup"},
             "when": False, "vars": {"kueue_backup_dir": second_backups}},
            {"name": "Reinstall", "ansible.builtin.include_role": {"name": "kueueops.aks.install"}},
            {"name": "Restore the backup of the first play",
             "ansible.builtin.import_role": {"name": "kueueops.aks.configure_queues"}, "tags": ["jr_restore"],
             "vars": {"kueue_resources": [], "kueue_resources_src": "{{ kueue_backup_path }}",
                      "kueue_create_namespaces": True}},
            {"name": "Uninstall again",
             "ansible.builtin.include_role": {"name": "kueueops.aks.uninstall_with_backup"},
             "vars": {"kueue_backup_dir": second_backups}}]),
    ]


def _results(result, play: int, fragment: str) -> list:
    """The results on host local of the tasks of play `play` whose name contains `fragment`, in order
    ({spec} stands for the argument-spec task's wording: ansible-core 2.19 quotes the entry point, 2.16 not)."""
    pattern = re.escape(fragment).replace(re.escape("{spec}"), r"Validating arguments against arg spec '?(\w+)'?")
    return [task["hosts"]["local"] for task in result.data["plays"][play]["tasks"]
            if re.search(pattern, task["task"]["name"]) and "local" in task["hosts"]]


def test_job_roles_through_roles_include_role_and_import_role(cluster, kueue, tmp_path):
    # The version and values the fixture installed (the inventory's gates would make the install an upgrade).
    pinned = {"kueue_version": cluster.state["chart_versions"][0], "kueue_feature_gates": {},
              "kueue_integrations": []}
    plays = _job_role_plays(str(tmp_path / "first"), str(tmp_path / "second"))
    try:
        # an import's tags reach the shared role's tasks (listed only, nothing runs)
        listed = run_playbook(plays, extravars=pinned, extra_args=["--list-tasks", "--tags", "jr_restore"])
        assert listed.rc == 0, listed.stdout[-3000:] + listed.stderr[-3000:]
        tagged = [line.strip() for line in listed.stdout.splitlines() if "jr_restore" in line]
        assert [line for line in tagged if line.startswith("kueueops.aks.kueue : Apply the Kueue queue configuration")], \
            listed.stdout
        untagged = "kueueops.aks.kueue : Refuse to uninstall without a backup folder"
        assert untagged not in listed.stdout, listed.stdout
        assert untagged in run_playbook(plays, extravars=pinned, extra_args=["--list-tasks"]).stdout

        run = run_playbook(plays, extravars=pinned)
        assert run.rc == 0, run.stdout[-5000:]
        # play 1: each job role validated its inputs with its own spec, then ran the shared role's entry point
        for role in ("install", "configure_queues", "uninstall_with_backup"):
            mine = _results(run, 0, "kueueops.aks.%s : {spec}" % role)
            shared = [r for r in _results(run, 0, "kueueops.aks.kueue : {spec}")
                      if r["validate_args_context"]["argument_spec_name"] == role]
            assert len(mine) == 1 and len(shared) == 1 and not mine[0].get("skipped"), (role, mine, shared)
            assert mine[0]["validate_args_context"] == dict(mine[0]["validate_args_context"], name=role,
                                                            argument_spec_name="main", type="role")
        assert _results(run, 0, "Apply the Kueue queue configuration")[0]["changed"] is True
        first = _results(run, 0, "Back up every Kueue configuration object")[0]
        assert first["counts"]["ClusterQueue"] >= 1 and first["counts"]["LocalQueue"] >= 1, first
        # play 2: the when: false import ran nothing; the include reinstalled, the import restored the first
        # play's backup (its kueue_backup_path fact), and the include backed that up and uninstalled
        mine = _results(run, 1, "kueueops.aks.uninstall_with_backup : {spec}")
        assert [bool(r.get("skipped")) for r in mine] == [True, False], mine
        detect = _results(run, 1, "Detect the install method")
        assert [bool(r.get("skipped")) for r in detect] == [True, False], detect
        assert detect[1]["install_method"] == "helm"
        assert _results(run, 1, "Install or upgrade Kueue with Helm")[-1]["changed"] is True
        restored = _results(run, 1, "Apply the Kueue queue configuration")
        assert len(restored) == 1 and restored[0]["changed"] is True, restored
        second = _results(run, 1, "Back up every Kueue configuration object")[-1]
        assert os.path.dirname(first["backup_path"]) == str(tmp_path / "first")
        assert os.path.dirname(second["backup_path"]) == str(tmp_path / "second")
        for kind in ("ResourceFlavor", "ClusterQueue", "LocalQueue"):
            assert second["counts"][kind] == first["counts"][kind], (kind, first["counts"], second["counts"])
        backed_up = "".join(open(os.path.join(second["backup_path"], name)).read()
                            for name in os.listdir(second["backup_path"]))
        assert "jr-cq" in backed_up and "jr-lq" in backed_up and "jr-flavor" in backed_up
        namespaces = [n.metadata.name for n in client.CoreV1Api(kueue).list_namespace().items]
        assert "kueue-system" not in namespaces

        # a wrong-typed variable: refused by the job role's own spec (its first task), naming the variable
        bad = run_playbook([dict(plays[0], roles=["kueueops.aks.configure_queues"])],
                           extravars={"kueue_resources": {"ResourceFlavor": "jr-flavor"}})
        assert bad.rc != 0
        failed = [(task["task"]["name"], task["hosts"]["local"]) for task in bad.data["plays"][0]["tasks"]
                  if task["hosts"].get("local", {}).get("failed")]
        assert len(failed) == 1 and failed[0][0].startswith("kueueops.aks.configure_queues : Validating arguments"), failed
        assert failed[0][1]["validate_args_context"]["name"] == "configure_queues", failed
        assert failed[0][1]["validate_args_context"]["argument_spec_name"] == "main", failed
        assert "kueue_resources" in failed[0][1]["msg"] and "list" in failed[0][1]["msg"], failed
    finally:
        delete_namespaces(kueue, [JR_NS], wait=False)
