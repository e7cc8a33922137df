#!/usr/bin/env python3
"""kueue_queues against kubernetes.core.k8s on a large Kueue configuration (issue 4).

One run, one cluster (the local control plane of tests/harness with the real
Kueue 0.19.2), the same starting state for every method:

  for method in kueue_queues, kubernetes.core.k8s single list task, kubernetes.core.k8s loop:
      delete every bench Kueue object and wait until they are gone (namespaces stay)
      first apply   -- wall clock of the ansible-playbook process, API requests
      verify        -- every object exists; every ClusterQueue/LocalQueue Active
      re-run        -- wall clock, API requests, changed count

API requests are the kube-apiserver's ``apiserver_request_total`` counters,
read before and after each ansible-playbook process and subtracted. They are
split by verb, by ``dry_run`` and by what the request is about:

* ``bench``: kueue.x-k8s.io resources and namespaces, main resource (what an
  apply tool touches). Writes are POST/PUT/PATCH/APPLY/DELETE; reads GET/LIST;
  WATCH is counted apart (one long request, not a round trip per object);
* ``kueue_status``: the status subresource of kueue.x-k8s.io resources, written
  by the Kueue manager when queues become Active (a consequence of the objects
  being created, not a request of the apply tool);
* ``discovery``: non-resource requests (/api, /apis, /openapi...);
* ``other``: everything else (node agent, kube-controller-manager, leases...).

An idle window (nothing running, all bench objects present) measures the
background rate of each bucket. Then, unless switched off: variants
(kueue_queues with ``src:`` and with ``wait: false``, the single list task with
``server_side_apply``), kueue_queues and the single list task again through
bench/latency_proxy.py (+``--rtt-ms`` per round trip, as against a remote
cluster), and kueue_queues' own phase split (bench/profile_module.py). CPU
seconds of each run are recorded per process.

The kubernetes.core loop runs on a 10% subset first; with ``--loop-fraction
auto`` the full loop follows when the subset, scaled linearly, estimates it
(first apply + re-run) within ``--loop-budget`` minutes, else the subset's
numbers are extrapolated (and marked so).

Usage (from the checkout; `make bench`):

    .venv/bin/python bench/run.py [--loop-fraction auto|1|0.1] [--keep-cluster]

It starts the local cluster in $KUEUEOPS_RUN_DIR (default /tmp/bench-run)
unless one is running there, installs Kueue with Helm unless installed, and
stops what it started. kubernetes.core comes from PyPI's ``ansible`` package in
a separate venv (--bench-venv, default /tmp/bench-venv, created if missing).
Results: bench/results/<date>.json and .md.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import threading
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
if REPO not in sys.path:
    sys.path.insert(0, REPO)
if BENCH not in sys.path:
    sys.path.insert(0, BENCH)

import gen_config  # noqa: E402
import payload  # noqa: E402
from tests.harness import proc  # noqa: E402

GROUP = "kueue.x-k8s.io"
VERSION = "v1beta2"
KUEUE_VERSION = "0.19.2"
PLURALS = {"ResourceFlavor": "resourceflavors", "Cohort": "cohorts", "WorkloadPriorityClass": "workloadpriorityclasses",
           "ClusterQueue": "clusterqueues", "LocalQueue": "localqueues"}
DELETE_ORDER = ("LocalQueue", "ClusterQueue", "WorkloadPriorityClass", "Cohort", "ResourceFlavor")
WRITE_VERBS = ("POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION")
READ_VERBS = ("GET", "LIST")
SELECTOR = "%s=true" % gen_config.LABEL
VENV_BIN = os.path.join(REPO, ".venv", "bin")
# method -> (playbook, which ansible runs it: the project venv or the PyPI bench venv, title)
METHODS = {
    "kueue_queues": ("kueue_queues.yml", "project", "kueue_queues"),
    "k8s_list": ("k8s_list.yml", "bench", "k8s single list task"),
    "k8s_loop": ("k8s_loop.yml", "bench", "k8s loop"),
    # variants (--variants): what the time of the main methods is made of
    "kueue_queues_src": ("kueue_queues_src.yml", "project", "kueue_queues, src: file instead of resources: list"),
    "kueue_queues_nowait": ("kueue_queues_nowait.yml", "project", "kueue_queues, wait: false"),
    "k8s_list_ssa": ("k8s_list_ssa.yml", "bench", "k8s single list task, server_side_apply"),
    "baseline_project": ("baseline.yml", "project", "baseline (project venv)"),
    # bench/scale.py (issue 17, ten times the scale): the collection's modules as users run them
    "scale_queues": ("scale_queues.yml", "project", "kueue_queues, src: file"),
    "scale_backup": ("scale_backup.yml", "project", "kueue_backup"),
    "scale_backup_verify": ("scale_backup_verify.yml", "project", "kueue_backup verify_path"),
    "scale_verify": ("scale_verify.yml", "project", "kueue_verify, queues: true"),
    "baseline_bench_venv": ("baseline.yml", "bench", "baseline (bench venv)"),
    # the floor of any module given kueue_queues.yml's arguments (bench/playbooks/library/bench_module_floor.py)
    "module_floor": ("module_floor.yml", "project", "module floor (the same arguments, a module that does nothing)"),
    # --baseline-ref REV: kueue_queues.yml with the collection as it was at REV, the project venv's ansible (the same
    # playbook and objects: a change's before and after, in one run)
    "kueue_queues_baseline": ("kueue_queues.yml", "baseline", "kueue_queues at --baseline-ref"),
}
MAIN_METHODS = ("kueue_queues", "k8s_list", "k8s_loop")
VARIANTS = ("kueue_queues_src", "kueue_queues_nowait", "k8s_list_ssa")
# --quick: the variant the roles run (kueue_resources_src reaches the module as src, issue 17 item 2)
QUICK_VARIANTS = ("kueue_queues_src",)
BENCH_PIP = ["ansible>=12,<13", "kubernetes>=29"]


def log(msg):
    print("[bench %s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


# ------------------------------------------------------------------- metrics
_SAMPLE = re.compile(r'^apiserver_request_total\{([^}]*)\}\s+([0-9.eE+-]+)$')
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def scrape(cluster):
    """{label tuple: count} of apiserver_request_total."""
    text = cluster.api_get("/metrics", timeout=30).decode()
    out = {}
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if not match:
            continue
        labels = dict(_LABEL.findall(match.group(1)))
        key = tuple(sorted(labels.items()))
        out[key] = out.get(key, 0) + float(match.group(2))
    return out


def bucket_of(labels):
    group, resource, sub = labels.get("group", ""), labels.get("resource", ""), labels.get("subresource", "")
    if resource == "":
        return "discovery"
    if group == GROUP and sub == "status":
        return "kueue_status"
    if (group == GROUP and sub == "") or (group == "" and resource == "namespaces" and sub == ""):
        return "bench"
    if resource == "":
        return "discovery"
    return "other"


def delta(before, after):
    """Request counts between two scrapes, summarised."""
    detail = {}
    for key, value in after.items():
        diff = value - before.get(key, 0)
        if diff <= 0:
            continue
        labels = dict(key)
        verb = labels.get("verb", "")
        dry = "dry-run" if labels.get("dry_run") else ""
        name = "%s %s%s%s %s" % (verb, labels.get("resource") or labels.get("subresource") or "-",
                                 "/" + labels["subresource"] if labels.get("resource") and labels.get("subresource")
                                 else "", " (%s)" % dry if dry else "", labels.get("code", ""))
        bucket = bucket_of(labels)
        detail.setdefault(bucket, {})
        detail[bucket][name] = detail[bucket].get(name, 0) + int(round(diff))
    summary = {}
    for bucket, items in detail.items():
        s = {"writes": 0, "dry_run_writes": 0, "reads": 0, "watches": 0, "total": 0, "by_verb": {}}
        for name, n in items.items():
            verb = name.split(" ", 1)[0]
            s["total"] += n
            s["by_verb"][verb + (" dry-run" if "(dry-run)" in name else "")] = \
                s["by_verb"].get(verb + (" dry-run" if "(dry-run)" in name else ""), 0) + n
            if verb in WRITE_VERBS:
                s["dry_run_writes" if "(dry-run)" in name else "writes"] += n
            elif verb in READ_VERBS:
                s["reads"] += n
            elif verb == "WATCH":
                s["watches"] += n
        summary[bucket] = s
    for bucket in ("bench", "kueue_status", "discovery", "other"):
        summary.setdefault(bucket, {"writes": 0, "dry_run_writes": 0, "reads": 0, "watches": 0, "total": 0,
                                    "by_verb": {}})
    return {"summary": summary, "detail": detail}


# ----------------------------------------------------------------------- CPU
def _proc_cpu(pid):
    """utime + stime of a process in seconds, None once it is gone (tests/harness/proc.py reads /proc)."""
    stat = proc.read_stat(pid)
    return None if stat is None else stat[2]


def cpu_snapshot(cluster):
    """CPU seconds used so far: the whole machine (busy), each control-plane process, the
    Kueue manager, and this process's waited-for children (ansible-playbook and its modules)."""
    import resource
    with open("/proc/stat") as handle:
        parts = [int(x) for x in handle.readline().split()[1:]]
    idle = parts[3] + (parts[4] if len(parts) > 4 else 0)
    out = {"machine_busy": (sum(parts) - idle) / proc.TICK, "machine_total": sum(parts) / proc.TICK}
    procs = dict((name, p["pid"]) for name, p in (cluster.state.get("processes") or {}).items())
    for pid, _marker in cluster._agent_children():
        procs["kueue-manager"] = pid
    for name, pid in procs.items():
        value = _proc_cpu(pid)
        if value is not None:
            out[name] = value
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    out["ansible-playbook (+modules)"] = usage.ru_utime + usage.ru_stime
    return out


