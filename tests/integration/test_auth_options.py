"""Authentication options (issue 13, items 2 and 4), on the real local control plane with Kueue installed
(the `kueue` fixture) and, for kueue_extension, the ARM emulator:

- every documented option set through its documented action group (`group/kueueops.aks.kueue`: every
  Kubernetes option, `group/kueueops.aks.azure`: every Azure option) for every module, one playbook in check
  and diff mode; the environment holds wrong or no values, so only the groups can make it pass. The same run
  checks each module's documented `attributes`: a module that claims check mode leaves every resourceVersion
  (and ARM) unchanged, one that claims diff mode returns a diff;
- `proxy` reaching the API server through a loopback CONNECT proxy (which counts the tunnels and checks the
  Proxy-Authorization from `proxy_headers`) for the Python client and for helm (Go's CONNECT says so in its
  User-Agent);
- several kubeconfig paths merged as kubectl merges them (the user and context in one file, the cluster in
  another, a decoy after them), for the Python client and helm, through the option and through KUBECONFIG.
"""
from __future__ import annotations

import base64
import importlib.util
import ipaddress
import os
import socket
import threading

import pytest
import yaml

from tests.harness.agent import pump, serve_connections
from tests.reliability import rbac

from .ansible import module_docs, run_playbook

PROXY_USER, PROXY_PASSWORD = "kueueops", "pr0xy-s3cret-4711"
GITOPS_CRDS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "files", "gitops_crds.yml")
# Azure credentials in the environment that ARM refuses: only the azure group's can make a run pass.
WRONG_AZURE_ENV = {"AZURE_SECRET": "wrong-secret", "AZURE_CLIENT_ID": "00000000-0000-4000-8000-00000000dead",
                   "AZURE_SUBSCRIPTION_ID": "00000000-0000-4000-8000-0000000000ff",
                   "AZURE_TENANT": "00000000-0000-4000-8000-00000000beef"}
KS = {"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
      "metadata": {"name": "auth-ks", "namespace": "auth-options"},
      "spec": {"interval": "10m", "path": "./", "prune": True, "sourceRef": {"kind": "GitRepository", "name": "x"}}}


