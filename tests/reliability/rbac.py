"""Helpers of the least-privilege tests: users signed by the local cluster's CA, the RBAC files of
docs/rbac applied (or applied with one permission removed), snapshots of what a failed run must not
change."""
from __future__ import annotations

import copy
import os
import subprocess

import yaml

from tests.harness import pki
from tests.integration.kubeutil import kueue_plurals

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
    the Helm release records, the Kueue CRDs and the Jobs."""
    from kubernetes import client

    custom, core = client.CustomObjectsApi(kube), client.CoreV1Api(kube)
    out = {}
    for kind, plural in KUEUE_PLURALS.items():
        try:
            items = custom.list_cluster_custom_object("kueue.x-k8s.io", "v1beta2", plural)["items"]
        except client.exceptions.ApiException as exc:
            if exc.status != 404:
                raise
            items = []
        for item in items:
            meta = item["metadata"]
            out[(kind, meta.get("namespace", ""), meta["name"])] = meta["resourceVersion"]
    for ns in core.list_namespace().items:
        out[("Namespace", "", ns.metadata.name)] = ns.metadata.resource_version
    for secret in core.list_secret_for_all_namespaces(label_selector="owner=helm").items:
        out[("HelmRecord", secret.metadata.namespace, secret.metadata.name)] = secret.metadata.resource_version
    for crd in client.ApiextensionsV1Api(kube).list_custom_resource_definition().items:
        if crd.spec.group == "kueue.x-k8s.io":
            out[("CRD", "", crd.metadata.name)] = crd.metadata.resource_version
    for job in client.BatchV1Api(kube).list_job_for_all_namespaces().items:
        out[("Job", job.metadata.namespace, job.metadata.name)] = job.metadata.resource_version
    out.update(chart_objects(kube))
    return out


def chart_objects(kube) -> dict:
    """{(kind, namespace, name): resourceVersion} of what the Kueue chart creates: the objects in
    kueue-system (but its default ServiceAccount and root CA ConfigMap) and the cluster-scoped kueue-*
    RBAC, webhook configurations and visibility APIServices."""
    from kubernetes import client

    core, apps, rbac_api = client.CoreV1Api(kube), client.AppsV1Api(kube), client.RbacAuthorizationV1Api(kube)
    adm, reg = client.AdmissionregistrationV1Api(kube), client.ApiregistrationV1Api(kube)
    out = {}

    def add(kind, items, namespace=""):
        for item in items:
            name = item.metadata.name
            if name in ("default", "kube-root-ca.crt") or name.startswith("sh.helm.release."):
                continue
            if not namespace and not (name.startswith("kueue-") or name.endswith(".visibility.kueue.x-k8s.io")):
                continue
            out[(kind, namespace, name)] = item.metadata.resource_version

    if "kueue-system" in [n.metadata.name for n in core.list_namespace().items]:
        ns = "kueue-system"
        add("ConfigMap", core.list_namespaced_config_map(ns).items, ns)
        add("Secret", core.list_namespaced_secret(ns).items, ns)
        add("ServiceAccount", core.list_namespaced_service_account(ns).items, ns)
        add("Service", core.list_namespaced_service(ns).items, ns)
        add("Deployment", apps.list_namespaced_deployment(ns).items, ns)
        add("Role", rbac_api.list_namespaced_role(ns).items, ns)
        add("RoleBinding", rbac_api.list_namespaced_role_binding(ns).items, ns)
    add("ClusterRole", rbac_api.list_cluster_role().items)
    add("ClusterRoleBinding", rbac_api.list_cluster_role_binding().items)
    add("MutatingWebhookConfiguration", adm.list_mutating_webhook_configuration().items)
    add("ValidatingWebhookConfiguration", adm.list_validating_webhook_configuration().items)
    add("APIService", reg.list_api_service().items)
    return out