def cpu_delta(before, after, seconds):
    out = {}
    for key, value in after.items():
        if key in before and key not in ("machine_total",):
            out[key] = round(value - before[key], 2)
    total = after["machine_total"] - before["machine_total"]
    out["machine_busy_percent"] = round(100.0 * out.pop("machine_busy") / total, 1) if total > 0 else None
    out["wall_seconds"] = round(seconds, 2)
    return out


class ModulePeakRss(threading.Thread):
    """Polls /proc for the module process of one ansible-playbook run: a process below ``root`` whose command line
    holds ``AnsiballZ_<module>`` (ansible-core's default, no pipelining). Keeps, per such process, the last VmHWM
    (the kernel's peak resident set, which only grows) and CPU seconds read before it exits; ``result()`` gives
    the largest. Read every ``interval`` seconds: what a process does in its last interval is not seen."""

    def __init__(self, root, module, interval=0.05):
        super().__init__(daemon=True)
        self.root, self.needle, self.interval = root, "AnsiballZ_%s" % module, interval
        self.seen = {}  # pid -> {"vmhwm_kb", "vmrss_max_kb", "cpu_seconds", "samples"}
        self.done = threading.Event()

    @staticmethod
    def _cmdline(pid):
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as handle:
                return handle.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            return ""

    @staticmethod
    def _status_kb(pid):
        out = {}
        try:
            with open("/proc/%d/status" % pid) as handle:
                for line in handle:
                    if line.startswith(("VmHWM:", "VmRSS:")):
                        out[line.split(":", 1)[0]] = int(line.split()[1])
        except OSError:
            return None
        return out

    def _sample(self, pid):
        status, stat = self._status_kb(pid), proc.read_stat(pid)
        if not status or stat is None:
            return False
        entry = self.seen.setdefault(pid, {"vmhwm_kb": 0, "vmrss_max_kb": 0, "cpu_seconds": 0.0, "samples": 0})
        entry["vmhwm_kb"] = max(entry["vmhwm_kb"], status.get("VmHWM", 0))
        entry["vmrss_max_kb"] = max(entry["vmrss_max_kb"], status.get("VmRSS", 0))
        entry["cpu_seconds"] = max(entry["cpu_seconds"], stat[2])
        entry["samples"] += 1
        return True

    def run(self):
        live = set()
        next_scan = 0.0
        while not self.done.is_set():
            now = time.monotonic()
            if now >= next_scan:  # look for new module processes (a walk of /proc), 5 times a second
                next_scan = now + 0.2
                for pid in proc.tree(self.root):
                    if pid not in self.seen and self.needle in self._cmdline(pid):
                        live.add(pid)
            for pid in list(live):
                if not self._sample(pid):
                    live.discard(pid)
            self.done.wait(self.interval)

    def result(self):
        self.done.set()
        self.join(5)
        if not self.seen:
            return None
        peak = max(self.seen.values(), key=lambda e: e["vmhwm_kb"])
        return {"processes": len(self.seen), "peak_rss_mb": round(peak["vmhwm_kb"] / 1024.0, 1),
                "max_rss_seen_mb": round(peak["vmrss_max_kb"] / 1024.0, 1),
                "module_cpu_seconds": round(peak["cpu_seconds"], 2), "samples": peak["samples"]}