# ------------------------------------------------------------------------------------- a CONNECT proxy
class ConnectProxy:
    """An HTTP CONNECT proxy on 127.0.0.1 that tunnels to loopback targets only and records, per tunnel, the
    target, the User-Agent and whether Proxy-Authorization was the expected one (407 otherwise)."""

    def __init__(self, user, password):
        self.expected = "Basic " + base64.b64encode(("%s:%s" % (user, password)).encode()).decode()
        self.tunnels = []
        self.lock = threading.Lock()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = "http://127.0.0.1:%d" % self.sock.getsockname()[1]
        threading.Thread(target=serve_connections, args=(self.sock, self._handle), daemon=True).start()

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)  # a blocked accept() would keep it listening
        except OSError:
            pass
        self.sock.close()

    def _handle(self, conn):
        data = b""
        while b"\r\n\r\n" not in data and len(data) < 65536:
            chunk = conn.recv(4096)
            if not chunk:
                conn.close()
                return
            data += chunk
        head, rest = data.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        method, target = lines[0].split(" ")[:2]
        headers = dict((k.strip().lower(), v.strip()) for k, _s, v in (line.partition(":") for line in lines[1:]))
        host, _sep, port = target.rpartition(":")
        authorized = headers.get("proxy-authorization") == self.expected
        with self.lock:
            self.tunnels.append({"target": target, "user_agent": headers.get("user-agent", ""),
                                 "authorized": authorized})
        if method != "CONNECT" or not ipaddress.ip_address(host.strip("[]")).is_loopback:
            conn.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
            conn.close()
            return
        if not authorized:
            conn.sendall(b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n")
            conn.close()
            return
        upstream = socket.create_connection((host.strip("[]"), int(port)))
        conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        if rest:
            upstream.sendall(rest)
        threading.Thread(target=pump, args=(upstream, conn), daemon=True).start()
        pump(conn, upstream)


@pytest.fixture
def proxy():
    server = ConnectProxy(PROXY_USER, PROXY_PASSWORD)
    yield server
    server.close()


# ----------------------------------------------------------------------------------------- fixtures
def _write(path, data, mode=0o600):
    fd = os.open(str(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w") as handle:
        handle.write(data if isinstance(data, str) else yaml.safe_dump(data))
    return str(path)


@pytest.fixture
def credentials(cluster, kube, tmp_path):
    """The harness kubeconfig's pieces as files (CA, client certificate and key, a kubeconfig split in two
    with a decoy after them), and a ServiceAccount token bound to cluster-admin for api_key."""
    from kubernetes import client

    with open(cluster.kubeconfig) as handle:
        config = yaml.safe_load(handle)
    context = [c for c in config["contexts"] if c["name"] == config["current-context"]][0]["context"]
    cluster_entry = [c for c in config["clusters"] if c["name"] == context["cluster"]][0]
    user_entry = [u for u in config["users"] if u["name"] == context["user"]][0]
    out = {"server": cluster_entry["cluster"]["server"]}
    for key, name in (("ca", "certificate-authority-data"), ("cert", "client-certificate-data"),
                      ("key", "client-key-data")):
        entry = cluster_entry["cluster"] if key == "ca" else user_entry["user"]
        out[key] = _write(tmp_path / (key + ".pem"), base64.b64decode(entry[name]).decode())
    # The user and context (and current-context) in one file; the cluster in another; a decoy after
    # them names the same cluster and user differently, with a current-context of its own.
    out["users_file"] = _write(tmp_path / "users.yml", {
        "apiVersion": "v1", "kind": "Config", "current-context": "split",
        "users": [dict(user_entry, name="split-user")],
        "contexts": [{"name": "split", "context": {"cluster": "split-cluster", "user": "split-user"}}]})
    out["clusters_file"] = _write(tmp_path / "clusters.yml", {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [dict(cluster_entry, name="split-cluster")]})
    out["decoy_file"] = _write(tmp_path / "decoy.yml", {
        "apiVersion": "v1", "kind": "Config", "current-context": "decoy",
        "clusters": [{"name": "split-cluster", "cluster": {"server": "https://127.0.0.1:9"}}],
        "users": [{"name": "split-user", "user": {"token": "decoy"}}],
        "contexts": [{"name": "decoy", "context": {"cluster": "split-cluster", "user": "split-user"}}]})
    core, rbac_api = client.CoreV1Api(kube), client.RbacAuthorizationV1Api(kube)
    for create, args in ((core.create_namespace, ({"metadata": {"name": "auth-options"}},)),
                         (core.create_namespaced_service_account, ("auth-options", {"metadata": {"name": "auth-admin"}})),
                         (rbac_api.create_cluster_role_binding, ({
                             "metadata": {"name": "kueueops-auth-options"},
                             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                         "name": "cluster-admin"},
                             "subjects": [{"kind": "ServiceAccount", "name": "auth-admin",
                                           "namespace": "auth-options"}]},))):
        try:
            create(*args)
        except client.exceptions.ApiException as exc:  # left by an interrupted run
            if exc.status != 409:
                raise
    out["token"] = core.create_namespaced_service_account_token(
        "auth-admin", "auth-options", {"spec": {"expirationSeconds": 3600}}).status.token
    yield out
    rbac_api.delete_cluster_role_binding("kueueops-auth-options")
    from .kubeutil import delete_namespaces
    delete_namespaces(kube, ["auth-options"])


@pytest.fixture
def kustomization(kube, credentials):
    """A Flux Kustomization for kueue_gitops to (not) pause: its CRD from files/gitops_crds.yml when absent."""
    from kubernetes import client, utils

    ext = client.ApiextensionsV1Api(kube)
    name = "kustomizations.kustomize.toolkit.fluxcd.io"
    created = []
    try:
        ext.read_custom_resource_definition(name)
    except client.exceptions.ApiException as exc:
        if exc.status != 404:
            raise
        with open(GITOPS_CRDS) as handle:
            crd = [d for d in yaml.safe_load_all(handle) if d and d["metadata"]["name"] == name][0]
        utils.create_from_dict(kube, crd)
        created.append(name)
    from .kubeutil import wait_for
    custom = client.CustomObjectsApi(kube)
    wait_for("the Kustomization CRD", lambda: custom.create_namespaced_custom_object(
        "kustomize.toolkit.fluxcd.io", "v1", "auth-options", "kustomizations", KS), timeout=60)
    yield lambda: custom.get_namespaced_custom_object("kustomize.toolkit.fluxcd.io", "v1", "auth-options",
                                                      "kustomizations", "auth-ks")["metadata"]["resourceVersion"]
    for crd in created:
        ext.delete_custom_resource_definition(crd)


def attributes(module):
    """The module's documented attributes, as ansible-doc shows them (the attributes fragment merged in)."""
    return module_docs(module)[module]["attributes"]


def fragment(name):
    """The ModuleDocFragment class of plugins/doc_fragments/<name>.py (a file without imports)."""
    spec = importlib.util.spec_from_file_location("fragment_" + name,
                                                  os.path.join(rbac.REPO, "plugins", "doc_fragments", name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.ModuleDocFragment


# --------------------------------------------------------------------------------------------- tests
def test_every_option_through_the_groups_check_and_diff_mode_and_the_proxy(
        cluster, kueue, arm, arm_control, credentials, kustomization, proxy, tmp_path):
    kube = kueue
    azure = arm.env()
    kube_options = {
        "kubeconfig": credentials["users_file"] + os.pathsep + credentials["clusters_file"],
        "context": "split", "host": credentials["server"], "api_key": credentials["token"],
        "ca_cert": credentials["ca"], "client_cert": credentials["cert"], "client_key": credentials["key"],
        "validate_certs": True, "proxy": proxy.url, "no_proxy": "example.invalid,.example.invalid,10.0.0.0/8",
        "proxy_headers": {"proxy_basic_auth": "%s:%s" % (PROXY_USER, PROXY_PASSWORD)},
        "impersonate_user": "kueueops-auth-admin", "impersonate_groups": ["system:masters", "system:authenticated"]}
    azure_options = {
        "auth_source": "auto", "subscription_id": azure["AZURE_SUBSCRIPTION_ID"], "client_id": azure["AZURE_CLIENT_ID"],
        "secret": azure["AZURE_SECRET"], "tenant": azure["AZURE_TENANT"], "profile": "default",
        "cloud_environment": azure["AZURE_CLOUD_ENVIRONMENT"], "ca_bundle": azure["AZURE_CA_BUNDLE"]}
    # Documented option sets = the fragments' options (test_doc_fragments.py ties them to the argspecs).
    kube_auth, azure_auth = fragment("kube_auth"), fragment("azure_auth")
    assert set(kube_options) == set(yaml.safe_load(kube_auth.DOCUMENTATION)["options"])
    assert set(azure_options) == set(yaml.safe_load(azure_auth.DOCUMENTATION)["options"]) | set(
        yaml.safe_load(azure_auth.CONNECTION)["options"])
    # Nothing right in the environment: only the groups can make this pass.
    env = dict(WRONG_AZURE_ENV, K8S_AUTH_KUBECONFIG="", KUBECONFIG=str(tmp_path / "none"), AZURE_CA_BUNDLE="",
               AZURE_CLOUD_ENVIRONMENT="AzureCloud", NO_PROXY="", HTTPS_PROXY="", no_proxy="", https_proxy="")
    chart_version = cluster.state["chart_versions"][0]
    tasks = {
        "kueue_helm": {"chart_ref": os.environ["KUEUE_CHART_REF"], "chart_version": chart_version, "plain_http": True,
                       "wait": False, "feature_gates": {"LocalQueueMetrics": True}},
        "kueue_verify": {"wait": False, "fail_on_error": False},
        "kueue_queues": {"resources": [{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                                        "metadata": {"name": "auth-options-flavor"}, "spec": {}}], "timeout": 60},
        "kueue_backup": {"dest": str(tmp_path / "backups")},
        "kueue_gitops": {"state": "paused", "state_file": str(tmp_path / "gitops.json"),
                         "objects": [{k: (KS["metadata"][k] if k in ("name", "namespace") else KS[k])
                                      for k in ("apiVersion", "kind", "name", "namespace")}]},
        "kueue_jobs_info": {"namespaces": ["auth-options"]},
        "kueue_info": {},
        # the flavor kueue_queues only checked: missing, with its diff
        "kueue_drift_info": {"resources": [{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                                            "metadata": {"name": "auth-options-flavor"}, "spec": {}}]},
        "kueue_extension": {"resource_group": azure["AKS_RESOURCE_GROUP"], "cluster_name": azure["AKS_CLUSTER_NAME"],
                            "preflight": False, "wait_timeout": 60},
        # the installed version as the target: an up-to-date plan, read through the groups and the proxy
        "kueue_upgrade_plan": {"chart_ref": os.environ["KUEUE_CHART_REF"], "target_version": chart_version,
                               "plain_http": True},
        "kueue_storage_migration": {"page_size": 50},
        # the nodes and the live flavors through the proxy, the agent pools from ARM through the azure group
        "kueue_capacity_info": {"resource_group": azure["AKS_RESOURCE_GROUP"], "cluster_name": azure["AKS_CLUSTER_NAME"]},
        # the worker's RBAC dry-run applied, its kubeconfig built (token redacted) through the groups and the proxy
        "kueue_multikueue_worker": {"cluster_name": "auth-options"},
    }
    modules = sorted(f[:-3] for f in os.listdir(os.path.join(rbac.REPO, "plugins", "modules")) if f.endswith(".py"))
    assert sorted(tasks) == modules
    (tmp_path / "backups").mkdir()
    play = [{"name": "groups", "hosts": "local", "gather_facts": False,
             "module_defaults": {"group/kueueops.aks.kueue": kube_options, "group/kueueops.aks.azure": azure_options},
             "tasks": [{"name": name, "kueueops.aks." + name: args} for name, args in tasks.items()]}]
    # Kueue's status updates settle first (as in the bad-input corpus), so the comparison can only see the run.
    before, ks_before = rbac.stable_snapshot(kube), kustomization()
    result = run_playbook(play, check=True, diff=True, env=env)
    assert result.rc == 0, (result, result.stdout[-3000:])
    assert result.failed == 0
    # Check mode wrote nothing: not in the cluster, not in ARM, not on disk.
    assert rbac.snapshot(kube) == before and kustomization() == ks_before
    assert arm_control.writes(path="/extensions", methods=("PUT", "PATCH", "DELETE", "POST")) == []
    assert os.listdir(str(tmp_path / "backups")) == [] and not (tmp_path / "gitops.json").exists()
    for name in tasks:
        res, attrs = result.result(name), attributes(name)
        assert attrs["platform"]["platforms"] == "all", name
        assert attrs["check_mode"]["support"] in ("full", "partial"), name  # every module runs in check mode
        assert not res.get("skipped"), (name, res)
        if attrs["diff_mode"]["support"] in ("full", "partial"):
            assert res.get("diff"), (name, "claims diff mode and returned no diff", res)
        else:
            assert not res.get("diff"), (name, "returns a diff its attributes do not claim")
    for name in ("kueue_helm", "kueue_queues", "kueue_gitops", "kueue_extension", "kueue_multikueue_worker"):
        assert result.result(name)["changed"], name  # what check mode would do is reported
    # The proxy carried the Python client and helm (Go's CONNECT has a Go User-Agent), every tunnel to the
    # API server and with the proxy user and password of proxy_headers; the secret was never printed.
    server = credentials["server"].split("://", 1)[1]
    assert proxy.tunnels and all(t["target"] == server and t["authorized"] for t in proxy.tunnels), proxy.tunnels
    assert any(t["user_agent"].startswith("Go-http-client") for t in proxy.tunnels), "helm did not use the proxy"
    assert any(not t["user_agent"].startswith("Go-http-client") for t in proxy.tunnels), "Python did not use it"
    assert PROXY_PASSWORD not in result.stdout + result.stderr
    assert credentials["token"] not in result.stdout + result.stderr


def test_several_kubeconfig_paths_are_merged_for_python_and_helm(cluster, kueue, credentials):
    """The user and context in one file, the cluster in another, a decoy after both that names the same
    cluster and user differently and sets its own current-context (kubectl keeps the first of each; the
    Python client's own merger would take the decoy's current-context): kueue_info (the Python client) and
    kueue_helm in check mode (helm reads the release through the same paths) work, once with the option and
    once with KUBECONFIG."""
    paths = os.pathsep.join([credentials["users_file"], credentials["clusters_file"], credentials["decoy_file"]])
    chart_version = cluster.state["chart_versions"][0]
    helm_args = {"chart_ref": os.environ["KUEUE_CHART_REF"], "chart_version": chart_version, "plain_http": True,
                 "wait": False}
    play = [{"name": "paths", "hosts": "local", "gather_facts": False, "tasks": [
        {"name": "info option", "kueueops.aks.kueue_info": {"kubeconfig": paths}},
        {"name": "helm option", "kueueops.aks.kueue_helm": dict(helm_args, kubeconfig=paths)},
        {"name": "info env", "kueueops.aks.kueue_info": {}, "environment": {"KUBECONFIG": paths}},
        {"name": "helm env", "kueueops.aks.kueue_helm": helm_args, "environment": {"KUBECONFIG": paths}}]}]
    result = run_playbook(play, check=True, diff=True, env={"K8S_AUTH_KUBECONFIG": "", "KUBECONFIG": "/nonexistent"})
    assert result.rc == 0, (result, result.stdout[-3000:])
    for name in ("info option", "info env"):
        assert result.result(name)["install_method"] == "helm", result.result(name)
    for name in ("helm option", "helm env"):
        res = result.result(name)
        # helm (helm list, helm get values) found the release through the split kubeconfig.
        assert res["diff"]["before"]["status"] == "deployed", res
        assert res["diff"]["before"]["chart_version"] == chart_version and res["server_version"] == cluster.kubernetes_version(), res


def test_proxy_applies_to_the_cluster_of_the_fetched_credentials(kueue, arm, arm_control, proxy):
    """kueue_extension's preflight with no Kubernetes options reads the cluster with the credentials it fetches
    from ARM; the proxy options (how to reach an API server) still apply. Kueue from Helm runs here, so the
    preflight refuses, after reading the Deployments through the proxy."""
    azure = arm.env()
    play = [{"name": "fetched", "hosts": "local", "gather_facts": False, "tasks": [{
        "name": "extension", "kueueops.aks.kueue_extension": {
            "resource_group": azure["AKS_RESOURCE_GROUP"], "cluster_name": azure["AKS_CLUSTER_NAME"],
            "proxy": proxy.url, "proxy_headers": {"proxy_basic_auth": "%s:%s" % (PROXY_USER, PROXY_PASSWORD)}}}]}]
    result = run_playbook(play, check=True, env={"K8S_AUTH_KUBECONFIG": "", "KUBECONFIG": "/nonexistent"})
    assert result.rc != 0 and "unmanaged" in " ".join(result.failure_messages()), result
    assert proxy.tunnels and all(t["authorized"] for t in proxy.tunnels), proxy.tunnels
    assert arm_control.writes(path="/extensions", methods=("PUT", "PATCH", "DELETE", "POST")) == []


ROLES_NAMESPACE = "roles-groups"
ROLES_QUEUES = [
    {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "roles-groups-flavor"},
     "spec": {}},
    {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "roles-groups-cq"},
     "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
         {"name": "roles-groups-flavor", "resources": [{"name": "cpu", "nominalQuota": "1"}]}]}]}},
    {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
     "metadata": {"name": "roles-groups-lq", "namespace": ROLES_NAMESPACE}, "spec": {"clusterQueue": "roles-groups-cq"}},
]


