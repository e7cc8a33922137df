"""Small helpers for integration tests: waiting, reading conditions, running helm."""
from __future__ import annotations

import os
import subprocess
import time


def wait_for(what: str, check, timeout: float = 120.0, interval: float = 0.5):
    """Poll `check` until it returns something truthy; fail with `what` and the last value."""
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            last = check()
        except Exception as exc:  # noqa: BLE001 - kept as the last observation
            last = exc
        else:
            if last:
                return last
        time.sleep(interval)
    raise AssertionError("timed out after %ss waiting for %s (last: %r)" % (timeout, what, last))


def condition(obj: dict, ctype: str) -> str | None:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == ctype:
            return cond.get("status")
    return None


def helm(cluster, binary: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = cluster.helm_env()
    env["HELM_REGISTRY_CONFIG"] = os.path.join(cluster.folder, "helm", "registry.json")
    proc = subprocess.run([binary, *args], capture_output=True, text=True, env=env, timeout=600)
    if check and proc.returncode != 0:
        raise AssertionError("helm %s failed (%d): %s" % (" ".join(args), proc.returncode, proc.stderr))
    return proc


def queued_job(name: str, queue: str, cpu: str = "100m") -> dict:
    """A suspended Job submitted to LocalQueue `queue` (the seed's label), requesting `cpu`."""
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "labels": {"kueue.x-k8s.io/queue-name": queue}},
            "spec": {"suspend": True, "backoffLimit": 0, "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                "resources": {"requests": {"cpu": cpu}, "limits": {"cpu": cpu}}}]}}}}


def workloads(kube, namespace: str) -> list:
    from kubernetes import client
    return client.CustomObjectsApi(kube).list_namespaced_custom_object(
        "kueue.x-k8s.io", "v1beta2", namespace, "workloads")["items"]


def admitted(workload: dict) -> bool:
    return condition(workload, "Admitted") == "True"


def delete_kueue_objects(kube, plurals: dict, select) -> None:
    """Delete the Kueue objects of `plurals` (kind -> plural, dependency order) for which
    `select(kind, metadata)` is true, dependents first; absent ones are fine."""
    from kubernetes import client
    custom = client.CustomObjectsApi(kube)
    for kind in reversed(list(plurals)):
        for item in custom.list_cluster_custom_object("kueue.x-k8s.io", "v1beta2", plurals[kind])["items"]:
            meta = item["metadata"]
            if not select(kind, meta):
                continue
            try:
                if meta.get("namespace"):
                    custom.delete_namespaced_custom_object("kueue.x-k8s.io", "v1beta2", meta["namespace"],
                                                           plurals[kind], meta["name"])
                else:
                    custom.delete_cluster_custom_object("kueue.x-k8s.io", "v1beta2", plurals[kind], meta["name"])
            except client.exceptions.ApiException as exc:
                if exc.status != 404:
                    raise


def live_normalised(kube, plurals: dict) -> dict:
    """Every Kueue configuration object of `plurals` in the cluster, normalised as a backup holds it."""
    from kubernetes import client

    from ansible_collections.kueueops.aks.plugins.module_utils import backup

    custom = client.CustomObjectsApi(kube)
    out = {}
    for kind, plural in plurals.items():
        for item in custom.list_cluster_custom_object("kueue.x-k8s.io", "v1beta2", plural)["items"]:
            obj = backup.normalise(item, kind, "kueue.x-k8s.io/v1beta2")
            out[backup.obj_key(obj)] = obj
    return out