# ------------------------------------------------------------------- cluster
class Bench:
    def __init__(self, args):
        self.args = args
        os.environ.setdefault("KUEUEOPS_RUN_DIR", args.run_dir)
        os.environ["KUEUEOPS_RUN_DIR"] = args.run_dir
        from tests.harness.cluster import Cluster
        self.cluster = Cluster(args.run_dir)
        self.started_cluster = False
        self.installed_kueue = False
        self.work = args.work_dir
        os.makedirs(self.work, exist_ok=True)
        self.results = {"started": datetime.datetime.now().isoformat(timespec="seconds")}

    # -- setup
    def up(self):
        if not self.cluster.running():
            log("starting the local cluster in %s" % self.args.run_dir)
            subprocess.run([sys.executable, "-m", "tests.harness", "up"], cwd=REPO, check=True,
                           env=dict(os.environ, KUEUEOPS_RUN_DIR=self.args.run_dir))
            self.started_cluster = True
            from tests.harness.cluster import Cluster
            self.cluster = Cluster(self.args.run_dir)
        self.env = dict(os.environ)
        self.env.update(self.cluster.env())
        self.kubeconfig = self.cluster.kubeconfig
        from kubernetes import client, config
        self.api = config.new_client_from_config(self.kubeconfig)
        self.custom = client.CustomObjectsApi(self.api)
        self.core = client.CoreV1Api(self.api)
        self.apps = client.AppsV1Api(self.api)
        self._install_kueue()

    def _install_kueue(self):
        from kubernetes.client.exceptions import ApiException
        try:
            self.apps.read_namespaced_deployment("kueue-controller-manager", "kueue-system")
            log("Kueue is installed; reusing it")
        except ApiException as exc:
            if exc.status != 404:
                raise
            log("installing Kueue %s with Helm" % KUEUE_VERSION)
            env = self.cluster.helm_env()
            env["PATH"] = self.env["PATH"]
            subprocess.run([self.env["HELM_V3"], "install", "kueue", self.env["KUEUE_CHART_REF"], "--version",
                            KUEUE_VERSION, "--plain-http", "-n", "kueue-system", "--create-namespace", "--wait",
                            "--timeout", "10m"], check=True, env=env, stdout=subprocess.DEVNULL)
            self.installed_kueue = True
        probe = {"apiVersion": "%s/%s" % (GROUP, VERSION), "kind": "ClusterQueue",
                 "metadata": {"name": "bench-probe"}, "spec": {}}
        deadline = time.time() + 300
        while True:
            try:
                self.custom.create_cluster_custom_object(GROUP, VERSION, "clusterqueues", probe, dry_run="All")
                break
            except Exception:  # noqa: BLE001 - the webhooks are not answering yet
                if time.time() > deadline:
                    raise
                time.sleep(2)
        dep = self.apps.read_namespaced_deployment("kueue-controller-manager", "kueue-system")
        self.results["kueue"] = {"version": KUEUE_VERSION,
                                 "image": dep.spec.template.spec.containers[0].image}

    def down(self):
        if self.started_cluster and not self.args.keep_cluster:
            log("stopping the cluster this run started")
            subprocess.run([sys.executable, "-m", "tests.harness", "down"], cwd=REPO, check=False,
                           env=dict(os.environ, KUEUEOPS_RUN_DIR=self.args.run_dir))

    def bench_venv(self):
        venv = self.args.bench_venv
        py = os.path.join(venv, "bin", "python")
        if not os.path.exists(os.path.join(venv, "bin", "ansible-playbook")):
            log("creating %s with %s" % (venv, " ".join(BENCH_PIP)))
            subprocess.run(["python3", "-m", "venv", venv], check=True)
            subprocess.run([py, "-m", "pip", "install", "-q"] + BENCH_PIP, check=True)
        out = subprocess.run([py, "-c", (
            "import json, importlib.metadata as m, ansible_collections.kubernetes.core as kc, os\n"
            "g = json.load(open(os.path.join(list(kc.__path__)[0], 'MANIFEST.json')))\n"
            "print(json.dumps({'ansible': m.version('ansible'), 'ansible-core': m.version('ansible-core'),"
            " 'kubernetes': m.version('kubernetes'), 'kubernetes.core': g['collection_info']['version']}))")],
            check=True, capture_output=True, text=True)
        self.results["bench_venv"] = dict(json.loads(out.stdout), path=venv)
        out = subprocess.run([os.path.join(VENV_BIN, "python"), "-c", (
            "import json, importlib.metadata as m\n"
            "print(json.dumps({'ansible-core': m.version('ansible-core'), 'kubernetes': m.version('kubernetes')}))")],
            check=True, capture_output=True, text=True)
        self.results["project_venv"] = json.loads(out.stdout)

    # -- state
    def baseline_collections(self):
        """A collections path holding kueueops.aks as it was at --baseline-ref (git archive of that commit), beside
        the project venv's other collections (kubernetes.core is not needed by kueue_queues.yml)."""
        ref = self.args.baseline_ref
        if not ref:
            raise SystemExit("bench/run.py: method kueue_queues_baseline needs --baseline-ref REV")
        root, dest, commit = payload.collection_at(ref, os.path.join(self.work, "baseline-collections"))
        if "baseline_ref" not in self.results:
            log("baseline: kueueops.aks at %s (%s) in %s" % (ref, commit[:12], dest))
        self.results["baseline_ref"] = {"ref": ref, "commit": commit}
        return root

    def write_config(self, fraction, name, scale=1):
        objects = gen_config.subset(gen_config.full_config(scale), fraction)
        path = os.path.join(self.work, name)
        gen_config.write(objects, path)
        return path, objects

    def ensure_namespaces(self, objects):
        from kubernetes.client.exceptions import ApiException
        for ns in gen_config.namespaces_for(objects):
            body = {"apiVersion": "v1", "kind": "Namespace", "metadata": ns}
            try:
                self.core.create_namespace(body)
            except ApiException as exc:
                if exc.status != 409:
                    raise

    def live(self, kind):
        items = []
        token = None
        while True:
            kwargs = {"label_selector": SELECTOR, "limit": 500}
            if token:
                kwargs["_continue"] = token
            page = self.custom.list_cluster_custom_object(GROUP, VERSION, PLURALS[kind], **kwargs)
            items.extend(page.get("items") or [])
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return items

    def clean(self):
        """Delete every bench Kueue object and wait until they are all gone."""
        from kubernetes.client.exceptions import ApiException
        t0 = time.time()
        for kind in DELETE_ORDER:
            items = self.live(kind)
            for item in items:
                meta = item["metadata"]
                try:
                    if meta.get("namespace"):
                        self.custom.delete_namespaced_custom_object(GROUP, VERSION, meta["namespace"],
                                                                    PLURALS[kind], meta["name"])
                    else:
                        self.custom.delete_cluster_custom_object(GROUP, VERSION, PLURALS[kind], meta["name"])
                except ApiException as exc:
                    if exc.status != 404:
                        raise
        deadline = time.time() + 300
        while any(self.live(kind) for kind in DELETE_ORDER):
            if time.time() > deadline:
                raise RuntimeError("bench objects still present after 300 s")
            time.sleep(1)
        time.sleep(self.args.settle)  # let the Kueue manager finish reacting to the deletions
        log("clean state (%.1fs)" % (time.time() - t0))

    def verify(self, objects, wait_active=True, timeout=600):
        """Every object of ``objects`` exists (same kind/namespace/name); queues Active."""
        want = set((o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]) for o in objects)
        deadline = time.time() + timeout
        while True:
            have = set()
            inactive = []
            for kind in PLURALS:
                for item in self.live(kind):
                    key = (kind, item["metadata"].get("namespace", ""), item["metadata"]["name"])
                    have.add(key)
                    if wait_active and kind in ("ClusterQueue", "LocalQueue") and key in want:
                        conds = (item.get("status") or {}).get("conditions") or []
                        if not any(c.get("type") == "Active" and c.get("status") == "True" for c in conds):
                            inactive.append(key)
            missing = want - have
            if not missing and not inactive:
                return {"objects_expected": len(want), "objects_found": len(want & have), "all_active": True,
                        "seconds_until_verified": None}
            if time.time() > deadline:
                return {"objects_expected": len(want), "objects_found": len(want & have),
                        "missing": sorted(map(list, missing))[:20], "inactive": len(inactive), "all_active": False}
            time.sleep(1)

    # -- runs
    def start_proxy(self, rtt_ms):
        """bench/latency_proxy.py in front of the API server (127.0.0.1); a kubeconfig that uses it."""
        port = self.cluster.state["ports"]["apiserver"]
        self.proxy = subprocess.Popen([sys.executable, os.path.join(BENCH, "latency_proxy.py"), "--target",
                                       "127.0.0.1:%d" % port, "--delay-ms", str(rtt_ms / 2.0)],
                                      stdout=subprocess.PIPE, text=True)
        proxy_port = int(self.proxy.stdout.readline().strip())
        with open(self.kubeconfig) as handle:
            cfg = json.load(handle)
        for cluster in cfg["clusters"]:
            cluster["cluster"]["server"] = "https://127.0.0.1:%d" % proxy_port
        path = os.path.join(self.work, "remote.kubeconfig")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            json.dump(cfg, handle)
        log("latency proxy pid %d on 127.0.0.1:%d (+%.0f ms per round trip)" % (self.proxy.pid, proxy_port, rtt_ms))
        return path

    def stop_proxy(self):
        proxy = getattr(self, "proxy", None)
        if proxy is not None and proxy.poll() is None:
            proxy.terminate()
            try:
                proxy.wait(10)
            except subprocess.TimeoutExpired:
                proxy.kill()
        self.proxy = None

    def playbook(self, method, config, label, kubeconfig=None, extra_vars=None, rss_module=None, env_extra=None):
        """Run one bench playbook; returns timings, ansible's counts and the API request delta (and, given
        ``rss_module``, the peak RSS of that module's process: ModulePeakRss)."""
        book, which, _title = METHODS[method]
        if which == "project":
            ansible_playbook = os.path.join(VENV_BIN, "ansible-playbook")
            collections = os.path.join(REPO, ".venv", "collections")
        elif which == "baseline":
            ansible_playbook = os.path.join(VENV_BIN, "ansible-playbook")
            collections = self.baseline_collections()
        else:
            ansible_playbook = os.path.join(self.args.bench_venv, "bin", "ansible-playbook")
            collections = None
        timer = os.path.join(self.work, "timer-%s.json" % label)
        stdout = os.path.join(self.work, "ansible-%s.log" % label)
        env = dict(self.env)
        env.update({
            "ANSIBLE_CALLBACK_PLUGINS": os.path.join(BENCH, "callback_plugins"),
            "ANSIBLE_CALLBACKS_ENABLED": "bench_timer",
            "BENCH_TIMER_OUT": timer,
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_RETRY_FILES_ENABLED": "0",
            "ANSIBLE_LOCALHOST_WARNING": "0",
            "ANSIBLE_INVENTORY_UNPARSED_WARNING": "0",
            "ANSIBLE_DEPRECATION_WARNINGS": "0",
            "ANSIBLE_HOME": os.path.join(self.work, "ansible-home"),
        })
        if collections:
            env["ANSIBLE_COLLECTIONS_PATH"] = collections
        else:
            env.pop("ANSIBLE_COLLECTIONS_PATH", None)
        env.update(env_extra or {})
        evars = {"bench_config": config, "bench_kubeconfig": kubeconfig or self.kubeconfig}
        evars.update(extra_vars or {})
        argv = [ansible_playbook, os.path.join(BENCH, "playbooks", book), "-e", json.dumps(evars)]
        if os.path.exists(timer):
            os.unlink(timer)
        before = scrape(self.cluster)
        cpu_before = cpu_snapshot(self.cluster)
        t0 = time.monotonic()
        with open(stdout, "w") as out:
            child = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=self.work)
            watch = ModulePeakRss(child.pid, rss_module) if rss_module else None
            if watch:
                watch.start()
            child.wait()
        seconds = time.monotonic() - t0
        rss = watch.result() if watch else None
        cpu = cpu_delta(cpu_before, cpu_snapshot(self.cluster), seconds)
        after = scrape(self.cluster)
        timing = {}
        if os.path.exists(timer):
            with open(timer) as handle:
                timing = json.load(handle)
        task = (timing.get("tasks") or [{}])[-1]
        out = {"label": label, "method": method, "seconds": round(seconds, 2), "rc": child.returncode,
               "task_seconds": task.get("seconds"), "task_results": task.get("results"),
               "changed": task.get("changed"), "failed": task.get("failed"),
               "requests": delta(before, after), "cpu_seconds": cpu, "log": stdout}
        for key in ("counts", "not_active", "msgs"):
            if task.get(key):
                out[key] = task[key]
        if rss_module:
            out["module_process"] = rss
        if child.returncode != 0:
            log("%s: ansible-playbook exited %s; see %s" % (label, child.returncode, stdout))
        s = out["requests"]["summary"]["bench"]
        log("%-26s %8.1fs  rc=%s changed=%s  writes=%d dry-run=%d reads=%d%s" % (
            label, seconds, child.returncode, out["changed"], s["writes"], s["dry_run_writes"], s["reads"],
            "  module peak RSS %s MB" % (rss or {}).get("peak_rss_mb") if rss_module else ""))
        return out

    def idle(self, seconds):
        before = scrape(self.cluster)
        t0 = time.monotonic()
        time.sleep(seconds)
        elapsed = time.monotonic() - t0
        after = scrape(self.cluster)
        d = delta(before, after)
        rates = dict((b, {k: round(v / elapsed, 3) for k, v in s.items() if k != "by_verb"})
                     for b, s in d["summary"].items())
        log("idle %.0fs: bench writes %d reads %d; other %d" % (
            elapsed, d["summary"]["bench"]["writes"], d["summary"]["bench"]["reads"], d["summary"]["other"]["total"]))
        return {"seconds": round(elapsed, 1), "requests": d, "per_second": rates}

    def settle_kueue(self, quiet_cores, settle_max):
        """Wait until the Kueue manager is quiet (below ``quiet_cores`` of CPU over 5 s), at most ``settle_max``
        seconds: it digests a large write for a while after the module returned (minutes at 10x), and that CPU
        would be counted in the next run. Returns the seconds waited and the Kueue CPU seconds used meanwhile."""
        t0 = time.monotonic()
        used = 0.0
        while True:
            before = cpu_snapshot(self.cluster).get("kueue-manager", 0.0)
            time.sleep(5)
            cpu = cpu_snapshot(self.cluster).get("kueue-manager", 0.0) - before
            used += cpu
            waited = time.monotonic() - t0
            if cpu / 5.0 < quiet_cores or waited >= settle_max:
                return {"seconds": round(waited, 1), "kueue_cpu_seconds": round(used, 1), "quiet": cpu / 5.0 < quiet_cores}

    def settled_run(self, method, config, label, kubeconfig=None):
        """``playbook`` once the Kueue manager is quiet (``settle_kueue``, after --settle seconds): a measured run of a
        few seconds would otherwise share the cores with Kueue still digesting the previous run's writes."""
        time.sleep(self.args.settle)
        settled = self.settle_kueue(self.args.quiet_cores, self.args.settle_max)
        run = self.playbook(method, config, label, kubeconfig)
        run["kueue_settle"] = settled
        return run

    def method(self, method, config, objects, label, kubeconfig=None):
        self.clean()
        first = self.playbook(method, config, label + " first apply", kubeconfig)
        t0 = time.time()
        first["verify"] = self.verify(objects)
        first["verify"]["seconds_until_verified"] = round(time.time() - t0, 1)
        log("verified %d/%d objects, all queues Active: %s" % (
            first["verify"]["objects_found"], first["verify"]["objects_expected"], first["verify"]["all_active"]))
        # The local re-run --reruns times (the median in the tables): a re-run takes seconds, so one run is at the
        # mercy of whatever else the machine does in those seconds. Through the proxy, once.
        # Each re-run starts with the Kueue manager quiet (as bench/scale.py's steps do): right after the first
        # apply it is still writing the statuses of 1,068 objects, which a run of a few seconds would share the
        # cores with.
        reruns = [self.settled_run(method, config, label + " re-run" + (" %d" % (index + 1) if index else ""),
                                   kubeconfig) for index in range(self.args.reruns if kubeconfig is None else 1)]
        out = {"objects": len(objects), "first": first, "rerun": middle(reruns, key=lambda r: r["seconds"])}
        if len(reruns) > 1:
            out["reruns_seconds"] = [r["seconds"] for r in reruns]
        return out

    def floor(self, config):
        """The module floor: bench/playbooks/module_floor.yml, kueue_queues.yml's task with its 1,068 objects given to
        a module that does nothing (bench_module_floor). What any module taking the objects as a list pays - the
        templated list finalised, the AnsiballZ payload, the JSON, Python and ansible.module_utils.basic started -
        so kueue_queues' re-run minus it is the collection's own share. Measured in pairs, --reruns times: the
        floor, then a kueue_queues re-run, each after a quiet Kueue manager (as the re-runs); a pair shares the
        machine's state of the moment, so the median of the pairs' differences is steadier than the difference of
        two medians. The floor sends no request. Returns the median floor run, with every pair."""
        runs, pairs = [], []
        for index in range(self.args.reruns):
            suffix = " %d" % (index + 1) if index else ""
            runs.append(self.settled_run("module_floor", config, "module floor" + suffix))
            paired = self.settled_run("kueue_queues", config, "kueue_queues re-run (paired)" + suffix)
            pairs.append({"floor_seconds": runs[-1]["seconds"], "kueue_queues_seconds": paired["seconds"],
                          "kueue_queues_requests": paired.get("requests")})
        out = dict(middle(runs, key=lambda r: r["seconds"]))
        out["runs_seconds"] = [r["seconds"] for r in runs]
        out["pairs"] = pairs
        out["kueue_queues_over_floor_seconds"] = round(
            middle([p["kueue_queues_seconds"] - p["floor_seconds"] for p in pairs]), 2)
        return out

    def profile(self, config):
        """kueue_queues' own time split (bench/profile_module.py), first apply and re-run."""
        self.clean()
        out = {}
        for label in ("first", "rerun"):
            proc = subprocess.run([os.path.join(VENV_BIN, "python"), os.path.join(BENCH, "profile_module.py"),
                                   "--config", config, "--kubeconfig", self.kubeconfig],
                                  capture_output=True, text=True, env=dict(self.env, ANSIBLE_COLLECTIONS_PATH=os.path.join(
                                      REPO, ".venv", "collections")))
            if proc.returncode != 0:
                out[label] = {"error": proc.stderr[-3000:]}
            else:
                out[label] = json.loads(proc.stdout)
            log("profile %s: %s" % (label, json.dumps(out[label].get("phases_seconds"))))
            time.sleep(self.args.settle)
        return out


