"""Small helpers for integration tests: waiting, reading conditions, running helm."""
from __future__ import annotations

import os
import subprocess
import sys
import time


def kueue_api():
    """The collection's model of Kueue's API (plugins/module_utils/kueue/kueue_api.py), imported from the collections
    folder of the venv running the tests, where the modules see it."""
    from .ansible import COLLECTIONS
    if COLLECTIONS not in sys.path:
        sys.path.insert(0, COLLECTIONS)
    from ansible_collections.kueueops.aks.plugins.module_utils.kueue import kueue_api as api
    return api


def kueue_plurals(*kinds: str) -> dict:
    """{kind: plural} of the Kueue kinds `kinds` (every kind of a configuration when none is given), in
    dependency order, from the collection's one table."""
    api = kueue_api()
    unknown = set(kinds) - set(api.KUEUE_KINDS)
    assert not unknown, "not Kueue kinds of a configuration: %s" % sorted(unknown)
    return dict((k, api.PLURALS[k]) for k in api.KUEUE_KINDS if not kinds or k in kinds)


def wait_for(what: str, check, timeout: float = 120.0, interval: float = 0.5):
    """Poll `check` until it returns something truthy; fail with `what` and the last value."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
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


def kueue_crds(kube, deleting: bool = True) -> list:
    """The names of the kueue.x-k8s.io CRDs on the cluster, sorted (a CRD's name is <plural>.<group>; metadata
    only, see metadata_items); `deleting=False` leaves out those being deleted."""
    return sorted(c["metadata"]["name"] for c in kueue_crd_items(kube)
                  if deleting or not c["metadata"].get("deletionTimestamp"))


def kueue_crd_items(kube) -> list:
    """The metadata of the kueue.x-k8s.io CRDs (a CRD's name is <plural>.<group>)."""
    return [c for c in metadata_items(kube, CRDS) if c["metadata"]["name"].endswith(".kueue.x-k8s.io")]


def missing_ok(call, *args, **kwargs):
    """``call(*args, **kwargs)``; an object already gone (404) is fine (None)."""
    from kubernetes import client
    try:
        return call(*args, **kwargs)
    except client.exceptions.ApiException as exc:
        if exc.status != 404:
            raise
    return None


def _delete_each(delete, names) -> None:
    """``delete(name)`` for each of ``names``; one already gone (404) is fine."""
    for name in names:
        missing_ok(delete, name)


def kind_crd_name(api_version: str, kind: str, *_scope) -> str:
    """The name serve_kinds gives the CRD of ``kind`` (an entry of its ``kinds``): <kind in lower case>s.<group>."""
    return "%ss.%s" % (kind.lower(), api_version.split("/")[0])


def serve_kinds(kube, kinds) -> list:
    """Serve each of ``kinds`` ([(api_version, kind)] or [(api_version, kind, scope)], e.g.
    ("jobset.x-k8s.io/v1alpha2", "JobSet"); scope "Namespaced" unless given) with a minimal CRD (any spec and status:
    what an operator's CRD gives a client that lists and watches the kind), as installing the operator's CRDs would;
    waits until each is Established. Returns the CRD names."""
    from kubernetes import client
    ext = client.ApiextensionsV1Api(kube)
    names = []
    for api_version, kind, *scope in kinds:
        group, version = api_version.split("/")
        name = kind_crd_name(api_version, kind)
        plural = name.split(".", 1)[0]
        names.append(name)
        ext.create_custom_resource_definition({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": name},
            "spec": {"group": group, "scope": (scope or ["Namespaced"])[0],
                     "names": {"plural": plural, "singular": kind.lower(), "kind": kind, "listKind": kind + "List"},
                     "versions": [{"name": version, "served": True, "storage": True,
                                   "subresources": {"status": {}},
                                   "schema": {"openAPIV3Schema": {"type": "object",
                                                                  "x-kubernetes-preserve-unknown-fields": True}}}]}})
    for name in names:
        wait_for("CRD %s established" % name, lambda n=name: condition(
            ext.read_custom_resource_definition(n).to_dict(), "Established") == "True", timeout=60)
    return names


def unserve_kinds(kube, names, timeout: float = 120) -> None:
    """Delete the CRDs serve_kinds created (those still there) and wait until they are gone."""
    from kubernetes import client
    _delete_each(client.ApiextensionsV1Api(kube).delete_custom_resource_definition, names)
    wait_for("CRDs gone", lambda: not set(names) & {c["metadata"]["name"] for c in metadata_items(kube, CRDS)},
             timeout=timeout)


def namespace_names(kube, deleting: bool = True) -> set:
    """The names of the namespaces (metadata only); `deleting=False` leaves out those being deleted."""
    return {n["metadata"]["name"] for n in metadata_items(kube, "/api/v1/namespaces")
            if deleting or not n["metadata"].get("deletionTimestamp")}


def kueue_present(kube) -> list:
    """What says Kueue is on the cluster: its CRDs (``crd/<name>``) and its ``kueue-system`` namespace
    (``namespace/kueue-system``), those being deleted left out (helm uninstall deletes the CRDs, the namespace follows).
    Installed by Helm or by the managed extension alike. Also hack/test_cluster.py's test of a cluster it is given."""
    found = ["crd/" + name for name in kueue_crds(kube, deleting=False)]
    found += ["namespace/kueue-system"] if "kueue-system" in namespace_names(kube, deleting=False) else []
    return found


def delete_namespaces(kube, names, timeout: float = 180, wait: bool = True) -> None:
    """Delete the namespaces `names` (absent ones are fine); with `wait`, until all are gone."""
    from kubernetes import client
    core = client.CoreV1Api(kube)
    _delete_each(core.delete_namespace, names)
    if wait:
        wait_for("namespaces %s to be gone" % ", ".join(names),
                 lambda: not [n for n in core.list_namespace().items if n.metadata.name in names], timeout=timeout)


def delete_namespace(kube, name: str, timeout: float = 180) -> None:
    """Delete namespace `name` (absent is fine) and wait until it is gone."""
    delete_namespaces(kube, [name], timeout=timeout)


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


WORKER_KUBECONFIG = ("apiVersion: v1\nkind: Config\nclusters:\n- name: w\n  cluster: {server: 'https://127.0.0.1:1'}\n"
                     "users:\n- name: w\n  user: {token: %s}\ncontexts:\n- name: w\n  context: {cluster: w, user: w}\n"
                     "current-context: w\n")


def create_multikueue(kube, worker: str, config: str, check: str, token_prefix: str):
    """A MultiKueue setup whose worker kubeconfig (an unreachable server, a random token) is in the Secret
    kueue-system/``worker``: the MultiKueueCluster ``worker``, the MultiKueueConfig ``config`` of it, the AdmissionCheck
    ``check`` of that config. Returns the token (it must never appear in ansible's output) and the objects as
    [(plural, body)], in dependency order."""
    from kubernetes import client

    token = token_prefix + os.urandom(12).hex()
    client.CoreV1Api(kube).create_namespaced_secret("kueue-system", {
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": worker}, "type": "Opaque",
        "stringData": {"kubeconfig": WORKER_KUBECONFIG % token}})
    v2 = "kueue.x-k8s.io/v1beta2"
    objects = [
        ("multikueueclusters", {"apiVersion": v2, "kind": "MultiKueueCluster", "metadata": {"name": worker},
                                "spec": {"clusterSource": {"kubeConfig": {"location": worker,
                                                                          "locationType": "Secret"}}}}),
        ("multikueueconfigs", {"apiVersion": v2, "kind": "MultiKueueConfig", "metadata": {"name": config},
                               "spec": {"clusters": [worker]}}),
        ("admissionchecks", {"apiVersion": v2, "kind": "AdmissionCheck", "metadata": {"name": check},
                             "spec": {"controllerName": "kueue.x-k8s.io/multikueue",
                                      "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig",
                                                     "name": config}}}),
    ]
    custom = client.CustomObjectsApi(kube)
    for plural, body in objects:
        custom.create_cluster_custom_object("kueue.x-k8s.io", "v1beta2", plural, body)
    return token, objects


