#!/usr/bin/env python3
"""Generate the benchmark's Kueue configuration (issue 4, "Benchmark").

A large, realistic configuration of a shared batch platform, written as Kueue's
own ``kueue.x-k8s.io/v1beta2`` manifests, one YAML document per object:

* 10 ResourceFlavors: on-demand and spot CPU in three zones (node labels, a spot
  toleration), a high-memory pool, and three GPU pools (node labels, taints and
  tolerations);
* 5 Cohorts: one root (``bench-org``) and four divisions under it
  (``spec.parentName``), with fair-sharing weights and, for two divisions,
  their own resource groups (quota that the division lends to its teams);
* 50 ClusterQueues (``bench-team-00`` .. ``-49``), each in a division's cohort,
  with a namespace selector on the team label, a CPU/memory resource group of
  three to four flavors (zone on-demand, zone spot, the other zones' spot,
  high-memory for every fifth team) with nominal quotas, borrowing and lending
  limits, a GPU resource group for every third team, preemption, fair sharing
  and flavor fungibility;
* 1,000 LocalQueues across 100 namespaces (``bench-ns-000`` .. ``-099``, two
  per team): ten per namespace (default, batch, interactive, training, ...),
  each pointing at its team's ClusterQueue;
* 3 WorkloadPriorityClasses.

Every object carries the label ``kueueops.bench/owned: "true"`` (so the bench
finds and deletes exactly its own objects), and every namespace the team
label its ClusterQueue selects. The file is deterministic: the same arguments
give byte-identical output.

    python bench/gen_config.py -o /tmp/bench-config.yml            # the full set, 1,068 objects
    python bench/gen_config.py --fraction 0.1 -o /tmp/subset.yml   # a stratified 10% subset

``--scale N`` (a whole number) repeats that platform N times, as N sites: site 0 is the
configuration above, name for name; site s > 0 has its own 10 flavors, 5 cohorts and 3
priority classes (the same names with a ``-sNN`` suffix), 50 more ClusterQueues
(``bench-team-50`` ..), 100 more namespaces (``bench-ns-100`` ..) and their 1,000 LocalQueues,
all referring to its own site's flavors and cohorts. ``--scale 10`` gives 10,680 objects: 100
flavors, 50 cohorts, 500 ClusterQueues, 10,000 LocalQueues over 1,000 namespaces and 30
priority classes (bench/scale.py). ``--scale 1`` (the default) is byte for byte what it was
before the option existed.

    python bench/gen_config.py --scale 10 -o /tmp/scale-config.yml   # 10,680 objects

``--fraction`` keeps every n-th object of each kind (at least one; for LocalQueues,
all queues of every n-th namespace), plus the ClusterQueues, Cohorts and
ResourceFlavors the kept objects refer to, so a subset is still a configuration
Kueue accepts (so it is a little larger than the fraction).
"""
from __future__ import annotations

import argparse
import json
import math
import sys

import yaml

API = "kueue.x-k8s.io/v1beta2"
LABEL = "kueueops.bench/owned"
TEAM_LABEL = "kueueops.bench/team"
ZONES = ("eastus-1", "eastus-2", "eastus-3")
DIVISIONS = ("research", "engineering", "product", "data")
N_TEAMS = 50
N_NAMESPACES = 100
QUEUES_PER_NAMESPACE = ("default", "batch", "interactive", "training", "inference", "etl", "ci", "nightly",
                        "backfill", "adhoc")
GPU_FLAVORS = ("bench-gpu-a100", "bench-gpu-h100", "bench-gpu-t4")


def site_suffix(site):
    """'' for site 0 (the 1x configuration), '-s01' .. for the others (``--scale``)."""
    return "-s%02d" % site if site else ""


def meta(name, namespace=None, **labels):
    out = {"name": name, "labels": {LABEL: "true"}}
    out["labels"].update(labels)
    if namespace:
        out["namespace"] = namespace
    return out