# ------------------------------------------------------------------- report
def middle(values, key=None):
    """The median of ``values`` (the lower middle of an even count: a value that was measured, not an average)."""
    return sorted(values, key=key)[(len(values) - 1) // 2]


def extrapolate(run, n_subset, n_full, baseline_seconds):
    """Linear in the number of objects above the fixed start-up cost of ansible-playbook."""
    factor = float(n_full) / n_subset
    per_object = max(0.0, run["seconds"] - baseline_seconds) / n_subset
    out = {"seconds": round(baseline_seconds + per_object * n_full, 1), "per_object_seconds": round(per_object, 4),
           "factor": round(factor, 3)}
    s = run["requests"]["summary"]["bench"]
    out["bench_requests"] = dict((k, int(round(s[k] * factor))) for k in ("writes", "dry_run_writes", "reads"))
    out["discovery_requests"] = int(round(run["requests"]["summary"]["discovery"]["total"] * factor))
    return out


def row(name, run, idle_rate=None, extrapolated=None):
    s = run["requests"]["summary"]
    b = s["bench"]
    secs = "%.1f" % run["seconds"]
    if extrapolated:
        secs = "%.1f (measured %.1f on %d objects)" % (extrapolated["seconds"], run["seconds"], run["objects"])
        writes = "%d (%d)" % (extrapolated["bench_requests"]["writes"], b["writes"])
        dry = "%d (%d)" % (extrapolated["bench_requests"]["dry_run_writes"], b["dry_run_writes"])
        reads = "%d (%d)" % (extrapolated["bench_requests"]["reads"], b["reads"])
        disc = "%d (%d)" % (extrapolated["discovery_requests"], s["discovery"]["total"])
    else:
        writes, dry, reads, disc = b["writes"], b["dry_run_writes"], b["reads"], s["discovery"]["total"]
    verbs = ", ".join("%s %d" % (k, v) for k, v in sorted(b["by_verb"].items()))
    return "| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
        name, secs, run.get("changed"), writes, dry, reads, disc, s["kueue_status"]["writes"], verbs)


