#!/usr/bin/env python3
"""Ten times the scale (issue 17, item 4): the collection's modules at 1x and 10x, in one run.

One cluster (the local control plane of tests/harness with the real Kueue 0.19.2, started in
--run-dir unless running there, Kueue installed with Helm unless installed; bench/run.py's
Bench does both and stops what it started). For each scale, smallest first, from a state
without bench objects (the previous scale's are deleted first), each step one
ansible-playbook run of the collection's module, as users run it:

  first apply    kueue_queues, src: the generated file (bench/gen_config.py --scale N)
  re-run         the same, nothing changed: 0 writes and 0 dry-runs expected
  change quota   one ClusterQueue's cpu nominalQuota + 1: the request counts must show one
                 write, of that ClusterQueue
  prune          the declared set minus the LocalQueues of every 10th namespace (10% of the
                 LocalQueues: 1,000 at 10x), prune: true: only those deleted
  backup         kueue_backup of every Kueue object (path:, module defaults: read back and
                 compared with the cluster)
  backup verify  kueue_backup verify_path: of that folder
  verify         kueue_verify, queues: true (the status of every ClusterQueue and LocalQueue)

After each step the run waits until the Kueue manager is quiet (--quiet-cores, at most --settle-max s; the
time and Kueue's CPU meanwhile are reported): at 10x it digests a large write for minutes after the module
returned, and that work would be counted in the next step.

Per step: wall time of the ansible-playbook process, kube-apiserver requests by verb (its
apiserver_request_total, bench/run.py's scrape/delta), the peak RSS (VmHWM) and CPU seconds
of the module process (the AnsiballZ_<module> python process, polled in /proc: run.py's
ModulePeakRss; ansible-core runs the module in that process, so ANSIBLE_PIPELINING=0 here
to see it by name), and the CPU seconds of kube-apiserver, etcd and the Kueue manager
(run.py's cpu_snapshot). Then the growth from the smallest to the largest scale per step:
the targets are a time ratio of at most 1.1 x the object ratio (11x for 1x -> 10x) and a
peak RSS of at most 400 MB.

    .venv/bin/python bench/scale.py                 # 1x and 10x (make bench-scale)
    .venv/bin/python bench/scale.py --quick         # 0.1x (118 objects) and 1x, to try it out

Results: bench/results/scale-<timestamp>.json and .md.
"""
from __future__ import annotations

import argparse
import copy
import datetime
import json
import os
import platform
import shutil
import sys
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
if BENCH not in sys.path:
    sys.path.insert(0, BENCH)

import gen_config  # noqa: E402
import run  # noqa: E402

RSS_TARGET_MB = 400.0
TIME_SLACK = 1.1  # time ratio target = 1.1 x the object ratio (11x for 10x the objects)
PRUNE_EVERY = 10  # the LocalQueues of every 10th namespace are pruned
ENV = {"ANSIBLE_PIPELINING": "0"}
STEPS = (  # key, title, playbook (run.METHODS), module whose process is measured
    ("first", "kueue_queues, first apply", "scale_queues", "kueue_queues"),
    ("rerun", "kueue_queues, re-run (nothing changed)", "scale_queues", "kueue_queues"),
    ("change", "kueue_queues, one ClusterQueue's quota changed", "scale_queues", "kueue_queues"),
    ("prune", "kueue_queues, prune: true", "scale_queues", "kueue_queues"),
    ("backup", "kueue_backup", "scale_backup", "kueue_backup"),
    ("backup_verify", "kueue_backup verify_path", "scale_backup_verify", "kueue_backup"),
    ("verify", "kueue_verify, queues: true", "scale_verify", "kueue_verify"),
)
log = run.log


def scale_objects(scale):
    """The configuration at ``scale``: a whole number of sites, or a stratified fraction of 1x."""
    if scale < 1:
        return gen_config.subset(gen_config.full_config(1), scale)
    return gen_config.full_config(int(scale))


def changed_quota(objects):
    """A deep copy of ``objects`` with the first ClusterQueue's first cpu nominalQuota + 1; and its name."""
    out = copy.deepcopy(objects)
    for obj in out:
        if obj["kind"] == "ClusterQueue":
            for resource in obj["spec"]["resourceGroups"][0]["flavors"][0]["resources"]:
                if resource["name"] == "cpu":
                    resource["nominalQuota"] = int(resource["nominalQuota"]) + 1
                    return out, obj["metadata"]["name"]
    raise ValueError("no ClusterQueue with a cpu quota")