def resource_flavors(site=0):
    sfx = site_suffix(site)
    flavors = []
    for zone in ZONES:
        flavors.append({
            "apiVersion": API, "kind": "ResourceFlavor",
            "metadata": meta("bench-cpu-ondemand-%s%s" % (zone, sfx)),
            "spec": {"nodeLabels": {"kubernetes.azure.com/scalesetpriority": "regular",
                                    "topology.kubernetes.io/zone": zone}},
        })
        flavors.append({
            "apiVersion": API, "kind": "ResourceFlavor",
            "metadata": meta("bench-cpu-spot-%s%s" % (zone, sfx)),
            "spec": {"nodeLabels": {"kubernetes.azure.com/scalesetpriority": "spot",
                                    "topology.kubernetes.io/zone": zone},
                     "tolerations": [{"key": "kubernetes.azure.com/scalesetpriority", "operator": "Equal",
                                      "value": "spot", "effect": "NoSchedule"}]},
        })
    flavors.append({
        "apiVersion": API, "kind": "ResourceFlavor",
        "metadata": meta("bench-highmem" + sfx),
        "spec": {"nodeLabels": {"agentpool": "highmem", "kubernetes.azure.com/scalesetpriority": "regular"}},
    })
    for name, pool in zip(GPU_FLAVORS, ("gpua100", "gpuh100", "gput4")):
        flavors.append({
            "apiVersion": API, "kind": "ResourceFlavor",
            "metadata": meta(name + sfx),
            "spec": {"nodeLabels": {"kubernetes.azure.com/accelerator": "nvidia", "agentpool": pool},
                     "nodeTaints": [{"key": "sku", "value": "gpu", "effect": "NoSchedule"}],
                     "tolerations": [{"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]},
        })
    return flavors


def cohorts(site=0):
    sfx = site_suffix(site)
    out = [{"apiVersion": API, "kind": "Cohort", "metadata": meta("bench-org" + sfx),
            "spec": {"fairSharing": {"weight": "1"}}}]
    for idx, division in enumerate(DIVISIONS):
        spec = {"parentName": "bench-org" + sfx, "fairSharing": {"weight": str(1 + idx % 2)}}
        if idx < 2:  # research and engineering own a shared pool that their teams borrow from
            spec["resourceGroups"] = [{
                "coveredResources": ["cpu", "memory"],
                "flavors": [{"name": "bench-cpu-ondemand-%s%s" % (ZONES[idx], sfx), "resources": [
                    {"name": "cpu", "nominalQuota": 64}, {"name": "memory", "nominalQuota": "256Gi"}]}],
            }]
        out.append({"apiVersion": API, "kind": "Cohort", "metadata": meta("bench-%s%s" % (division, sfx)),
                    "spec": spec})
    return out


def priority_classes(site=0):
    sfx = site_suffix(site)
    return [
        {"apiVersion": API, "kind": "WorkloadPriorityClass", "metadata": meta("bench-batch-low" + sfx),
         "value": 100 + site, "description": "Best-effort batch; preempted first."},
        {"apiVersion": API, "kind": "WorkloadPriorityClass", "metadata": meta("bench-batch-standard" + sfx),
         "value": 1000 + site, "description": "Default for scheduled pipelines."},
        {"apiVersion": API, "kind": "WorkloadPriorityClass", "metadata": meta("bench-batch-urgent" + sfx),
         "value": 10000 + site, "description": "Incident and deadline work."},
    ]


def team(idx):
    return "bench-team-%02d" % idx


def cluster_queues(site=0):
    sfx = site_suffix(site)
    out = []
    for idx in range(N_TEAMS):  # idx: the team within its site; its name counts on over the sites
        zone = ZONES[idx % len(ZONES)]
        cpu = 16 + 8 * (idx % 4)
        mem = cpu * 4
        cpu_flavors = [
            {"name": "bench-cpu-ondemand-%s%s" % (zone, sfx), "resources": [
                {"name": "cpu", "nominalQuota": cpu, "borrowingLimit": cpu // 2, "lendingLimit": cpu // 4},
                {"name": "memory", "nominalQuota": "%dGi" % mem, "borrowingLimit": "%dGi" % (mem // 2),
                 "lendingLimit": "%dGi" % (mem // 4)}]},
            {"name": "bench-cpu-spot-%s%s" % (zone, sfx), "resources": [
                {"name": "cpu", "nominalQuota": cpu * 2},
                {"name": "memory", "nominalQuota": "%dGi" % (mem * 2)}]},
        ]
        other = ZONES[(idx + 1) % len(ZONES)]
        cpu_flavors.append({"name": "bench-cpu-spot-%s%s" % (other, sfx), "resources": [
            {"name": "cpu", "nominalQuota": cpu}, {"name": "memory", "nominalQuota": "%dGi" % mem}]})
        if idx % 5 == 0:
            cpu_flavors.append({"name": "bench-highmem" + sfx, "resources": [
                {"name": "cpu", "nominalQuota": 8}, {"name": "memory", "nominalQuota": "512Gi",
                                                     "borrowingLimit": "256Gi"}]})
        groups = [{"coveredResources": ["cpu", "memory"], "flavors": cpu_flavors}]
        if idx % 3 == 0:
            gpus = [GPU_FLAVORS[idx % len(GPU_FLAVORS)] + sfx, GPU_FLAVORS[(idx + 1) % len(GPU_FLAVORS)] + sfx]
            groups.append({"coveredResources": ["nvidia.com/gpu"], "flavors": [
                {"name": gpus[0], "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8, "borrowingLimit": 4,
                                                 "lendingLimit": 2}]},
                {"name": gpus[1], "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 4}]},
            ]})
        spec = {
            "cohortName": "bench-%s%s" % (DIVISIONS[idx % len(DIVISIONS)], sfx),
            "namespaceSelector": {"matchLabels": {TEAM_LABEL: team(site * N_TEAMS + idx)}},
            "queueingStrategy": "BestEffortFIFO" if idx % 2 == 0 else "StrictFIFO",
            "fairSharing": {"weight": str(1 + idx % 3)},
            "preemption": {"reclaimWithinCohort": "Any",
                           "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 1000},
                           "withinClusterQueue": "LowerPriority"},
            "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"},
            "resourceGroups": groups,
        }
        out.append({"apiVersion": API, "kind": "ClusterQueue", "metadata": meta(team(site * N_TEAMS + idx)),
                    "spec": spec})
    return out


def namespace_names(site=0):
    return ["bench-ns-%03d" % n for n in range(site * N_NAMESPACES, (site + 1) * N_NAMESPACES)]


def namespace_team(ns_idx):
    """The team of namespace number ``ns_idx`` (over all sites): two namespaces per team, in its own site."""
    site, local = divmod(ns_idx, N_NAMESPACES)
    return team(site * N_TEAMS + local % N_TEAMS)


def local_queues(site=0):
    out = []
    for n, namespace in enumerate(namespace_names(site), site * N_NAMESPACES):
        for qname in QUEUES_PER_NAMESPACE:
            out.append({"apiVersion": API, "kind": "LocalQueue", "metadata": meta(qname, namespace),
                        "spec": {"clusterQueue": namespace_team(n)}})
    return out


def full_config(scale=1):
    """The configuration of ``scale`` sites (1: the 1,068 objects), kinds in dependency order."""
    if int(scale) != scale or scale < 1:
        raise ValueError("scale must be a whole number >= 1, not %r" % (scale,))
    sites = range(int(scale))
    out = []
    for part in (resource_flavors, cohorts, priority_classes, cluster_queues, local_queues):
        for site in sites:
            out.extend(part(site))
    return out


def _every_nth(items, fraction):
    if fraction >= 1:
        return list(items)
    keep = max(1, int(math.ceil(len(items) * fraction)))
    step = len(items) / float(keep)
    return [items[int(i * step)] for i in range(keep)]


def subset(objects, fraction):
    """Every n-th object of each kind, then the flavors/cohorts/queues the kept ones refer to."""
    if fraction >= 1:
        return list(objects)
    by_kind = {}
    for obj in objects:
        by_kind.setdefault(obj["kind"], []).append(obj)
    kept = {kind: _every_nth(items, fraction) for kind, items in by_kind.items() if kind != "LocalQueue"}
    # LocalQueues: all queues of every n-th namespace (so the kept queues use few ClusterQueues)
    kept_ns = set(_every_nth(_namespaces_in_order(by_kind.get("LocalQueue", [])), fraction))
    kept["LocalQueue"] = [o for o in by_kind.get("LocalQueue", []) if o["metadata"]["namespace"] in kept_ns]
    names = {kind: set(o["metadata"]["name"] for o in items) for kind, items in kept.items()}
    # LocalQueues -> their ClusterQueues
    for lq in kept.get("LocalQueue", []):
        names["ClusterQueue"].add(lq["spec"]["clusterQueue"])
    cqs = [o for o in by_kind["ClusterQueue"] if o["metadata"]["name"] in names["ClusterQueue"]]
    for cq in cqs:
        names["Cohort"].add(cq["spec"]["cohortName"])
        for group in cq["spec"]["resourceGroups"]:
            for flavor in group["flavors"]:
                names["ResourceFlavor"].add(flavor["name"])
    cohorts_kept = [o for o in by_kind["Cohort"] if o["metadata"]["name"] in names["Cohort"]]
    for cohort in cohorts_kept:
        if cohort["spec"].get("parentName"):
            names["Cohort"].add(cohort["spec"]["parentName"])
        for group in cohort["spec"].get("resourceGroups") or []:
            for flavor in group["flavors"]:
                names["ResourceFlavor"].add(flavor["name"])
    out = []
    for obj in objects:
        kind = obj["kind"]
        if kind == "LocalQueue":
            if obj in kept["LocalQueue"]:
                out.append(obj)
        elif obj["metadata"]["name"] in names.get(kind, set()):
            out.append(obj)
    return out


def _namespaces_in_order(local_queues_):
    seen = {}
    for obj in local_queues_:
        seen.setdefault(obj["metadata"]["namespace"], obj)
    return list(seen)


def summary(objects):
    counts = {}
    for obj in objects:
        counts[obj["kind"]] = counts.get(obj["kind"], 0) + 1
    namespaces = sorted(set(o["metadata"]["namespace"] for o in objects if o["kind"] == "LocalQueue"))
    return {"objects": len(objects), "kinds": counts, "namespaces": len(namespaces)}


def write(objects, path):
    header = ("# Generated by bench/gen_config.py: %s\n" % json.dumps(summary(objects), sort_keys=True))
    text = header + yaml.safe_dump_all(objects, sort_keys=False, default_flow_style=False, width=120)
    if path == "-":
        sys.stdout.write(text)
    else:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-o", "--output", default="-", help="file to write (default: stdout)")
    parser.add_argument("--fraction", type=float, default=1.0,
                        help="keep this fraction of each kind (plus what it refers to); default 1")
    parser.add_argument("--scale", type=int, default=1,
                        help="this many sites of the configuration (10: 10,680 objects); default 1")
    parser.add_argument("--namespaces", metavar="FILE",
                        help="also write the namespaces (with their team labels) as a JSON list to FILE")
    args = parser.parse_args(argv)
    objects = subset(full_config(args.scale), args.fraction)
    write(objects, args.output)
    if args.namespaces:
        with open(args.namespaces, "w", encoding="utf-8") as handle:
            json.dump(namespaces_for(objects), handle, indent=1)
    print(json.dumps(summary(objects), sort_keys=True), file=sys.stderr)
    return 0


def namespaces_for(objects):
    """[{name, labels}] of the namespaces the LocalQueues of ``objects`` live in, each with the team label its
    queues' ClusterQueue selects."""
    teams = {}
    for obj in objects:
        if obj["kind"] == "LocalQueue":
            teams.setdefault(obj["metadata"]["namespace"], obj["spec"]["clusterQueue"])
    return [{"name": name, "labels": {LABEL: "true", TEAM_LABEL: team_}} for name, team_ in teams.items()]


if __name__ == "__main__":
    sys.exit(main())
