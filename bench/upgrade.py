#!/usr/bin/env python3
"""Benchmark: playbooks/upgrade.yml against the upgrade as users do it by hand today (issue 15).

Not a timed test. One run, one local cluster (tests/harness), the same work twice from the same state:
Kueue 0.15.0 (it stores v1beta1) installed by site.yml with the local inventory, then a configuration written at
v1beta1 - 1 ResourceFlavor, N_CQ ClusterQueues, N_NS namespaces of N_LQ LocalQueues - and N_JOBS Jobs whose
Workloads stay pending (the queues have no quota), then Kueue 0.19.2:

- (a) ``ansible-playbook playbooks/upgrade.yml -e kueue_version=0.19.2``: the plan, a verified backup, the hops
  0.15.0 -> 0.17.0 (helm upgrade, verify, storage migration, storedVersions trimmed) -> 0.19.2, the comparison
  with the backup;
- (b) by hand, as Kueue's upgrade notes have it: a backup with ``kubectl get -o yaml`` of every Kueue kind,
  ``helm upgrade -f <helm get values> --wait`` to 0.17.0, the migration the way Kueue's ``hack/migrate-to-v1beta2.sh``
  does it (for each kind, and for namespaced kinds each namespace: ``kubectl get`` the names, then ``kubectl
  annotate`` them in batches of 100 with ``kueue.x-k8s.io/storage-version=v1beta2``), ``kubectl patch`` of each
  CRD's ``status.storedVersions`` (the script leaves it), then the same ``helm upgrade`` to 0.19.2.
  No plan, no verification beyond helm's wait, no comparison.

Both must end in the same state, checked from etcd itself: every Kueue object stored as v1beta2, every CRD's
storedVersions [v1beta2], the same objects and Workloads. Wall time per phase, the migration's objects per second,
and the ratio of the totals are written to bench/results/upgrade-<date>.json and .md.

    .venv/bin/python bench/upgrade.py [--run-dir /tmp/bench-upgrade] [--keep-cluster]
"""
from __future__ import annotations

import argparse
import base64
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
if REPO not in sys.path:
    sys.path.insert(0, REPO)

GROUP = "kueue.x-k8s.io"
N_CQ, N_NS, N_LQ, N_JOBS = 200, 8, 100, 200
FROM, HOP, TO = "0.15.0", "0.17.0", "0.19.2"
# Kueue's hack/migrate-to-v1beta2.sh: its kinds, in its order, and its batch size.
SCRIPT_KINDS = ("cohorts", "workloadpriorityclasses", "localqueues", "clusterqueues", "resourceflavors",
                "admissionchecks", "provisioningrequestconfigs", "multikueueclusters", "multikueueconfigs",
                "topologies", "workloads")
BATCH = 100
ANSIBLE = os.path.join(REPO, ".venv", "bin", "ansible-playbook")
INVENTORY = os.path.join(REPO, "playbooks", "inventory", "local.yml")