def live_normalised(kube, plurals: dict) -> dict:
    """Every Kueue configuration object of `plurals` in the cluster, normalised as a backup holds it."""
    from kubernetes import client

    api = kueue_api()
    from ansible_collections.kueueops.aks.plugins.module_utils.kueue import reader

    custom = client.CustomObjectsApi(kube)
    out = {}
    for kind, plural in plurals.items():
        for item in custom.list_cluster_custom_object("kueue.x-k8s.io", "v1beta2", plural)["items"]:
            obj = reader.normalise(item, kind, "kueue.x-k8s.io/v1beta2")
            out[api.obj_key(obj)] = obj
    return out


METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def metadata_items(kube, api_path: str, missing_ok: bool = False, **query) -> list:
    """The metadata of every object of the collection at `api_path` (e.g. "/api/v1/namespaces",
    "/apis/kueue.x-k8s.io/v1beta2/localqueues"; `query`: labelSelector, ...) as the API server lists it as
    PartialObjectMetadataList: names, namespaces, resourceVersions, labels, no spec or status. The same
    objects as the full LIST, at a fraction of its cost for both sides (a Kueue CRD's schema is megabytes, and
    the typed client builds a model of every field). Sent by the collection's own raw request
    (kueue_cluster.Cluster.request, which reads a response the same way on kubernetes 36 and 37), asking for
    that media type. `missing_ok`: a collection that is not served (404) is empty instead of an error."""
    from kubernetes.client.exceptions import ApiException

    kueue_api()  # the collection on sys.path
    from ansible_collections.kueueops.aks.plugins.module_utils.kube.kueue_cluster import Cluster

    class MetadataCluster(Cluster):
        def _headers(self, content_type=None):
            return dict(super()._headers(content_type), Accept=METADATA_LIST)

    try:
        found = MetadataCluster(kube, timeout=60).request("GET", api_path, query or None)
    except ApiException as exc:
        if missing_ok and exc.status == 404:
            return []
        raise
    return (found or {}).get("items") or []


