"""Helpers of the least-privilege tests: users signed by the local cluster's CA, the RBAC files of
docs/rbac applied (or applied with one permission removed), snapshots of what a failed run must not
change."""
from __future__ import annotations

import copy
import os
import subprocess
import time

import yaml

from tests.harness import pki
from tests.integration.kubeutil import kueue_crd_items, kueue_plurals, metadata_items, resource_versions, wait_for

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RBAC_DIR = os.path.join(REPO, "docs", "rbac")
KUEUE_PLURALS = kueue_plurals()  # every kind of a configuration


def load(name: str) -> list:
    """The objects of docs/rbac/<name>.yaml (one v1 List, so that the file is a single YAML document)."""
    with open(os.path.join(RBAC_DIR, name + ".yaml")) as handle:
        docs = [doc for doc in yaml.safe_load_all(handle) if doc]
    assert len(docs) == 1 and docs[0]["kind"] == "List", "docs/rbac/%s.yaml: one List object expected" % name
    return docs[0]["items"]


def make_user(cluster, user: str, group: str, *groups: str) -> str:
    """A client-certificate user (CN=user, O=group and each of `groups`) signed by the cluster CA; returns its
    kubeconfig."""
    folder = cluster.path("rbac-users")
    os.makedirs(folder, mode=0o700, exist_ok=True)
    ca = pki.CA(cluster.path("pki"))
    crt, key = ca.issue(os.path.join(folder, user), user, organizations=[group, *groups], client=True)
    path = os.path.join(folder, user + ".kubeconfig")
    cluster._kubeconfig(path, user, crt, key)  # pylint: disable=protected-access  # the harness's own writer
    return path