def log(msg):
    print("[bench-upgrade %s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


class Run:
    def __init__(self, args):
        from tests.harness.cluster import Cluster
        self.args = args
        os.environ["KUEUEOPS_RUN_DIR"] = args.run_dir
        self.cluster = Cluster(args.run_dir)
        self.started = False
        self.work = tempfile.mkdtemp(prefix="bench-upgrade-")

    # ------------------------------------------------------------------ cluster
    def up(self):
        from tests.harness.cluster import Cluster
        if not self.cluster.running():
            log("starting the local cluster in %s" % self.args.run_dir)
            subprocess.run([sys.executable, "-m", "tests.harness", "up"], cwd=REPO, check=True)
            self.started = True
            self.cluster = Cluster(self.args.run_dir)
        self.env = dict(os.environ, **self.cluster.env())
        self.env["ANSIBLE_COLLECTIONS_PATH"] = os.path.join(REPO, ".venv", "collections")
        self.env["PATH"] = os.path.dirname(self.env["HELM_V3"]) + os.pathsep + self.env["PATH"]
        from kubernetes import client, config
        self.api = config.new_client_from_config(self.cluster.kubeconfig)
        self.custom = client.CustomObjectsApi(self.api)
        self.core = client.CoreV1Api(self.api)
        self.batch = client.BatchV1Api(self.api)
        self.ext = client.ApiextensionsV1Api(self.api)

    def down(self):
        if self.started and not self.args.keep_cluster:
            subprocess.run([sys.executable, "-m", "tests.harness", "down"], cwd=REPO, check=False)

    def sh(self, *argv, check=True):
        proc = subprocess.run(list(argv), env=self.env, capture_output=True, text=True)
        if check and proc.returncode != 0:
            raise RuntimeError("%s failed (%d): %s" % (" ".join(argv[:4]), proc.returncode, proc.stderr[-2000:]))
        return proc

    def playbook(self, playbook, **extravars):
        env = dict(self.env, ANSIBLE_STDOUT_CALLBACK="test_json",
                   ANSIBLE_CALLBACK_PLUGINS=os.path.join(REPO, "tests", "integration", "callback_plugins"))
        proc = subprocess.run([ANSIBLE, "-i", INVENTORY, playbook, "-e", json.dumps(extravars)], env=env,
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError("%s failed: %s%s" % (playbook, proc.stdout[-3000:], proc.stderr[-2000:]))
        return json.loads(proc.stdout[proc.stdout.index("{"):])

    # ------------------------------------------------------------------ the starting state
    def reset(self):
        """No Kueue, no bench namespace: then Kueue 0.15.0 with the configuration at v1beta1 and pending Jobs."""
        play = [{"name": "Reset", "hosts": "local", "gather_facts": False, "tasks": [
            {"kueueops.aks.kueue_helm": {"state": "absent", "delete_namespace": True,
                                         "kubeconfig": "{{ kueue_kubeconfig }}"}}]}]
        path = os.path.join(self.work, "reset.yml")
        with open(path, "w") as handle:
            json.dump(play, handle)
        self.playbook(path)
        names = [n.metadata.name for n in self.core.list_namespace().items if n.metadata.name.startswith("bu-")]
        if names:
            self.sh("kubectl", "delete", "namespace", *names, "--wait=true", "--timeout=300s")
        log("installing Kueue %s (site.yml)" % FROM)
        self.playbook(os.path.join(REPO, "playbooks", "site.yml"), kueue_version=FROM)
        started = time.time()
        v1 = GROUP + "/v1beta1"
        self.custom.create_cluster_custom_object(GROUP, "v1beta1", "resourceflavors", {
            "apiVersion": v1, "kind": "ResourceFlavor", "metadata": {"name": "bu-flavor"}})
        for i in range(N_CQ):
            self.custom.create_cluster_custom_object(GROUP, "v1beta1", "clusterqueues", {
                "apiVersion": v1, "kind": "ClusterQueue", "metadata": {"name": "bu-cq-%03d" % i},
                "spec": {"cohort": "bu-cohort-%d" % (i % 10), "namespaceSelector": {},
                         "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                             {"name": "bu-flavor", "resources": [{"name": "cpu", "nominalQuota": "0"}]}]}]}})
        for n in range(N_NS):
            ns = "bu-ns-%d" % n
            self.core.create_namespace({"metadata": {"name": ns}})
            for i in range(N_LQ):
                self.custom.create_namespaced_custom_object(GROUP, "v1beta1", ns, "localqueues", {
                    "apiVersion": v1, "kind": "LocalQueue", "metadata": {"name": "bu-lq-%03d" % i, "namespace": ns},
                    "spec": {"clusterQueue": "bu-cq-%03d" % ((n * N_LQ + i) % N_CQ)}})
        for j in range(N_JOBS):
            ns = "bu-ns-%d" % (j % N_NS)
            self.batch.create_namespaced_job(ns, {
                "apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": "bu-job-%03d" % j, "labels": {"kueue.x-k8s.io/queue-name": "bu-lq-%03d" % (j % N_LQ)}},
                "spec": {"suspend": True, "template": {"spec": {"restartPolicy": "Never", "containers": [{
                    "name": "c", "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "100m"}}}]}}}})
        deadline = time.time() + 600
        while len(self.workloads()) < N_JOBS:
            if time.time() > deadline:
                raise RuntimeError("the Workloads of the bench Jobs were not all created")
            time.sleep(2)
        stored = self.etcd()
        assert set(stored.values()) == {GROUP + "/v1beta1"}, "0.15.0 should store every object as v1beta1"
        log("state: %d Kueue objects in etcd, all v1beta1 (%.0f s to create)" % (len(stored), time.time() - started))
        return stored

    def workloads(self):
        return self.custom.list_cluster_custom_object(GROUP, "v1beta1", "workloads")["items"]

    def etcd(self):
        """{etcd key: apiVersion} of every Kueue object as etcd stores it (the harness' etcd, loopback)."""
        prefix = "/registry/%s/" % GROUP
        end = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        body = json.dumps({"key": base64.b64encode(prefix.encode()).decode(),
                           "range_end": base64.b64encode(end.encode()).decode()}).encode()
        url = "http://127.0.0.1:%d/v3/kv/range" % self.cluster.state["ports"]["etcd"]
        with urllib.request.urlopen(urllib.request.Request(url, data=body), timeout=30) as response:
            kvs = json.load(response).get("kvs") or []
        return dict((base64.b64decode(kv["key"]).decode(), json.loads(base64.b64decode(kv["value"]))["apiVersion"])
                    for kv in kvs)

    def end_state(self, before):
        stored = self.etcd()
        crds = dict((c.metadata.name, list(c.status.stored_versions))
                    for c in self.ext.list_custom_resource_definition().items if c.spec.group == GROUP)
        return {"objects_kept": set(before) <= set(stored), "all_v1beta2": set(stored.values()) == {GROUP + "/v1beta2"},
                "stored_versions_trimmed": all(v == ["v1beta2"] for v in crds.values()),
                "workloads": len(self.custom.list_cluster_custom_object(GROUP, "v1beta2", "workloads")["items"])}

    # ------------------------------------------------------------------ (a) the collection
    def collection(self):
        started = time.time()
        out = self.playbook(os.path.join(REPO, "playbooks", "upgrade.yml"), kueue_version=TO,
                            kueue_backup_dir=os.path.join(self.work, "backups"))
        total = time.time() - started
        phases, migrated, tasks = {}, 0, []
        for play in out["plays"]:
            for task in play["tasks"]:
                # a role's task is named "<role> : <task>"
                name, res = task["task"]["name"].split(" : ")[-1], task["hosts"].get("local") or {}
                seconds = task["task"].get("seconds")
                if seconds is None:
                    continue
                tasks.append((name, seconds))
                phase = _phase(name)
                if phase:
                    phases[phase] = phases.get(phase, 0.0) + seconds
                if name.startswith("Rewrite every Kueue object"):
                    migrated += res.get("rewritten") or 0
        phases["the other tasks, ansible-playbook's start"] = total - sum(phases.values())
        return {"total": total, "phases": phases, "migrated": migrated, "tasks": tasks}

    # ------------------------------------------------------------------ (b) by hand
    def by_hand(self):
        phases, started = {}, time.time()

        def phase(name, func):
            t0 = time.time()
            out = func()
            phases[name] = phases.get(name, 0.0) + time.time() - t0
            return out
        phase("backup", self.hand_backup)
        phase("hop 1: helm upgrade %s -> %s" % (FROM, HOP), lambda: self.hand_helm(HOP))
        migrated = phase("storage migration", self.hand_migrate)
        phase("storage migration", self.hand_trim)
        phase("hop 2: helm upgrade %s -> %s" % (HOP, TO), lambda: self.hand_helm(TO))
        return {"total": time.time() - started, "phases": phases, "migrated": migrated}

    def hand_backup(self):
        folder = os.path.join(self.work, "by-hand-backup")
        os.makedirs(folder, exist_ok=True)
        for kind in SCRIPT_KINDS:
            proc = self.sh("kubectl", "get", "%s.%s" % (kind, GROUP), "-A", "-o", "yaml")
            with open(os.path.join(folder, kind + ".yaml"), "w") as handle:
                handle.write(proc.stdout)

    def hand_helm(self, version):
        """helm upgrade with the values the release was installed with (``helm get values``: the user-supplied ones).
        Not ``--reuse-values``: it keeps the old chart's computed values too, and 0.17.0's chart with 0.15.0's
        then runs the 0.15.0 image with an empty --zap-log-level, which exits at once (seen here)."""
        values = os.path.join(self.work, "values.yaml")
        with open(values, "w") as handle:
            handle.write(self.sh(self.env["HELM_V3"], "get", "values", "kueue", "-n", "kueue-system", "-o",
                                 "yaml").stdout)
        self.sh(self.env["HELM_V3"], "upgrade", "kueue", self.env["KUEUE_CHART_REF"], "--version", version,
                "--plain-http", "-n", "kueue-system", "-f", values, "--wait", "--timeout", "10m")

    def hand_migrate(self):
        """What hack/migrate-to-v1beta2.sh does (default flags): names listed at v1beta1 per kind, per namespace for
        namespaced kinds, then annotated in batches of 100."""
        namespaces = self.sh("kubectl", "get", "ns", "-o", "jsonpath={range .items[*]}{.metadata.name}{\"\\n\"}{end}"
                             ).stdout.split()
        resources = json.loads(self.sh("kubectl", "get", "--raw", "/apis/%s/v1beta1" % GROUP).stdout)["resources"]
        namespaced = dict((r["name"], r["namespaced"]) for r in resources)
        migrated = 0
        for kind in SCRIPT_KINDS:
            self.sh("kubectl", "get", "crd", "%s.%s" % (kind, GROUP), "-o",
                    "jsonpath={.spec.versions[?(@.storage==true)].name}")
            for ns in (namespaces if namespaced.get(kind) else [None]):
                where = ["-n", ns] if ns else []
                names = self.sh("kubectl", "get", "%s.v1beta1.%s" % (kind, GROUP), *where, "-o",
                                "jsonpath={range .items[*]}{.metadata.name}{\"\\n\"}{end}").stdout.split()
                for start in range(0, len(names), BATCH):
                    chunk = names[start:start + BATCH]
                    out = self.sh("kubectl", "annotate", "%s.%s" % (kind, GROUP), *chunk,
                                  "kueue.x-k8s.io/storage-version=v1beta2", "--overwrite", "-o", "name", *where)
                    migrated += len(out.stdout.split())
        return migrated

    def hand_trim(self):
        for crd in self.ext.list_custom_resource_definition().items:
            if crd.spec.group == GROUP:
                self.sh("kubectl", "patch", "crd", crd.metadata.name, "--subresource=status", "--type=merge", "-p",
                        json.dumps({"status": {"storedVersions": ["v1beta2"]}}))


def _phase(task):
    for prefix, phase in (("Back up every Kueue", "backup"), ("Plan the upgrade", "plan"),
                          ("Upgrade Kueue with Helm to 0.17.0", "hop 1: helm upgrade %s -> %s" % (FROM, HOP)),
                          ("Verify Kueue 0.17.0", "hop 1: verify"),
                          ("Upgrade Kueue with Helm to 0.19.2", "hop 2: helm upgrade %s -> %s" % (HOP, TO)),
                          ("Verify Kueue 0.19.2", "hop 2: verify"),
                          ("Rewrite every Kueue object", "storage migration"),
                          ("Compare the live configuration", "comparison with the backup")):
        if task.startswith(prefix):
            return phase
    return None


def markdown(res):
    a, b = res["collection"], res["by_hand"]
    lines = ["# playbooks/upgrade.yml against the upgrade by hand, %s" % res["date"], "",
             "Kueue %s -> %s, %d Kueue objects stored as v1beta1 (%d ClusterQueues, %d LocalQueues, %d pending "
             "Workloads, 1 ResourceFlavor); %s." % (FROM, TO, res["objects"], N_CQ, N_NS * N_LQ, N_JOBS, res["machine"]),
             "", "| phase | upgrade.yml (s) | by hand (s) |", "|---|---:|---:|"]
    for phase in sorted(set(a["phases"]) | set(b["phases"])):
        lines.append("| %s | %s | %s |" % (phase, _fmt(a["phases"].get(phase)), _fmt(b["phases"].get(phase))))
    lines.append("| **total** | **%.1f** | **%.1f** |" % (a["total"], b["total"]))
    lines += ["", "Storage migration: upgrade.yml rewrote %d objects at %.0f objects/s; by hand %d annotated at %.0f "
              "objects/s. Ratio of the totals (by hand / upgrade.yml): %.2f." % (
                  a["migrated"], a["migrated"] / a["phases"]["storage migration"], b["migrated"],
                  b["migrated"] / b["phases"]["storage migration"], b["total"] / a["total"]),
              "", "End state, both: %s / %s" % (json.dumps(res["end_collection"], sort_keys=True),
                                                json.dumps(res["end_by_hand"], sort_keys=True))]
    return "\n".join(lines) + "\n"


def _fmt(value):
    return "" if value is None else "%.1f" % value


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run-dir", default="/tmp/bench-upgrade", help="harness folder of the cluster")
    parser.add_argument("--keep-cluster", action="store_true", help="leave the cluster running")
    args = parser.parse_args(argv)
    run = Run(args)
    try:
        run.up()
        res = {"date": datetime.datetime.now().isoformat(timespec="seconds"),
               "machine": "%d cores" % os.cpu_count()}
        before = run.reset()
        res["objects"] = len(before)
        log("(a) playbooks/upgrade.yml")
        res["collection"] = run.collection()
        res["end_collection"] = run.end_state(before)
        before = run.reset()
        log("(b) by hand")
        res["by_hand"] = run.by_hand()
        res["end_by_hand"] = run.end_state(before)
    finally:
        run.down()
    for key in ("end_collection", "end_by_hand"):
        state = res[key]
        if not (state["objects_kept"] and state["all_v1beta2"] and state["stored_versions_trimmed"]
                and state["workloads"] == N_JOBS):
            raise SystemExit("%s: the upgrade did not reach the expected state: %s" % (key, state))
    stamp = res["date"].replace(":", "")
    os.makedirs(os.path.join(BENCH, "results"), exist_ok=True)
    with open(os.path.join(BENCH, "results", "upgrade-%s.json" % stamp), "w") as handle:
        json.dump(res, handle, indent=2, sort_keys=True)
    text = markdown(res)
    with open(os.path.join(BENCH, "results", "upgrade-%s.md" % stamp), "w") as handle:
        handle.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