def resource_versions(kube, plurals: dict, missing_ok: bool = False) -> dict:
    """{(kind, namespace, name): resourceVersion} of every Kueue object of `plurals` (a write to any
    object, status included, changes its resourceVersion); `missing_ok`: none of a kind not served yet (404,
    before Kueue's CRDs are installed) instead of an error."""
    out = {}
    for kind, plural in plurals.items():
        for item in metadata_items(kube, "/apis/kueue.x-k8s.io/v1beta2/" + plural, missing_ok=missing_ok):
            meta = item["metadata"]
            out[(kind, meta.get("namespace", ""), meta["name"])] = meta["resourceVersion"]
    return out


def _etcd(cluster, call: str, body: dict) -> dict:
    """One call of etcd's JSON gateway (loopback, the harness' etcd), keys and values base64 as the gateway wants."""
    import base64
    import json
    import urllib.request

    def b64(text):
        return base64.b64encode(text.encode()).decode()
    body = dict((k, b64(v)) for k, v in body.items())
    url = "http://127.0.0.1:%d/v3/kv/%s" % (cluster.state["ports"]["etcd"], call)
    with urllib.request.urlopen(urllib.request.Request(url, data=json.dumps(body).encode()), timeout=10) as response:
        return json.load(response)


def etcd_objects(cluster, prefix: str) -> dict:
    """{etcd key: object} of every key under `prefix`, as etcd stores it (the API server's storage encoding of
    custom resources is JSON): what is stored, not what the API server serves."""
    import base64
    import json
    end = prefix[:-1] + chr(ord(prefix[-1]) + 1)
    kvs = _etcd(cluster, "range", {"key": prefix, "range_end": end}).get("kvs") or []
    return dict((base64.b64decode(kv["key"]).decode(), json.loads(base64.b64decode(kv["value"]))) for kv in kvs)


def etcd_put(cluster, key: str, obj: dict) -> None:
    """Store `obj` at `key` as it is (JSON), behind the API server's back: a test's way to give objects the
    storage encoding an older release wrote (the API server's watch cache sees the write, as any other)."""
    import json
    _etcd(cluster, "put", {"key": key, "value": json.dumps(obj)})


def helm_records(kube, namespace: str = "kueue-system", release: str = "kueue") -> list:
    """[(revision, status)] of every record of a Helm release in Helm's own storage (its Secrets), oldest first."""
    from kubernetes import client
    secrets = client.CoreV1Api(kube).list_namespaced_secret(
        namespace, label_selector="owner=helm,name=%s" % release).items
    return sorted((int(s.metadata.labels["version"]), s.metadata.labels.get("status")) for s in secrets)