def kubectl(cluster, *args, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    env = dict(os.environ, KUBECONFIG=cluster.kubeconfig)
    proc = subprocess.run(["kubectl", *args], input=stdin, capture_output=True, text=True, env=env, timeout=120,
                          check=False)
    if check and proc.returncode:
        raise AssertionError("kubectl %s: %s" % (" ".join(args), proc.stderr))
    return proc


def apply(cluster, docs: list) -> None:
    """Apply RBAC documents as the cluster admin (`kubectl apply`, so a changed role replaces the rules)."""
    kubectl(cluster, "apply", "-f", "-", stdin=yaml.safe_dump_all(docs))


def apply_file(cluster, name: str) -> None:
    """Apply docs/rbac/<name>.yaml as a user would: `kubectl apply -f` of the file as it is."""
    kubectl(cluster, "apply", "-f", os.path.join(RBAC_DIR, name + ".yaml"))


def delete(cluster, docs: list) -> None:
    kubectl(cluster, "delete", "--ignore-not-found", "--wait=false", "-f", "-", stdin=yaml.safe_dump_all(docs),
            check=False)


def rule_count(docs: list) -> dict:
    """{'<Kind>/<namespace>/<name>': number of rules} of the roles in `docs`."""
    return {"%s/%s/%s" % (d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"]): len(d["rules"])
            for d in docs if d["kind"] in ("ClusterRole", "Role")}


def without(docs: list, kind: str, group: str, resource: str, verb: str, namespace: str | None = None) -> list:
    """A copy of `docs` where the roles of `kind` (in `namespace`) no longer grant `verb` on
    `group`/`resource`; every other permission stays."""
    out = copy.deepcopy(docs)
    removed = 0
    for doc in out:
        if doc["kind"] != kind or doc["metadata"].get("namespace") != namespace:
            continue
        rules = []
        for rule in doc["rules"]:
            if group in rule.get("apiGroups", []) and resource in rule.get("resources", []) and verb in rule["verbs"]:
                removed += 1
                others = [r for r in rule["resources"] if r != resource]
                if others:
                    rules.append(dict(rule, resources=others))
                verbs = [v for v in rule["verbs"] if v != verb]
                if verbs:
                    rules.append(dict(rule, resources=[resource], verbs=verbs))
            else:
                rules.append(rule)
        doc["rules"] = rules
    assert removed, "no %s rule grants %s on %s/%s" % (kind, verb, group, resource)
    return out


def snapshot(kube) -> dict:
    """What a failed run must leave alone: resourceVersions of every Kueue object, the namespaces,
    the Helm release records, the Kueue CRDs and the Jobs (metadata lists: kubeutil.metadata_items)."""
    out = resource_versions(kube, KUEUE_PLURALS, missing_ok=True)  # none before Kueue's CRDs are installed
    for ns in metadata_items(kube, "/api/v1/namespaces"):
        out[("Namespace", "", ns["metadata"]["name"])] = ns["metadata"]["resourceVersion"]
    for secret in metadata_items(kube, "/api/v1/secrets", labelSelector="owner=helm"):
        meta = secret["metadata"]
        out[("HelmRecord", meta["namespace"], meta["name"])] = meta["resourceVersion"]
    for crd in kueue_crd_items(kube):
        out[("CRD", "", crd["metadata"]["name"])] = crd["metadata"]["resourceVersion"]
    for job in metadata_items(kube, "/apis/batch/v1/jobs"):
        meta = job["metadata"]
        out[("Job", meta["namespace"], meta["name"])] = meta["resourceVersion"]
    out.update(chart_objects(kube))
    return out


def stable_snapshot(kube, timeout: float = 60) -> dict:
    """``snapshot(kube)`` once Kueue's own status updates have settled (two reads 2 s apart agree), so that a comparison
    with it after a run sees only what the run did: a queue created just before is still being made Active by the
    manager, and on a loaded machine its status write can land after an unsettled snapshot."""
    found = {}

    def settled():
        found["now"] = snapshot(kube)
        time.sleep(2)
        return snapshot(kube) == found["now"]
    wait_for("a stable snapshot", settled, timeout=timeout)
    return found["now"]


def chart_objects(kube) -> dict:
    """{(kind, namespace, name): resourceVersion} of what the Kueue chart creates: the objects in
    kueue-system (but its default ServiceAccount and root CA ConfigMap) and the cluster-scoped kueue-*
    RBAC, webhook configurations and visibility APIServices."""
    out = {}

    def add(kind, api_path, namespace=""):
        for item in metadata_items(kube, api_path):
            name = item["metadata"]["name"]
            if name in ("default", "kube-root-ca.crt") or name.startswith("sh.helm.release."):
                continue
            if not namespace and not (name.startswith("kueue-") or name.endswith(".visibility.kueue.x-k8s.io")):
                continue
            out[(kind, namespace, name)] = item["metadata"]["resourceVersion"]

    # A namespace that does not exist lists as empty: no need to read the namespaces (again) first.
    ns = "kueue-system"
    for kind, api_path in (("ConfigMap", "/api/v1/namespaces/%s/configmaps"),
                           ("Secret", "/api/v1/namespaces/%s/secrets"),
                           ("ServiceAccount", "/api/v1/namespaces/%s/serviceaccounts"),
                           ("Service", "/api/v1/namespaces/%s/services"),
                           ("Deployment", "/apis/apps/v1/namespaces/%s/deployments"),
                           ("Role", "/apis/rbac.authorization.k8s.io/v1/namespaces/%s/roles"),
                           ("RoleBinding", "/apis/rbac.authorization.k8s.io/v1/namespaces/%s/rolebindings")):
        add(kind, api_path % ns, ns)
    for kind, api_path in (("ClusterRole", "/apis/rbac.authorization.k8s.io/v1/clusterroles"),
                           ("ClusterRoleBinding", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"),
                           ("MutatingWebhookConfiguration",
                            "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"),
                           ("ValidatingWebhookConfiguration",
                            "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"),
                           ("APIService", "/apis/apiregistration.k8s.io/v1/apiservices")):
        add(kind, api_path)
    return out