def without_pruned(objects):
    """``objects`` minus the LocalQueues of every PRUNE_EVERY-th namespace; and the pruned (namespace, name)s."""
    namespaces = []
    for obj in objects:
        if obj["kind"] == "LocalQueue" and obj["metadata"]["namespace"] not in namespaces:
            namespaces.append(obj["metadata"]["namespace"])
    gone = set(namespaces[PRUNE_EVERY - 1::PRUNE_EVERY] or namespaces[-1:])
    kept, pruned = [], []
    for obj in objects:
        if obj["kind"] == "LocalQueue" and obj["metadata"]["namespace"] in gone:
            pruned.append((obj["metadata"]["namespace"], obj["metadata"]["name"]))
        else:
            kept.append(obj)
    return kept, pruned


def writes_by_resource(step):
    """{'VERB resource': n} of the step's bench writes (not dry-runs), from the request delta's detail."""
    out = {}
    for name, count in (step["requests"]["detail"].get("bench") or {}).items():
        verb, rest = name.split(" ", 1)
        if verb in run.WRITE_VERBS and "(dry-run)" not in rest:
            key = "%s %s" % (verb, rest.split()[0])
            out[key] = out.get(key, 0) + count
    return out


def live_names(bench, kind):
    return set((i["metadata"].get("namespace", ""), i["metadata"]["name"]) for i in bench.live(kind))