def _ordered(entries):
    """(method, result) in METHODS order (the JSON is written with sorted keys)."""
    entries = entries or {}
    return [(k, entries[k]) for k in METHODS if k in entries] + \
        [(k, v) for k, v in entries.items() if k not in METHODS]


def markdown(res):
    lines = []
    m = res["machine"]
    lines.append("Run %s on %s (%d CPUs, %s), Kueue %s, %d objects (%s)." % (
        res["started"], m["platform"], m["cpus"], m["python"], res["kueue"]["version"], res["objects"],
        ", ".join("%d %s" % (v, k) for k, v in sorted(res["kinds"].items()))))
    lines.append("kueue_queues: project venv ansible-core %s, kubernetes %s. kubernetes.core %s from PyPI ansible %s "
                 "(ansible-core %s, kubernetes %s), `apply: true` (client-side apply)." % (
                     res["project_venv"]["ansible-core"], res["project_venv"]["kubernetes"],
                     res["bench_venv"]["kubernetes.core"], res["bench_venv"]["ansible"],
                     res["bench_venv"]["ansible-core"], res["bench_venv"]["kubernetes"]))
    lines.append("")
    lines.append("| run | wall s | changed | writes | dry-run writes | reads (GET/LIST) | discovery | "
                 "Kueue status writes | bench requests by verb |")
    lines.append("|---|---|---|---|---|---|---|---|---|")
    header = lines[-2:]
    tables = [("methods", res.get("methods"), None), ("variants", res.get("variants"), None)]
    tables += [("remote", r["methods"], r["rtt_ms"]) for _suffix, r in _remotes(res)]
    for table, entries, rtt in tables:
        if table != "methods":
            if not entries:
                continue
            lines.append("")
            if table == "variants":
                lines.append("Variants (same run, same clean starting state):")
            else:
                lines.append("Through bench/latency_proxy.py, +%g ms per round trip (as against a remote cluster):"
                             % rtt)
            lines.append("")
            lines.extend(header)
        for key, mres in _ordered(entries):
            for phase in ("first", "rerun"):
                run = dict(mres[phase], objects=mres["objects"])
                ext = mres.get("extrapolated", {}).get(phase)
                label = "%s, %s" % (METHODS[key][2], "first apply" if phase == "first" else "re-run")
                if ext:
                    label += " [subset, extrapolated]"
                lines.append(row(label, run, extrapolated=ext))
    repeated = [(METHODS[key][2], m["reruns_seconds"]) for key, m in _ordered(res["methods"]) if m.get("reruns_seconds")]
    if repeated:
        lines.append("")
        lines.append("Local re-runs, each run %d times after the Kueue manager was quiet (below --quiet-cores), the "
                     "median in the tables and ratios: %s." % (
            len(repeated[0][1]), "; ".join("%s %s s" % (name, ", ".join("%.1f" % v for v in secs))
                                           for name, secs in repeated)))
    lines.append("")
    idle = res.get("idle")
    if idle:
        r = idle["per_second"]
        lines.append("Idle window (%.0f s, all bench objects present, nothing running): bench-resource requests "
                     "%.3f/s (writes %.3f/s), Kueue status writes %.3f/s, discovery %.3f/s, other (node agent, "
                     "controllers, leases) %.2f/s." % (
                         idle["seconds"], r["bench"]["total"], r["bench"]["writes"], r["kueue_status"]["writes"],
                         r["discovery"]["total"], r["other"]["total"]))
    b = res.get("baseline")
    if b:
        lines.append("Baseline ansible-playbook (start-up + templating the %d-object list, no module): project venv "
                     "%.1f s, bench venv %.1f s." % (res["objects"], b["project"]["seconds"],
                                                     b["bench_venv"]["seconds"]))
    lines.append("")
    ratios = res.get("ratios") or {}
    if ratios:
        lines.append("| ratio (wall time) | value | target |")
        lines.append("|---|---|---|")
        for key, name, target in (("loop_over_kueue_queues", "first apply: k8s loop / kueue_queues", ">= 10"),
                                  ("list_over_kueue_queues", "first apply: single list / kueue_queues", ">= 3")):
            if key in ratios:
                lines.append("| %s | %.1fx | %s |" % (name, ratios[key], target))
        if "rerun_loop_over_kueue_queues" in ratios:
            lines.append("| re-run: loop / kueue_queues | %.1fx | |" % ratios["rerun_loop_over_kueue_queues"])
        if "rerun_list_over_kueue_queues" in ratios:
            lines.append("| re-run: single list / kueue_queues | %.1fx | >= 10 |" % ratios["rerun_list_over_kueue_queues"])
        if "rerun_over_baseline" in ratios:
            lines.append("| re-run (nothing changed): kueue_queues / baseline ansible-playbook | %.1fx | <= 3 |"
                         % ratios["rerun_over_baseline"])
        ref = (res.get("baseline_ref") or {}).get("commit", "")[:12]
        for key, name in (("kueue_queues_over_baseline_ref", "first apply: kueue_queues now / at %s" % ref),
                          ("rerun_kueue_queues_over_baseline_ref", "re-run: kueue_queues now / at %s" % ref)):
            if key in ratios:
                lines.append("| %s | %.2fx | <= 1 |" % (name, ratios[key]))
        for suffix, remote in _remotes(res):
            if "remote_list_over_kueue_queues" + suffix in ratios:
                lines.append("| first apply, +%g ms RTT: single list / kueue_queues | %.1fx | >= 1.5 |"
                             % (remote["rtt_ms"], ratios["remote_list_over_kueue_queues" + suffix]))
                lines.append("| re-run, +%g ms RTT: single list / kueue_queues | %.1fx | >= 10 |"
                             % (remote["rtt_ms"], ratios["remote_rerun_list_over_kueue_queues" + suffix]))
            if "remote_rerun_over_baseline" + suffix in ratios:
                lines.append("| re-run, +%g ms RTT: kueue_queues / baseline ansible-playbook | %.1fx | |"
                             % (remote["rtt_ms"], ratios["remote_rerun_over_baseline" + suffix]))
        if "list_over_kueue_queues_nowait" in ratios:
            lines.append("| first apply: single list / kueue_queues wait: false | %.1fx | |"
                         % ratios["list_over_kueue_queues_nowait"])
        if "rerun_list_over_kueue_queues_src" in ratios:
            lines.append("| re-run: single list / kueue_queues with src (as the roles pass a file) | %.1fx | >= 10 |"
                         % ratios["rerun_list_over_kueue_queues_src"])
        if "rerun_src_over_baseline" in ratios:
            lines.append("| re-run: kueue_queues with src / baseline ansible-playbook | %.1fx | <= 3 |"
                         % ratios["rerun_src_over_baseline"])
        if "rerun_list_over_floor" in ratios:
            lines.append("| re-run: single list / module floor (the most any module given the list can reach) | "
                         "%.1fx | |" % ratios["rerun_list_over_floor"])
            lines.append("| module floor / baseline ansible-playbook | %.1fx | |" % ratios["floor_over_baseline"])
    floor = res.get("module_floor")
    if floor:
        lines.append("")
        lines.append("Module floor (bench/playbooks/module_floor.yml: kueue_queues.yml's task, the %d objects given "
                     "to a module that does nothing; median of %s s): **%.1f s**." % (
                         res["objects"], ", ".join("%.1f" % v for v in floor["runs_seconds"]), floor["seconds"]))
        if floor.get("pairs"):
            lines.append("Each floor run was followed by a kueue_queues re-run (pairs, floor / kueue_queues: %s s); "
                         "the median of the pairs' differences, **%.2f s**, is the collection's own share of a "
                         "re-run (its imports, the LISTs, the comparison)." % (
                             ", ".join("%.1f / %.1f" % (p["floor_seconds"], p["kueue_queues_seconds"])
                                       for p in floor["pairs"]), floor["kueue_queues_over_floor_seconds"]))
    cpu_rows = []
    for table, entries, rtt in tables:
        for key, mres in _ordered(entries):
            for phase in ("first", "rerun"):
                c = mres[phase].get("cpu_seconds")
                if c:
                    cpu_rows.append("| %s, %s%s | %.1f | %s%% | %.1f | %.1f | %.1f | %.1f |" % (
                        METHODS[key][2], "first apply" if phase == "first" else "re-run",
                        " (subset)" if mres.get("extrapolated") else (
                            " (+%g ms RTT)" % rtt if table == "remote" else ""),
                        c["wall_seconds"],
                        c["machine_busy_percent"], c.get("ansible-playbook (+modules)", 0),
                        c.get("kube-apiserver", 0), c.get("etcd", 0), c.get("kueue-manager", 0)))
    if cpu_rows:
        lines.append("")
        lines.append("CPU seconds used during each run (2 cores = 2 CPU-seconds per wall second):")
        lines.append("")
        lines.append("| run | wall s | machine busy | ansible-playbook + module | kube-apiserver | etcd | "
                     "Kueue manager (webhooks, controllers) |")
        lines.append("|---|---|---|---|---|---|---|")
        lines.extend(cpu_rows)
    prof = res.get("profile_kueue_queues") or {}
    if prof.get("first") and prof.get("rerun") and "phases_seconds" in prof["first"]:
        lines.append("")
        lines.append("kueue_queues' own time split (bench/profile_module.py: the module's engine in-process, "
                     "no ansible-playbook; seconds, and requests made in the phase):")
        lines.append("")
        lines.append("| phase | first apply | re-run |")
        lines.append("|---|---|---|")
        phases = []
        for label in ("first", "rerun"):
            for name in prof[label]["phases_seconds"]:
                if name not in phases:
                    phases.append(name)
        for name in phases:
            cells = []
            for label in ("first", "rerun"):
                secs = prof[label]["phases_seconds"].get(name)
                reqs = prof[label]["requests_by_phase"].get(name) or {}
                cell = "-" if secs is None else "%.2f" % secs
                if reqs:
                    cell += " (%s)" % ", ".join("%s %d" % (k, v) for k, v in sorted(reqs.items()))
                cells.append(cell)
            lines.append("| %s | %s | %s |" % (name, cells[0], cells[1]))
        lines.append("| total in-process | %.2f | %.2f |" % (prof["first"]["seconds_total"],
                                                          prof["rerun"]["seconds_total"]))
    return "\n".join(lines) + "\n"


