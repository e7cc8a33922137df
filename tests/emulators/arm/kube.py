"""What the emulated microsoft.kueue extension does to the local control plane, as AKS does it.

Install: the Kueue chart from the harness's OCI registry with the real helm, as a release
named like the extension in its release namespace, then the `kueue-extension` Deployment (run
by the node agent as `python -m tests.emulators.arm.extension_controller`), which keeps the
AKS-owned objects present, and the extension manager's record of the instance: an
`ExtensionConfig` (aks.clusterconfig.azure.com/v1beta1; AKS serves that CRD on every cluster)
named like the extension in the release namespace, with spec.extensionType and
status.helmReleaseStatus, as AKS keeps it (kueueops.aks.kueue_info tells the extension's own
release from an unmanaged one by it).
Uninstall: every Kueue custom resource (finalizers cleared), the release, the extension
Deployment, its ExtensionConfig and the Kueue CRDs; Jobs and Pods stay.
"""
from __future__ import annotations

import base64
import json
import os
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

import yaml

from tests.harness import pki
from tests.harness.cluster import Cluster

KUEUE_GROUP = "kueue.x-k8s.io"
MANAGER = "kueue-controller-manager"
EXTENSION_DEPLOYMENT = "kueue-extension"
# The node agent runs a container with this image as the extension controller process.
EXTENSION_IMAGE = "kueueops.local/aks/kueue-extension"
OWNED_LABELS = {"app.kubernetes.io/managed-by": "aks-kueue-extension", "kubernetes.azure.com/managedby": "aks"}
EXTENSION_TYPE = "microsoft.kueue"
# AKS's extension manager records each extension instance as an ExtensionConfig of this group (Arc-enabled
# clusters: clusterconfig.azure.com), in the extension's release namespace, named like the extension.
EXTENSION_CONFIG_GROUP = "aks.clusterconfig.azure.com"
EXTENSION_CONFIG_VERSION = "v1beta1"
EXTENSION_CONFIG_CRD = "extensionconfigs." + EXTENSION_CONFIG_GROUP
# AKS publishes microsoft.kueue versions in its own form, <Kueue chart version>-aks.<packaging> (for example
# 0.19.6-aks.0.4.4: Kueue 0.19.6, AKS's packaging 0.4.4). The emulator offers every chart version of the local
# registry with this one packaging suffix.
AKS_PACKAGING = "aks.0.4.4"


def extension_version(chart_version: str) -> str:
    """The AKS form of a Kueue chart version: 0.19.2 -> 0.19.2-aks.0.4.4."""
    return "%s-%s" % (chart_version, AKS_PACKAGING)


def chart_version(ext_version: str) -> str | None:
    """The Kueue chart version an extension version installs (0.19.2-aks.0.4.4 -> 0.19.2); None for a version not
    in the AKS form."""
    core, sep, packaging = ext_version.partition("-")
    return core if sep and packaging == AKS_PACKAGING else None


class KubeError(RuntimeError):
    pass