def helm_revision(kube, namespace: str = "kueue-system", release: str = "kueue"):
    """(revision, status) of the newest record of a Helm release in Helm's own storage, None without one."""
    records = helm_records(kube, namespace, release)
    return records[-1] if records else None


class EventRecorder:
    """Watches Kueue objects of some plurals (all namespaces) from a background thread per plural,
    recording every event as (resourceVersion as int, receipt time, type, object). Tolerates the
    CRDs not existing yet (it retries until they do, e.g. during a reinstall).

    resourceVersion is etcd's global revision on this single-etcd cluster, so it orders writes to
    different objects exactly; Kubernetes does not promise that in general, which is why only tests
    use it. `initial` keeps what the first successful LIST of each plural returned."""

    def __init__(self, kube, plurals):
        import threading
        self.kube = kube
        self.events = {p: [] for p in plurals}
        self.initial = {}
        self.errors = []
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(p,), daemon=True) for p in plurals]

    def start(self):
        for thread in self._threads:
            thread.start()
        return self

    def stop(self):
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=30)

    def _run(self, plural):
        from kubernetes import client, watch
        custom = client.CustomObjectsApi(self.kube)
        rv = None
        while not self._stop.is_set():
            try:
                if rv is None:
                    page = custom.list_cluster_custom_object("kueue.x-k8s.io", "v1beta2", plural)
                    self.initial[plural] = page["items"]
                    rv = page["metadata"]["resourceVersion"]
                w = watch.Watch()
                for event in w.stream(custom.list_cluster_custom_object, "kueue.x-k8s.io", "v1beta2", plural,
                                      resource_version=rv, timeout_seconds=3, allow_watch_bookmarks=False):
                    obj = event["object"]
                    rv = obj["metadata"]["resourceVersion"]
                    self.events[plural].append((int(rv), time.time(), event["type"], obj))
                    if self._stop.is_set():
                        w.stop()
                        break
            except client.exceptions.ApiException as exc:
                if exc.status == 410:
                    self.errors.append("%s: watch expired (410)" % plural)
                    rv = None
                elif exc.status != 404:
                    self.errors.append("%s: %s" % (plural, exc.status))
                time.sleep(0.2)
            except Exception as exc:  # noqa: BLE001 - the API server may be restarting; retry
                self.errors.append("%s: %r" % (plural, exc))
                time.sleep(0.2)


def reset_kueue(kube, namespaces, timeout: float = 240, extension: bool = True) -> None:
    """No managed extension (deleted in the ARM emulator of $AKS_*; skipped with extension=False, for
    tests without the emulator), no Helm release of Kueue, none of `namespaces`: what the extension-path
    and secrets tests start and end from, and what a failed harness test leaves behind for the next.
    As admin, through the collection's own modules (kueue_helm state=absent clears the finalizers of
    queues left over); waits until the Kueue CRDs, kueue-system and `namespaces` are gone."""
    from .ansible import run_playbook

    tasks = [{"name": "Remove the extension", "kueueops.aks.kueue_extension": {
        "state": "absent", "resource_group": "{{ lookup('env', 'AKS_RESOURCE_GROUP') }}",
        "cluster_name": "{{ lookup('env', 'AKS_CLUSTER_NAME') }}", "timeout": 300}}] if extension else []
    tasks.append({"name": "Uninstall the Helm release", "kueueops.aks.kueue_helm": {
        "state": "absent", "delete_namespace": True, "kubeconfig": "{{ kueue_kubeconfig }}"}})
    res = run_playbook([{"name": "Reset", "hosts": "local", "gather_facts": False, "tasks": tasks}])
    assert res.rc == 0, res.stdout[-3000:]
    delete_namespaces(kube, namespaces, wait=False)
    left = list(namespaces) + ["kueue-system"]
    wait_for("the Kueue CRDs and the namespaces %s to be gone" % ", ".join(left), lambda: not kueue_crds(kube) and not
             namespace_names(kube) & set(left), timeout=timeout)