def test_the_roles_take_the_connection_from_the_groups(cluster, kueue, arm, arm_control, tmp_path):
    """docs/usage.md's first play: the job roles with the connection in the play's module_defaults for the two action
    groups, and no kueue_kubeconfig, kueue_kube_context or kueue_azure_* variable. KUBECONFIG names a decoy cluster
    (127.0.0.1:9, nothing listens) and the AZURE_* variables wrong credentials, so a task of the roles that lost the
    groups' values fails (each of them did: an argument omitted with default(omit) dropped the play's value too, and
    the module fell back to KUBECONFIG, another cluster). The second play names the AKS cluster: the roles fetch its
    credentials and read its agent pools from ARM with the azure group's credentials."""
    from kubernetes import client

    kube = kueue
    azure = arm.env()
    decoy = _write(tmp_path / "decoy.yml", {
        "apiVersion": "v1", "kind": "Config", "current-context": "decoy",
        "clusters": [{"name": "decoy", "cluster": {"server": "https://127.0.0.1:9"}}],
        "users": [{"name": "decoy", "user": {"token": "decoy"}}],
        "contexts": [{"name": "decoy", "context": {"cluster": "decoy", "user": "decoy"}}]})
    env = dict(WRONG_AZURE_ENV, K8S_AUTH_KUBECONFIG="", KUBECONFIG=decoy)
    azure_options = {"subscription_id": azure["AZURE_SUBSCRIPTION_ID"], "client_id": azure["AZURE_CLIENT_ID"],
                     "secret": azure["AZURE_SECRET"], "tenant": azure["AZURE_TENANT"],
                     "cloud_environment": azure["AZURE_CLOUD_ENVIRONMENT"], "ca_bundle": azure["AZURE_CA_BUNDLE"]}
    # A new user's inventory: the chart's registry only (the local one), no kubeconfig variable.
    inventory = _write(tmp_path / "inventory.yml", {"kueue_clusters": {"hosts": {"local": {
        "ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}",
        "kueue_helm_chart_ref": os.environ["KUEUE_CHART_REF"], "kueue_helm_plain_http": True}}}})
    queues = {"role": "kueueops.aks.configure_queues",
              "vars": {"kueue_resources": ROLES_QUEUES, "kueue_create_namespaces": True}}
    plays = [
        {"name": "the connection in the groups", "hosts": "kueue_clusters", "gather_facts": False,
         "module_defaults": {"group/kueueops.aks.kueue": {"kubeconfig": cluster.kubeconfig},
                             "group/kueueops.aks.azure": azure_options},
         "roles": [{"role": "kueueops.aks.install"}, queues]},
        {"name": "the AKS cluster named: its credentials and agent pools from ARM", "hosts": "kueue_clusters",
         "gather_facts": False, "module_defaults": {"group/kueueops.aks.azure": azure_options},
         "roles": [dict(queues, vars=dict(queues["vars"], kueue_aks_resource_group=azure["AKS_RESOURCE_GROUP"],
                                          kueue_aks_cluster_name=azure["AKS_CLUSTER_NAME"]))]},
    ]
    custom = client.CustomObjectsApi(kube)
    arm_control.clear_requests()
    try:
        result = run_playbook(plays, env=env, inventory=inventory)
        assert result.rc == 0 and result.failed == 0, (result, result.stdout[-3000:])
        assert custom.get_namespaced_custom_object("kueue.x-k8s.io", "v1beta2", ROLES_NAMESPACE, "localqueues",
                                                   "roles-groups-lq")["spec"]["clusterQueue"] == "roles-groups-cq"
        assert "roles-groups-lq" in result.stdout  # the LocalQueue was applied by the run, on this cluster
        # The second play read ARM with the group's credentials: the cluster's credentials, and the managed cluster
        # (its agentPoolProfiles, for the capacity check).
        cluster_path = "/managedClusters/" + azure["AKS_CLUSTER_NAME"]
        assert arm_control.requests(method="POST", path=cluster_path + "/listClusterUserCredential")
        assert [r for r in arm_control.requests(method="GET", path=cluster_path)
                if r["path"].lower().endswith(cluster_path.lower()) and r["status"] == 200], arm_control.requests()
        assert azure["AZURE_SECRET"] not in result.stdout + result.stderr
    finally:
        from .kubeutil import delete_kueue_objects, delete_namespaces, kueue_plurals
        delete_kueue_objects(kube, kueue_plurals("ResourceFlavor", "ClusterQueue", "LocalQueue"),
                             lambda _kind, meta: meta["name"].startswith("roles-groups-"))
        delete_namespaces(kube, [ROLES_NAMESPACE])
