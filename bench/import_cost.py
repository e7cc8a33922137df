#!/usr/bin/env python
"""The CPU a module process spends importing the kubernetes client, two ways, in one run (bench/README.md).

* eager: ``from kubernetes import client, config, watch`` - what a module did before module_utils/kube/kube_import.py
  and what kubernetes.core's modules do;
* kube_import: ``module_utils/kube/kube_import.py`` with the typed API classes, as the modules did before the cluster
  layer;
* kueue_cluster: ``module_utils/kube/kueue_cluster.py`` on that import, as every module of the collection works now (no
  typed API class; JSON as it comes).

Each way runs ROUNDS fresh interpreters, alternating, and does what a module's first steps do: import, build an
ApiClient from a kubeconfig (written here, for a server that is not contacted), touch the API classes the
collection's modules use and turn a JSON NamespaceList into models. Prints the median user+system CPU seconds
of each way and their ratio, and the number of kubernetes modules each loaded.

    .venv/bin/python bench/import_cost.py [--rounds 7]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile

COLLECTIONS = os.path.join(os.path.dirname(os.path.dirname(sys.executable)), "collections")

WORK = """
import json, sys
config = k8s_config
api = config.new_client_from_config(sys.argv[1])
for name in ("CoreV1Api", "AppsV1Api", "BatchV1Api", "ApiextensionsV1Api", "CustomObjectsApi", "VersionApi"):
    getattr(k8s, name)(api)
text = json.dumps({"kind": "NamespaceList", "apiVersion": "v1", "metadata": {}, "items": [{"metadata": {"name": "x"}}]})
class Response:
    data = text
try:  # kubernetes < 37: deserialize(response, type); 37: deserialize(text, type, content type)
    namespaces = api.deserialize(Response(), "V1NamespaceList")
except TypeError:
    namespaces = api.deserialize(text, "V1NamespaceList", "application/json")
assert namespaces.items[0].metadata.name == "x"
print(sum(1 for m in sys.modules if m.startswith("kubernetes")))
"""
# The same first steps through the cluster layer (module_utils/kube/kueue_cluster.py), as the modules do them now: no typed
# API class, the NamespaceList read as the JSON it is.
CLUSTER_WORK = """
import json, sys
from ansible_collections.kueueops.aks.plugins.module_utils.kube.kube_import import k8s_config
from ansible_collections.kueueops.aks.plugins.module_utils.kube.kueue_cluster import Cluster
cluster = Cluster(k8s_config.new_client_from_config(sys.argv[1]))
text = json.dumps({"kind": "NamespaceList", "apiVersion": "v1", "metadata": {}, "items": [{"metadata": {"name": "x"}}]})
assert json.loads(text)["items"][0]["metadata"]["name"] == "x"
print(sum(1 for m in sys.modules if m.startswith("kubernetes")))
"""
WAYS = {
    "eager": "from kubernetes import client as k8s, config as k8s_config, watch as k8s_watch\n" + WORK,
    "kube_import": "from ansible_collections.kueueops.aks.plugins.module_utils.kube.kube_import import k8s, k8s_config\n"
                   + WORK,
    "kueue_cluster": CLUSTER_WORK,
}


def one(code: str, kubeconfig: str) -> tuple:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([sys.executable, "-c", code, kubeconfig], capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONPATH=COLLECTIONS))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, int(out.stdout.strip())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    import kubernetes
    with tempfile.NamedTemporaryFile("w", suffix=".kubeconfig", delete=False) as handle:
        json.dump({"apiVersion": "v1", "kind": "Config", "current-context": "c",
                   "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443"}}],
                   "users": [{"name": "u", "user": {"token": "not-a-secret"}}],
                   "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}, handle)
    try:
        samples = {way: [] for way in WAYS}
        loaded = {}
        for _ in range(args.rounds):
            for way, code in WAYS.items():
                cpu, modules = one(code, handle.name)
                samples[way].append(cpu)
                loaded[way] = modules
    finally:
        os.unlink(handle.name)
    median = {way: statistics.median(values) for way, values in samples.items()}
    result = {"kubernetes": kubernetes.__version__, "python": sys.version.split()[0], "rounds": args.rounds,
              "median_cpu_s": {w: round(v, 3) for w, v in median.items()},
              "kubernetes_modules_loaded": loaded,
              "ratio_eager_over_kube_import": round(median["eager"] / median["kube_import"], 2),
              "ratio_eager_over_kueue_cluster": round(median["eager"] / median["kueue_cluster"], 2)}
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