def write_results(folder, name, res, markdown_of):
    """<folder>/<name>.json (everything) and <name>.md (markdown_of(res), printed too); a run cut short still keeps
    its JSON when its tables cannot be made."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "%s.json" % name)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(res, handle, indent=1, sort_keys=True)
    try:
        text = markdown_of(res)
        with open(os.path.join(folder, "%s.md" % name), "w", encoding="utf-8") as handle:
            handle.write(text)
        print(text)
    except Exception as exc:  # noqa: BLE001 - a partial run still keeps its JSON
        log("no markdown table (%s: %s)" % (type(exc).__name__, exc))
    log("results: %s" % path)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run-dir", default=os.environ.get("KUEUEOPS_RUN_DIR_BENCH", "/tmp/bench-run"),
                        help="harness folder of the cluster (default /tmp/bench-run)")
    parser.add_argument("--work-dir", default="/tmp/bench-work", help="generated config, logs (default /tmp/bench-work)")
    parser.add_argument("--bench-venv", default="/tmp/bench-venv", help="venv with PyPI ansible + kubernetes")
    parser.add_argument("--results", default=os.path.join(BENCH, "results"))
    parser.add_argument("--loop-fraction", default="auto",
                        help="fraction of the objects for the kubernetes.core loop: a number, or auto = 0.1 when the "
                             "full loop (first apply + re-run) is estimated at more than --loop-budget minutes")
    parser.add_argument("--loop-budget", type=float, default=25.0)
    parser.add_argument("--methods", default="kueue_queues,k8s_list,k8s_loop")
    parser.add_argument("--idle", type=float, default=60.0, help="seconds of the idle window (0: none)")
    parser.add_argument("--settle", type=float, default=5.0, help="seconds to wait after clean-up and verification")
    parser.add_argument("--quiet-cores", type=float, default=0.1,
                        help="before a re-run, wait until the Kueue manager uses less than this many cores (0.1)")
    parser.add_argument("--settle-max", type=float, default=120.0, help="... for at most this many seconds (120)")
    parser.add_argument("--no-profile", action="store_true", help="skip the in-process profile of kueue_queues")
    parser.add_argument("--no-variants", action="store_true",
                        help="skip the variants (kueue_queues with src / wait: false, k8s list with server-side apply)")
    parser.add_argument("--rtt-ms", default=None,
                        help="also run kueue_queues and the single list task through bench/latency_proxy.py with "
                             "these round-trip times (ms, comma-separated), as against a remote cluster (0: skip); "
                             "default 20, or 20,50 with --quick")
    parser.add_argument("--quick", action="store_true",
                        help="the 1x tables of issue 17 only: kueue_queues and the single list task, locally and at "
                             "+20 and +50 ms, kueue_queues with src and the module floor (no loop, other variants, "
                             "profile or idle window; about 20 min)")
    parser.add_argument("--reruns", type=int, default=None,
                        help="run each local re-run this many times and report the median (default 1, 3 with --quick)")
    parser.add_argument("--baseline-ref", default=None,
                        help="also run kueue_queues with the collection as it was at this git commit, right after "
                             "the current one (method kueue_queues_baseline): a change's before and after in one run")
    parser.add_argument("--keep-cluster", action="store_true", help="leave a cluster this run started running")
    parser.add_argument("--clean-up", action="store_true", help="delete the bench objects and namespaces at the end")
    args = parser.parse_args(argv)
    if args.quick:
        args.methods, args.no_profile, args.idle = "kueue_queues,k8s_list", True, 0.0
    if args.baseline_ref and "kueue_queues_baseline" not in args.methods:
        args.methods = args.methods.replace("kueue_queues", "kueue_queues,kueue_queues_baseline", 1)
    if args.rtt_ms is None:
        args.rtt_ms = "20,50" if args.quick else "20"
    if args.reruns is None:
        args.reruns = 3 if args.quick else 1
    args.reruns = max(1, args.reruns)
    args.rtts = [float(r) for r in str(args.rtt_ms).split(",") if r.strip() and float(r) > 0]

    bench = Bench(args)
    res = bench.results
    res["machine"] = {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                      "cpu_model": _cpu_model()}
    try:
        bench.bench_venv()
        bench.up()
        config, objects = bench.write_config(1.0, "bench-config.yml")
        shutil.copy(config, os.path.join(args.work_dir, "bench-config.copy.yml"))
        res["objects"] = len(objects)
        res["kinds"] = gen_config.summary(objects)["kinds"]
        res["namespaces"] = gen_config.summary(objects)["namespaces"]
        bench.ensure_namespaces(objects)
        bench.clean()
        res["baseline"] = {"project": bench.playbook("baseline_project", config, "baseline project venv"),
                           "bench_venv": bench.playbook("baseline_bench_venv", config, "baseline bench venv")}
        methods = [m.strip() for m in args.methods.split(",") if m.strip()]
        res["methods"] = {}
        for method in methods:
            if method != "k8s_loop":
                res["methods"][method] = bench.method(method, config, objects, method)
                if method == "kueue_queues":
                    # right after kueue_queues' re-runs, in the same conditions (the objects applied, Kueue quiet)
                    res["module_floor"] = bench.floor(config)
                if method == "kueue_queues" and args.idle > 0:
                    res["idle"] = bench.idle(args.idle)
                continue
            fraction = args.loop_fraction
            sub_config, sub_objects = bench.write_config(0.1, "bench-config-subset.yml")
            base = res["baseline"]["bench_venv"]["seconds"]
            if fraction == "auto":
                sub = bench.method(method, sub_config, sub_objects, "k8s_loop subset")
                est = extrapolate(dict(sub["first"]), len(sub_objects), len(objects), base)["seconds"] + \
                    extrapolate(dict(sub["rerun"]), len(sub_objects), len(objects), base)["seconds"]
                log("full loop estimated at %.1f min (first apply + re-run)" % (est / 60))
                if est / 60 > args.loop_budget:
                    fraction = 0.1
                    result = sub
                else:
                    fraction = 1.0
                    result = bench.method(method, config, objects, method)
                    result["subset_calibration"] = sub
            else:
                fraction = float(fraction)
                if fraction >= 1:
                    result = bench.method(method, config, objects, method)
                else:
                    sub_config, sub_objects = bench.write_config(fraction, "bench-config-subset.yml")
                    result = bench.method(method, sub_config, sub_objects, "k8s_loop subset")
            result["fraction"] = fraction
            if fraction < 1:
                result["subset_kinds"] = gen_config.summary(sub_objects)["kinds"]
                result["extrapolated"] = {
                    "first": extrapolate(result["first"], len(sub_objects), len(objects), base),
                    "rerun": extrapolate(result["rerun"], len(sub_objects), len(objects), base)}
            res["methods"][method] = result
        if not args.no_variants:
            res["variants"] = {}
            for method in (QUICK_VARIANTS if args.quick else VARIANTS):
                res["variants"][method] = bench.method(method, config, objects, method)
        res["remotes"] = []
        for rtt in args.rtts:
            remote = bench.start_proxy(rtt)
            res["remotes"].append({"rtt_ms": rtt, "methods": {}})
            try:
                for method in ("kueue_queues", "k8s_list"):
                    res["remotes"][-1]["methods"][method] = bench.method(
                        method, config, objects, "%s rtt %gms" % (method, rtt), kubeconfig=remote)
            finally:
                bench.stop_proxy()
        if not args.no_profile and "kueue_queues" in res["methods"]:
            res["profile_kueue_queues"] = bench.profile(config)
        res["ratios"] = ratios(res)
        if args.clean_up:
            bench.clean()
            for ns in gen_config.namespaces_for(objects):
                bench.core.delete_namespace(ns["name"])
    finally:
        res["finished"] = datetime.datetime.now().isoformat(timespec="seconds")
        write_results(args.results, datetime.date.today().isoformat(), res, markdown)
        bench.stop_proxy()
        bench.down()
    return 0


def _seconds(res, method, phase):
    m = res["methods"].get(method) or (res.get("variants") or {}).get(method)
    if not m:
        return None
    ext = (m.get("extrapolated") or {}).get(phase)
    return ext["seconds"] if ext else m[phase]["seconds"]


def _remotes(res):
    """[(suffix of its ratio keys, remote run)], one per round-trip time; the first keeps the keys of results older
    than --rtt-ms lists (which hold one run, as "remote")."""
    runs = res.get("remotes") or ([res["remote"]] if res.get("remote") else [])
    return [("" if index == 0 else "_%gms" % run["rtt_ms"], run) for index, run in enumerate(runs)]


def ratios(res):
    out = {}
    kq = _seconds(res, "kueue_queues", "first")
    kq_re = _seconds(res, "kueue_queues", "rerun")
    for method, key in (("k8s_loop", "loop_over_kueue_queues"), ("k8s_list", "list_over_kueue_queues")):
        other = _seconds(res, method, "first")
        if kq and other:
            out[key] = round(other / kq, 2)
        other = _seconds(res, method, "rerun")
        if kq_re and other:
            out["rerun_" + key] = round(other / kq_re, 2)
    base = ((res.get("baseline") or {}).get("project") or {}).get("seconds")
    if kq_re and base:
        out["rerun_over_baseline"] = round(kq_re / base, 2)
    for suffix, remote in _remotes(res):
        rm = remote["methods"]
        if "kueue_queues" in rm and "k8s_list" in rm:
            out["remote_list_over_kueue_queues" + suffix] = round(rm["k8s_list"]["first"]["seconds"] /
                                                                  rm["kueue_queues"]["first"]["seconds"], 2)
            out["remote_rerun_list_over_kueue_queues" + suffix] = round(rm["k8s_list"]["rerun"]["seconds"] /
                                                                        rm["kueue_queues"]["rerun"]["seconds"], 2)
        if "kueue_queues" in rm and base:
            out["remote_rerun_over_baseline" + suffix] = round(rm["kueue_queues"]["rerun"]["seconds"] / base, 2)
    floor = (res.get("module_floor") or {}).get("seconds")
    list_re = _seconds(res, "k8s_list", "rerun")
    if floor:
        if base:
            out["floor_over_baseline"] = round(floor / base, 2)
        if list_re:
            out["rerun_list_over_floor"] = round(list_re / floor, 2)
        if "kueue_queues_over_floor_seconds" in res["module_floor"]:
            out["kueue_queues_rerun_over_floor_seconds"] = res["module_floor"]["kueue_queues_over_floor_seconds"]
    src_re = _seconds(res, "kueue_queues_src", "rerun")
    if src_re and list_re:
        out["rerun_list_over_kueue_queues_src"] = round(list_re / src_re, 2)
    if src_re and base:
        out["rerun_src_over_baseline"] = round(src_re / base, 2)
    for phase, key in (("first", "kueue_queues_over_baseline_ref"), ("rerun", "rerun_kueue_queues_over_baseline_ref")):
        before = _seconds(res, "kueue_queues_baseline", phase)
        after = _seconds(res, "kueue_queues", phase)
        if before and after:
            out[key] = round(after / before, 2)
    nowait = _seconds(res, "kueue_queues_nowait", "first")
    listed = _seconds(res, "k8s_list", "first")
    if nowait and listed:
        out["list_over_kueue_queues_nowait"] = round(listed / nowait, 2)
    return out


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


if __name__ == "__main__":
    sys.exit(main())