class Kube:
    """A tiny client of the local API server with the harness's admin certificate."""

    def __init__(self, cluster: Cluster):
        self.cluster = cluster

    def call(self, method: str, path: str, body=None, content_type: str = "application/json", missing_ok=True):
        """One request; 429s (e.g. "storage is (re)initializing" right after a CRD is created) are
        retried after their Retry-After for up to 30 s."""
        data = json.dumps(body).encode() if body is not None else None
        deadline = time.time() + 30
        while True:
            req = urllib.request.Request(self.cluster.server + path, data=data, method=method)
            if data is not None:
                req.add_header("Content-Type", content_type)
            try:
                with urllib.request.urlopen(req, context=self.cluster.ssl_context(), timeout=30) as resp:
                    raw = resp.read()
                return json.loads(raw) if raw else {}
            except urllib.error.HTTPError as err:
                if err.code == 404 and missing_ok:
                    return None
                if err.code == 429 and time.time() < deadline:
                    time.sleep(float(err.headers.get("Retry-After") or 1))
                    continue
                raise KubeError("%s %s: %s %s" % (method, path, err.code, err.read().decode(errors="replace")[:500]))

    def get(self, path: str):
        return self.call("GET", path)

    def apply(self, path: str, name: str, obj: dict) -> None:
        """Create `obj` in collection `path`, or replace the spec of the existing one."""
        if self.get("%s/%s" % (path, name)) is None:
            self.call("POST", path, obj)
        else:
            self.call("PATCH", "%s/%s" % (path, name), obj, "application/merge-patch+json")

    def delete(self, path: str) -> None:
        self.call("DELETE", path, {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"})


def deployment_ready(dep: dict | None) -> bool:
    if not dep:
        return False
    spec, status = dep.get("spec") or {}, dep.get("status") or {}
    want = spec.get("replicas", 1)
    return (status.get("observedGeneration", 0) >= dep["metadata"].get("generation", 0)
            and status.get("updatedReplicas", 0) >= want and status.get("readyReplicas", 0) >= want
            and status.get("replicas", 0) == want)


class ExtensionInstaller:
    """Installs and removes the microsoft.kueue extension in the local cluster."""

    def __init__(self, folder: str):
        self.cluster = Cluster(folder)
        self.kube = Kube(self.cluster)

    # -------------------------------------------------------------- queries
    def chart_versions(self) -> list[str]:
        """The Kueue chart versions in the local registry, newest first."""
        versions = self.cluster.state.get("chart_versions") or []
        return sorted(versions, key=lambda v: tuple(int(x) for x in v.split("-")[0].split(".")), reverse=True)

    def extension_versions(self) -> list[str]:
        """The microsoft.kueue versions, in AKS's form, of the chart versions in the local registry, newest first."""
        return [extension_version(v) for v in self.chart_versions()]

    def managers(self) -> list[dict]:
        """Every kueue-controller-manager Deployment in the cluster, in any namespace."""
        sel = urllib.parse.quote("metadata.name=" + MANAGER)
        return (self.kube.get("/apis/apps/v1/deployments?fieldSelector=" + sel) or {}).get("items", [])

    def ready(self, namespace: str) -> bool:
        return all(deployment_ready(self.kube.get("/apis/apps/v1/namespaces/%s/deployments/%s" % (namespace, name)))
                   for name in (MANAGER, EXTENSION_DEPLOYMENT))

    # -------------------------------------------------------------- install
    def helm(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
        env = self.cluster.helm_env()
        env["HELM_REGISTRY_CONFIG"] = self.cluster.path("helm", "registry.json")
        return subprocess.run([self.cluster.state["tools"]["KUEUEOPS_HELM"], *args], capture_output=True, text=True,
                              env=env, timeout=timeout, check=False)

    def install(self, release: str, namespace: str, version: str, settings: dict, protected: dict,
                timeout: float = 300) -> None:
        """helm upgrade --install the chart of extension version `version` (AKS's form: 0.19.2-aks.0.4.4 installs
        the chart 0.19.2), then the extension Deployment; wait until both are ready."""
        chart = chart_version(version)
        if chart is None:
            raise KubeError("%s is not a microsoft.kueue version (expected <chart version>-%s)" % (version, AKS_PACKAGING))
        # A namespace still terminating (an extension deleted just before) refuses new objects: let it go.
        deadline = time.time() + 120
        while (self.kube.get("/api/v1/namespaces/" + namespace) or {}).get("metadata", {}).get("deletionTimestamp"):
            if time.time() > deadline:
                raise KubeError("namespace %s is still terminating after 120s" % namespace)
            time.sleep(1)
        args = ["upgrade", "--install", release, self.cluster.chart_ref, "--version", chart, "--plain-http",
                "-n", namespace, "--create-namespace", "--wait", "--timeout", "%ds" % timeout]
        for key, value in sorted(settings.items()):
            args += ["--set", "%s=%s" % (key, value)]
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
            # Protected settings go through a 0600 values file, never the command line.
            os.chmod(handle.name, 0o600)
            json.dump(nest(protected), handle)
        try:
            proc = self.helm(*args, "-f", handle.name)
        finally:
            os.unlink(handle.name)
        if proc.returncode != 0:
            raise KubeError("helm install of the Kueue chart %s failed: %s" % (chart, proc.stderr.strip()[-800:]))
        self.apply_extension_deployment(namespace, version)
        self.apply_extension_config(release, namespace, version, chart)
        deadline = time.time() + timeout
        while not self.ready(namespace):
            if time.time() > deadline:
                raise KubeError("the kueue-controller-manager and kueue-extension Deployments in %s were not ready "
                                "within %ds" % (namespace, timeout))
            time.sleep(1)

    def apply_extension_deployment(self, namespace: str, version: str) -> None:
        k = self.kube
        labels = dict(OWNED_LABELS, **{"app.kubernetes.io/name": EXTENSION_DEPLOYMENT})
        meta = {"name": EXTENSION_DEPLOYMENT, "namespace": namespace, "labels": labels}
        k.apply("/api/v1/namespaces/%s/serviceaccounts" % namespace, EXTENSION_DEPLOYMENT,
                {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta})
        k.apply("/apis/rbac.authorization.k8s.io/v1/clusterroles", EXTENSION_DEPLOYMENT, {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": EXTENSION_DEPLOYMENT, "labels": labels},
            "rules": [{"apiGroups": [KUEUE_GROUP], "resources": ["resourceflavors", "workloadpriorityclasses"],
                       "verbs": ["get", "list", "watch", "create", "update", "patch"]}]})
        k.apply("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", EXTENSION_DEPLOYMENT, {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": EXTENSION_DEPLOYMENT, "labels": labels},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": EXTENSION_DEPLOYMENT},
            "subjects": [{"kind": "ServiceAccount", "name": EXTENSION_DEPLOYMENT, "namespace": namespace}]})
        selector = {"app.kubernetes.io/name": EXTENSION_DEPLOYMENT}
        k.apply("/apis/apps/v1/namespaces/%s/deployments" % namespace, EXTENSION_DEPLOYMENT, {
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
            "spec": {"replicas": 1, "selector": {"matchLabels": selector}, "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {"serviceAccountName": EXTENSION_DEPLOYMENT, "containers": [{
                    "name": "extension", "image": "%s:%s" % (EXTENSION_IMAGE, version),
                    "command": ["python", "-m", "tests.emulators.arm.extension_controller"],
                    "readinessProbe": {"httpGet": {"path": "/readyz", "port": 8081}},
                }]}}}})

    def ensure_extension_config_crd(self) -> None:
        """The ExtensionConfig CRD, as AKS serves it (kept across extensions: it is the extension manager's)."""
        k = self.kube
        crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
        if k.get("%s/%s" % (crds, EXTENSION_CONFIG_CRD)) is None:
            schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
            k.call("POST", crds, {
                "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": {"name": EXTENSION_CONFIG_CRD},
                "spec": {"group": EXTENSION_CONFIG_GROUP, "scope": "Namespaced",
                         "names": {"kind": "ExtensionConfig", "listKind": "ExtensionConfigList",
                                   "plural": "extensionconfigs", "singular": "extensionconfig",
                                   "shortNames": ["aksec"]},
                         "versions": [{"name": EXTENSION_CONFIG_VERSION, "served": True, "storage": True,
                                       "schema": {"openAPIV3Schema": schema}}]}})
        deadline = time.time() + 60
        while k.get("/apis/%s/%s/extensionconfigs" % (EXTENSION_CONFIG_GROUP, EXTENSION_CONFIG_VERSION)) is None:
            if time.time() > deadline:
                raise KubeError("the CRD %s was not served within 60s" % EXTENSION_CONFIG_CRD)
            time.sleep(0.5)

    def extension_config_path(self, namespace: str) -> str:
        return "/apis/%s/%s/namespaces/%s/extensionconfigs" % (EXTENSION_CONFIG_GROUP, EXTENSION_CONFIG_VERSION,
                                                               namespace)

    def apply_extension_config(self, release: str, namespace: str, version: str, chart: str) -> None:
        """The extension manager's record of the instance (spec and status in one object: the emulated CRD has
        no status subresource)."""
        self.ensure_extension_config_crd()
        self.kube.apply(self.extension_config_path(namespace), release, {
            "apiVersion": "%s/%s" % (EXTENSION_CONFIG_GROUP, EXTENSION_CONFIG_VERSION), "kind": "ExtensionConfig",
            "metadata": {"name": release, "namespace": namespace},
            "spec": {"extensionType": EXTENSION_TYPE, "version": version},
            "status": {"status": "Installed", "extensionState": "Installed",
                       "helmReleaseStatus": {"lastReleaseStatus": "deployed", "installedChartVersion": chart}}})

    # ------------------------------------------------------------ uninstall
    def kueue_crds(self) -> list[dict]:
        items = (self.kube.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions") or {}).get("items", [])
        return [c for c in items if c["spec"]["group"] == KUEUE_GROUP]

    def kueue_objects(self) -> list[str]:
        """The API paths of every Kueue custom resource in the cluster."""
        paths = []
        for crd in self.kueue_crds():
            version = next((v["name"] for v in crd["spec"]["versions"] if v.get("storage")), None)
            plural = crd["spec"]["names"]["plural"]
            listing = self.kube.get("/apis/%s/%s/%s" % (KUEUE_GROUP, version, plural)) or {"items": []}
            for item in listing["items"]:
                meta = item["metadata"]
                ns = "namespaces/%s/" % meta["namespace"] if meta.get("namespace") else ""
                paths.append("/apis/%s/%s/%s%s/%s" % (KUEUE_GROUP, version, ns, plural, meta["name"]))
        return paths

    def uninstall(self, release: str, namespace: str, delete_namespace: bool, timeout: float = 180) -> None:
        k = self.kube
        # The extension controller first, so that it recreates no aks-* object.
        k.delete("/apis/apps/v1/namespaces/%s/deployments/%s" % (namespace, EXTENSION_DEPLOYMENT))
        for path in self.kueue_objects():
            k.delete(path)
        # No --wait: the CRDs (chart templates) stay terminating while Kueue objects (Workloads of
        # queued Jobs) hold finalizers the stopped manager no longer removes; the loop below clears them.
        proc = self.helm("uninstall", release, "-n", namespace, "--timeout", "%ds" % timeout)
        if proc.returncode != 0 and "not found" not in proc.stderr:
            raise KubeError("helm uninstall %s failed: %s" % (release, proc.stderr.strip()[-800:]))
        # With the manager gone nothing removes Kueue's finalizers: clear them, as AKS does.
        for path in self.kueue_objects():
            k.call("PATCH", path, {"metadata": {"finalizers": None}}, "application/merge-patch+json")
            k.delete(path)
        for crd in self.kueue_crds():
            k.delete("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" + crd["metadata"]["name"])
        for path in ("%s/%s" % (self.extension_config_path(namespace), release),
                     "/api/v1/namespaces/%s/serviceaccounts/%s" % (namespace, EXTENSION_DEPLOYMENT),
                     "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/" + EXTENSION_DEPLOYMENT,
                     "/apis/rbac.authorization.k8s.io/v1/clusterroles/" + EXTENSION_DEPLOYMENT):
            k.delete(path)
        if delete_namespace:
            k.delete("/api/v1/namespaces/" + namespace)
        deadline = time.time() + timeout
        while self.kueue_crds() or k.get("/apis/apps/v1/namespaces/%s/deployments/%s" % (namespace, EXTENSION_DEPLOYMENT)):
            if time.time() > deadline:
                raise KubeError("Kueue's CRDs or the kueue-extension Deployment were still present after %ds" % timeout)
            for path in self.kueue_objects():  # objects the manager re-created before it stopped
                k.call("PATCH", path, {"metadata": {"finalizers": None}}, "application/merge-patch+json")
            time.sleep(1)

    def namespace_exists(self, namespace: str) -> bool:
        return self.kube.get("/api/v1/namespaces/" + namespace) is not None

    def kubeconfig(self, user: str) -> bytes:
        """A kubeconfig for the local API server with a client certificate for `user` (system:masters),
        shaped as AKS returns it (cluster, user and context names)."""
        ca = pki.CA(self.cluster.path("pki"))
        folder = os.path.join(self.cluster.folder, "arm", "users")
        os.makedirs(folder, mode=0o700, exist_ok=True)
        crt, key = ca.issue(os.path.join(folder, user), user, organizations=["system:masters"], client=True)

        def b64(path: str) -> str:
            with open(path, "rb") as handle:
                return base64.b64encode(handle.read()).decode()
        cluster_name = user.rsplit("_", 1)[-1]
        cfg = {
            "apiVersion": "v1", "kind": "Config", "preferences": {},
            "clusters": [{"name": cluster_name, "cluster": {"certificate-authority-data": b64(ca.cert_path),
                                                            "server": self.cluster.server}}],
            "users": [{"name": user, "user": {"client-certificate-data": b64(crt), "client-key-data": b64(key)}}],
            "contexts": [{"name": cluster_name, "context": {"cluster": cluster_name, "user": user}}],
            "current-context": cluster_name,
        }
        return yaml.safe_dump(cfg, sort_keys=False).encode()


def nest(flat: dict) -> dict:
    """{'a.b': 'x'} -> {'a': {'b': 'x'}}: Helm's reading of dotted setting names."""
    out: dict = {}
    for key, value in flat.items():
        node = out
        parts = key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return out