class Scale:
    def __init__(self, bench, args):
        self.bench, self.args = bench, args

    def step(self, key, config, label, extra_vars=None):
        _key, title, book, module = [s for s in STEPS if s[0] == key][0]
        load_before = os.getloadavg()
        out = self.bench.playbook(book, config, label, extra_vars=extra_vars, rss_module=module, env_extra=ENV)
        out["title"] = title
        out["load_before"] = [round(x, 2) for x in load_before]
        out["load_after"] = [round(x, 2) for x in os.getloadavg()]
        out["writes_by_resource"] = writes_by_resource(out)
        time.sleep(self.args.settle)
        out["kueue_settle"] = self.settle_kueue()
        return out

    def settle_kueue(self):
        return self.bench.settle_kueue(self.args.quiet_cores, self.args.settle_max)

    def run(self, scale):
        bench, work = self.bench, self.args.work_dir
        name = "%gx" % scale
        objects = scale_objects(scale)
        res = {"scale": scale, "objects": len(objects), "kinds": gen_config.summary(objects)["kinds"],
               "namespaces": gen_config.summary(objects)["namespaces"], "steps": {}, "checks": {}}
        log("scale %s: %d objects %s" % (name, len(objects), json.dumps(res["kinds"], sort_keys=True)))
        config = os.path.join(work, "scale-%s.yml" % name)
        gen_config.write(objects, config)
        t0 = time.time()
        bench.ensure_namespaces(objects)
        log("%d namespaces present (%.1fs)" % (res["namespaces"], time.time() - t0))
        bench.clean()
        res["kueue_settle_before"] = self.settle_kueue()
        steps, checks = res["steps"], res["checks"]

        steps["first"] = self.step("first", config, "%s first apply" % name)
        t0 = time.time()
        checks["first_verified"] = bench.verify(objects)
        checks["first_verified"]["seconds_until_verified"] = round(time.time() - t0, 1)
        log("verified %d/%d objects, all queues Active: %s" % (
            checks["first_verified"]["objects_found"], checks["first_verified"]["objects_expected"],
            checks["first_verified"]["all_active"]))

        steps["rerun"] = self.step("rerun", config, "%s re-run" % name)
        b = steps["rerun"]["requests"]["summary"]["bench"]
        checks["rerun_no_writes_no_dry_runs"] = b["writes"] == 0 and b["dry_run_writes"] == 0 and \
            steps["rerun"]["changed"] == 0

        changed, cq_name = changed_quota(objects)
        changed_config = os.path.join(work, "scale-%s-changed.yml" % name)
        gen_config.write(changed, changed_config)
        steps["change"] = self.step("change", changed_config, "%s change one quota" % name)
        writes = steps["change"]["writes_by_resource"]
        live_cq = [i for i in bench.live("ClusterQueue") if i["metadata"]["name"] == cq_name]
        checks["change_only_that_object_written"] = {
            "cluster_queue": cq_name, "writes": writes,
            "ok": writes == {"APPLY clusterqueues": 1} and bool(live_cq) and
            str(live_cq[0]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"]) ==
            str(changed_cq_quota(changed, cq_name)),
            "changed_objects": (steps["change"].get("counts") or {})}

        kept, pruned = without_pruned(changed)
        pruned_config = os.path.join(work, "scale-%s-pruned.yml" % name)
        gen_config.write(kept, pruned_config)
        before = live_names(bench, "LocalQueue")
        steps["prune"] = self.step("prune", pruned_config, "%s prune" % name, extra_vars={"bench_prune": True})
        after = live_names(bench, "LocalQueue")
        writes = steps["prune"]["writes_by_resource"]
        checks["prune_only_those_deleted"] = {
            "pruned_declared": len(pruned), "writes": writes, "gone": len(before - after),
            "ok": writes == {"DELETE localqueues": len(pruned)} and before - after == set(pruned) and
            not (after - before)}
        res["objects_after_prune"] = len(kept)

        backup = os.path.join(work, "backup-%s" % name)
        shutil.rmtree(backup, ignore_errors=True)
        steps["backup"] = self.step("backup", pruned_config, "%s backup" % name,
                                    extra_vars={"bench_backup_path": backup})
        checks["backup_objects"] = backup_object_count(backup)
        steps["backup_verify"] = self.step("backup_verify", pruned_config, "%s backup verify_path" % name,
                                           extra_vars={"bench_backup_path": backup})
        steps["verify"] = self.step("verify", pruned_config, "%s verify" % name)
        for key, step in steps.items():
            checks.setdefault("rc", {})[key] = step["rc"]
        log("scale %s checks: %s" % (name, json.dumps({k: (v.get("ok") if isinstance(v, dict) and "ok" in v else v)
                                                      for k, v in checks.items()}, sort_keys=True, default=str)))
        return res


def changed_cq_quota(objects, name):
    for obj in objects:
        if obj["kind"] == "ClusterQueue" and obj["metadata"]["name"] == name:
            return obj["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"]
    return None


def backup_object_count(path):
    """Objects the backup's manifest.json records (its own count), or None."""
    try:
        with open(os.path.join(path, "manifest.json")) as handle:
            manifest = json.load(handle)
    except (OSError, ValueError):
        return None
    for key in ("object_count", "objects", "count"):
        if isinstance(manifest.get(key), int):
            return manifest[key]
    kinds = manifest.get("kinds") or manifest.get("counts")
    if isinstance(kinds, dict):
        return sum(v for v in kinds.values() if isinstance(v, int))
    return None


# ------------------------------------------------------------------- report
def step_summary(step):
    b = step["requests"]["summary"]["bench"]
    o = step["requests"]["summary"]["other"]
    c = step["cpu_seconds"]
    m = step.get("module_process") or {}
    return {
        "seconds": step["seconds"], "rc": step["rc"], "changed": step.get("changed"),
        "writes": b["writes"], "dry_runs": b["dry_run_writes"], "LIST": b["by_verb"].get("LIST", 0),
        "GET": b["by_verb"].get("GET", 0), "WATCH": b["watches"],
        "other_reads": o["by_verb"].get("GET", 0) + o["by_verb"].get("LIST", 0),
        "kueue_status_writes": step["requests"]["summary"]["kueue_status"]["writes"],
        "peak_rss_mb": m.get("peak_rss_mb"), "module_cpu": m.get("module_cpu_seconds"),
        "ansible_cpu": c.get("ansible-playbook (+modules)"), "apiserver_cpu": c.get("kube-apiserver"),
        "etcd_cpu": c.get("etcd"), "kueue_cpu": c.get("kueue-manager"), "busy": c.get("machine_busy_percent"),
    }


def growth(res):
    """Per step: the largest scale's figures over the smallest's, and whether the targets are met."""
    keys = sorted(res["scales"], key=lambda k: res["scales"][k]["scale"])
    if len(keys) < 2:
        return {}
    small, large = res["scales"][keys[0]], res["scales"][keys[-1]]
    objects_ratio = float(large["objects"]) / small["objects"]
    out = {"from": keys[0], "to": keys[-1], "objects_ratio": round(objects_ratio, 2),
           "time_ratio_target": round(TIME_SLACK * objects_ratio, 2), "rss_target_mb": RSS_TARGET_MB, "steps": {}}
    for key, _title, _book, _module in STEPS:
        if key not in small["steps"] or key not in large["steps"]:
            continue
        s, l_ = step_summary(small["steps"][key]), step_summary(large["steps"][key])
        entry = {"time_ratio": round(l_["seconds"] / s["seconds"], 2) if s["seconds"] else None}
        for name in ("peak_rss_mb", "apiserver_cpu", "kueue_cpu", "module_cpu", "ansible_cpu"):
            if s.get(name) and l_.get(name) is not None:
                entry[name + "_ratio"] = round(l_[name] / s[name], 2)
        entry["time_ok"] = entry["time_ratio"] is not None and entry["time_ratio"] <= out["time_ratio_target"]
        entry["rss_ok"] = l_["peak_rss_mb"] is not None and l_["peak_rss_mb"] <= RSS_TARGET_MB
        entry["ok"] = entry["time_ok"] and entry["rss_ok"] and s["rc"] == 0 and l_["rc"] == 0
        out["steps"][key] = entry
    return out


def settle_text(settle):
    if not settle:
        return "-"
    return "%.0f (%.1f)%s" % (settle["seconds"], settle["kueue_cpu_seconds"], "" if settle["quiet"] else ", not quiet")


def _f(value, fmt="%.1f"):
    return "-" if value is None else fmt % value


def markdown(res):
    lines = []
    m = res["machine"]
    lines.append("Run %s .. %s on %s (%d CPUs, %s), Kueue %s; project venv ansible-core %s, kubernetes %s. "
                 "Load average (1 min) at the start %.2f, at the end %.2f." % (
                     res["started"], res.get("finished", "?"), m["platform"], m["cpus"], m["cpu_model"],
                     res.get("kueue", {}).get("version", "?"), res["project_venv"]["ansible-core"],
                     res["project_venv"]["kubernetes"], res["load_start"][0], res.get("load_end", [0])[0]))
    for key in sorted(res["scales"], key=lambda k: res["scales"][k]["scale"]):
        sres = res["scales"][key]
        lines.append("")
        lines.append("**%s: %d objects** (%s; %d namespaces); after the prune %s." % (
            key, sres["objects"], ", ".join("%d %s" % (v, k) for k, v in sorted(sres["kinds"].items())),
            sres["namespaces"], sres.get("objects_after_prune", "-")))
        lines.append("")
        lines.append("| step | wall s | changed | writes | dry-runs | LIST | GET | other GET/LIST "
                     "| Kueue status writes | module peak RSS MB | module CPU s | ansible + module CPU s "
                     "| kube-apiserver CPU s | etcd CPU s | Kueue manager CPU s | machine busy % | load before "
                     "| Kueue quiet after (s, its CPU s) |")
        lines.append("|---|" + "---|" * 17)
        row = "| %s%s | %.1f | %s | %d | %d | %d | %d | %d | %d | %s | %s | %s | %s | %s | %s | %s | %.1f | %s |"
        for skey, title, _book, _module in STEPS:
            step = sres["steps"].get(skey)
            if not step:
                continue
            s = step_summary(step)
            lines.append(row % (
                title, "" if s["rc"] == 0 else " (rc %s)" % s["rc"], s["seconds"], s["changed"], s["writes"],
                s["dry_runs"], s["LIST"], s["GET"], s["other_reads"], s["kueue_status_writes"],
                _f(s["peak_rss_mb"]), _f(s["module_cpu"]), _f(s["ansible_cpu"]), _f(s["apiserver_cpu"]),
                _f(s["etcd_cpu"]), _f(s["kueue_cpu"]), _f(s["busy"], "%.0f"), step["load_before"][0],
                settle_text(step.get("kueue_settle"))))
        c = sres["checks"]
        lines.append("")
        lines.append("Checks: first apply verified %s/%s objects, all queues Active: %s; re-run 0 writes and 0 "
                     "dry-runs: %s; quota change wrote only %s: %s (%s); prune deleted exactly the %d LocalQueues "
                     "dropped from the input: %s (%s); backup objects: %s." % (
                         c["first_verified"]["objects_found"], c["first_verified"]["objects_expected"],
                         c["first_verified"]["all_active"], c["rerun_no_writes_no_dry_runs"],
                         c["change_only_that_object_written"]["cluster_queue"],
                         c["change_only_that_object_written"]["ok"],
                         json.dumps(c["change_only_that_object_written"]["writes"], sort_keys=True),
                         c["prune_only_those_deleted"]["pruned_declared"], c["prune_only_those_deleted"]["ok"],
                         json.dumps(c["prune_only_those_deleted"]["writes"], sort_keys=True),
                         c.get("backup_objects")))
    g = res.get("growth") or {}
    if g.get("steps"):
        small, large = res["scales"][g["from"]], res["scales"][g["to"]]
        lines.append("")
        lines.append("Growth %s -> %s (%.2fx the objects; targets: wall time ratio <= %.2fx, module peak RSS <= %.0f "
                     "MB):" % (g["from"], g["to"], g["objects_ratio"], g["time_ratio_target"], g["rss_target_mb"]))
        lines.append("")
        lines.append("| step | wall s %s | wall s %s | time ratio | peak RSS MB %s | peak RSS MB %s | RSS ratio "
                     "| module CPU ratio | kube-apiserver CPU ratio | Kueue manager CPU ratio | met? |" % (
                         g["from"], g["to"], g["from"], g["to"]))
        lines.append("|---|" + "---|" * 10)
        for skey, title, _book, _module in STEPS:
            e = g["steps"].get(skey)
            if not e:
                continue
            s, l_ = step_summary(small["steps"][skey]), step_summary(large["steps"][skey])
            why = []
            if not e["time_ok"]:
                why.append("time")
            if not e["rss_ok"]:
                why.append("RSS")
            lines.append("| %s | %.1f | %.1f | %sx | %s | %s | %s | %s | %s | %s | %s |" % (
                title, s["seconds"], l_["seconds"], _f(e["time_ratio"], "%.2f"), _f(s["peak_rss_mb"]),
                _f(l_["peak_rss_mb"]), _f(e.get("peak_rss_mb_ratio"), "%.2fx"), _f(e.get("module_cpu_ratio"), "%.2fx"),
                _f(e.get("apiserver_cpu_ratio"), "%.2fx"), _f(e.get("kueue_cpu_ratio"), "%.2fx"),
                "yes" if e["ok"] else "**no** (%s)" % ", ".join(why or ["rc"])))
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scales", default="1,10",
                        help="comma-separated scales, smallest first: whole numbers of sites, or a fraction of 1x "
                             "below 1 (default 1,10)")
    parser.add_argument("--quick", action="store_true", help="--scales 0.1,1 (118 and 1,068 objects; a few minutes)")
    parser.add_argument("--run-dir", default=os.environ.get("KUEUEOPS_RUN_DIR_SCALE", "/tmp/scale-run"),
                        help="harness folder of the cluster (default /tmp/scale-run)")
    parser.add_argument("--work-dir", default="/tmp/scale-work", help="generated configs, logs, backups")
    parser.add_argument("--results", default=os.path.join(BENCH, "results"))
    parser.add_argument("--settle", type=float, default=5.0, help="seconds to wait after each step and clean-up")
    parser.add_argument("--quiet-cores", type=float, default=0.1,
                        help="after each step, wait until the Kueue manager uses less than this many cores (0.1)")
    parser.add_argument("--settle-max", type=float, default=300.0, help="... for at most this many seconds (300)")
    parser.add_argument("--keep-cluster", action="store_true", help="leave a cluster this run started running")
    args = parser.parse_args(argv)
    if args.quick:
        args.scales = "0.1,1"
    scales = sorted(float(s) for s in args.scales.split(",") if s.strip())
    for scale in scales:
        if scale >= 1 and int(scale) != scale:
            parser.error("--scales: %g is neither a whole number nor below 1" % scale)

    bench = run.Bench(args)
    res = bench.results
    res["kind"] = "scale"
    res["scales_requested"] = scales
    res["load_start"] = [round(x, 2) for x in os.getloadavg()]
    res["machine"] = {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                      "cpu_model": run._cpu_model()}
    res["scales"] = {}
    stamp = datetime.datetime.now().strftime("%Y-%m-%dT%H%M%S")
    log("load average %s" % res["load_start"])
    try:
        out = run.subprocess.run([os.path.join(run.VENV_BIN, "python"), "-c", (
            "import json, importlib.metadata as m\n"
            "print(json.dumps({'ansible-core': m.version('ansible-core'), 'kubernetes': m.version('kubernetes')}))")],
            check=True, capture_output=True, text=True)
        res["project_venv"] = json.loads(out.stdout)
        bench.up()
        for scale in scales:
            res["scales"]["%gx" % scale] = Scale(bench, args).run(scale)
        res["growth"] = growth(res)
    finally:
        res["finished"] = datetime.datetime.now().isoformat(timespec="seconds")
        res["load_end"] = [round(x, 2) for x in os.getloadavg()]
        run.write_results(args.results, "scale-%s" % stamp, res, markdown)
        bench.down()
    return 0


if __name__ == "__main__":
    sys.exit(main())
