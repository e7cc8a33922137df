"""The ARM emulator (tests/emulators/arm) driven by the real Azure SDK over HTTPS.

Token from the emulator's Entra ID endpoint (ClientSecretCredential, custom authority,
instance discovery off), the managed cluster and its credentials, the microsoft.kueue
extension's whole life (create -> Kueue really running -> update -> delete -> Kueue gone,
Jobs left), and the fault switches.
"""
from __future__ import annotations

import base64
import ipaddress
import json
import os
import ssl
import urllib.error
import urllib.request

import pytest
import yaml

from tests.emulators.arm.kube import extension_version

from .kubeutil import helm, kueue_crds, wait_for

pytestmark = pytest.mark.timeout(600)

RP, TYPE = "Microsoft.ContainerService", "managedClusters"


@pytest.fixture(scope="module")
def azure(arm):
    from azure.identity import ClientSecretCredential
    from azure.mgmt.containerservice import ContainerServiceClient
    from azure.mgmt.kubernetesconfiguration.extensions import KubernetesConfigurationExtensionsMgmtClient

    env = arm.env()

    def credential(secret: str = env["AZURE_SECRET"]):
        return ClientSecretCredential(env["AZURE_TENANT"], env["AZURE_CLIENT_ID"], secret, authority=arm.url,
                                      disable_instance_discovery=True, connection_verify=arm.ca_path)

    def clients(secret: str = env["AZURE_SECRET"], **extra):
        kwargs = dict(base_url=arm.url, credential_scopes=[arm.url + "/.default"], connection_verify=arm.ca_path, **extra)
        cred = credential(secret)
        return (ContainerServiceClient(cred, env["AZURE_SUBSCRIPTION_ID"], **kwargs),
                KubernetesConfigurationExtensionsMgmtClient(cred, env["AZURE_SUBSCRIPTION_ID"], **kwargs))

    aks, ext = clients()
    return {"aks": aks, "ext": ext, "clients": clients, "credential": credential, "rg": env["AKS_RESOURCE_GROUP"],
            "cluster": env["AKS_CLUSTER_NAME"]}


@pytest.fixture(autouse=True)
def no_extension_left(azure):
    """A test that fails half-way leaves no extension behind for the next one."""
    yield
    for ext in azure["ext"].extensions.list(azure["rg"], RP, TYPE, azure["cluster"]):
        azure["ext"].extensions.begin_delete(azure["rg"], RP, TYPE, azure["cluster"], ext.name).result()


def ext_args(azure, name: str = "kueue") -> tuple:
    return (azure["rg"], RP, TYPE, azure["cluster"], name)


def kube_from(kubeconfig: bytes):
    from kubernetes import config
    return config.new_client_from_config_dict(yaml.safe_load(kubeconfig))


def test_cluster_properties_and_credentials(cluster, azure, arm_control):
    from kubernetes import client

    mc = azure["aks"].managed_clusters.get(azure["rg"], azure["cluster"])
    # ARM reports the version of the cluster it stands for: the local control plane's, as ARM writes it (no "v").
    served = cluster.kubernetes_version().lstrip("v")
    assert (mc.kubernetes_version, mc.sku.name, mc.node_provisioning_profile.mode) == (served, "Base", "Manual")
    assert mc.id.endswith("/managedClusters/" + azure["cluster"]) and mc.agent_pool_profiles[0].mode == "System"

    arm_control.cluster(kubernetesVersion="1.33.2", currentKubernetesVersion="1.33.2",
                        sku={"name": "Automatic"}, nodeProvisioningProfile={"mode": "Auto"})
    mc = azure["aks"].managed_clusters.get(azure["rg"], azure["cluster"])
    assert (mc.kubernetes_version, mc.sku.name, mc.sku.tier, mc.node_provisioning_profile.mode) == (
        "1.33.2", "Automatic", "Standard", "Auto")

    for listing, name in ((azure["aks"].managed_clusters.list_cluster_user_credentials, "clusterUser"),
                          (azure["aks"].managed_clusters.list_cluster_admin_credentials, "clusterAdmin")):
        creds = listing(azure["rg"], azure["cluster"])
        assert creds.kubeconfigs[0].name == name
        kubeconfig = creds.kubeconfigs[0].value
        kubeconfig = kubeconfig if isinstance(kubeconfig, bytes) else base64.b64decode(kubeconfig)
        assert client.VersionApi(kube_from(kubeconfig)).get_code().git_version.startswith("v1.34")

    from azure.core.exceptions import ResourceNotFoundError
    with pytest.raises(ResourceNotFoundError) as err:
        azure["aks"].managed_clusters.get(azure["rg"], "no-such-cluster")
    assert err.value.error.code == "ResourceNotFound"
    with pytest.raises(ResourceNotFoundError) as err:
        azure["aks"].managed_clusters.get("no-such-rg", azure["cluster"])
    assert err.value.error.code == "ResourceGroupNotFound"


def test_authentication(arm, azure, arm_control):
    from azure.core.exceptions import ClientAuthenticationError

    aks, _ext = azure["clients"]("not-the-secret")
    with pytest.raises(ClientAuthenticationError) as err:
        aks.managed_clusters.get(azure["rg"], azure["cluster"])
    assert "AADSTS7000215" in str(err.value) and "not-the-secret" not in str(err.value)
    assert [r["status"] for r in arm_control.requests(method="POST", path="/oauth2/v2.0/token")] == [401]
    assert not arm_control.requests(path="/subscriptions/")  # no ARM request without a token

    url = "%s/subscriptions/%s/resourceGroups/%s/providers/%s/%s/%s?api-version=2025-10-01" % (
        arm.url, arm.env()["AZURE_SUBSCRIPTION_ID"], azure["rg"], RP, TYPE, azure["cluster"])
    for headers, code in (({}, "AuthenticationFailed"), ({"Authorization": "Bearer x.y.z"}, "InvalidAuthenticationToken")):
        with pytest.raises(urllib.error.HTTPError) as http_err:
            urllib.request.urlopen(urllib.request.Request(url, headers=headers),
                                   context=ssl.create_default_context(cafile=arm.ca_path))
        assert http_err.value.code == 401 and http_err.value.headers["WWW-Authenticate"].startswith("Bearer ")
        assert code in http_err.value.read().decode()


def test_validation_and_api_versions(azure, arm_control):
    from azure.core.exceptions import HttpResponseError

    future, _ext = azure["clients"](api_version="2099-01-01")
    with pytest.raises(HttpResponseError) as err:
        future.managed_clusters.get(azure["rg"], azure["cluster"])
    assert err.value.status_code == 400 and err.value.error.code == "NoRegisteredProviderFound"

    bad = [({"properties": {"extensionType": "microsoft.other"}}, "is not registered"),
           ({"properties": {"extensionType": "microsoft.kueue", "version": "0.19.2-aks.0.4.4",
                            "autoUpgradeMinorVersion": True}}, "autoUpgradeMinorVersion must be 'false'"),
           ({"properties": {"extensionType": "microsoft.kueue", "releaseTrain": "nightly"}}, "release train")]
    for body, message in bad:
        with pytest.raises(HttpResponseError) as err:
            azure["ext"].extensions.begin_create(*ext_args(azure), body)
        assert err.value.status_code == 400 and message in err.value.error.message
    assert not arm_control.extensions()


def test_extension_type_versions_through_the_generated_client(arm, azure, arm_control):
    """ExtensionTypes_ClusterListVersions / _ClusterGetVersion as the generated client of the extension types API
    (azure-mgmt-kubernetesconfiguration-extensiontypes, 2024-11-01-preview) sends and deserializes them."""
    from azure.core.exceptions import HttpResponseError, ResourceNotFoundError
    from azure.mgmt.kubernetesconfiguration.extensiontypes import KubernetesConfigurationExtensionTypesMgmtClient

    types = KubernetesConfigurationExtensionTypesMgmtClient(
        azure["credential"](), arm.env()["AZURE_SUBSCRIPTION_ID"], base_url=arm.url,
        credential_scopes=[arm.url + "/.default"], connection_verify=arm.ca_path).extension_types
    where = (azure["rg"], RP, TYPE, azure["cluster"], "microsoft.kueue")
    # Every chart version of the local registry, newest first, in AKS's own form: 0.19.2 as 0.19.2-aks.0.4.4.
    charts = [extension_version(c) for c in os.environ["KUEUE_CHART_VERSIONS"].split()]
    assert all(c.endswith("-aks.0.4.4") for c in charts) and os.environ["KUEUE_EXTENSION_VERSIONS"].split() == charts
    listed = list(types.cluster_list_versions(*where, release_train="preview"))
    assert [v.properties.version for v in listed] == charts
    first = listed[0]
    assert first.name == charts[0] and first.type == "Microsoft.KubernetesConfiguration/extensionTypes/versions"
    assert first.id.lower().endswith("/managedclusters/%s/providers/microsoft.kubernetesconfiguration/extensiontypes/"
                                     "microsoft.kueue/versions/%s" % (azure["cluster"].lower(), charts[0]))
    unsupported = first.properties.unsupported_kubernetes_versions.managed_cluster[0]
    assert unsupported.distributions == ["AKS"] and unsupported.unsupported_versions == ["<1.34"]
    assert [v.properties.version for v in types.cluster_list_versions(*where, show_latest=True)] == charts[:1]
    major = charts[-1].split(".")[0]
    assert [v.properties.version for v in types.cluster_list_versions(*where, major_version=major)] == \
        [c for c in charts if c.split(".")[0] == major]
    assert types.cluster_get_version(*where, charts[-1]).properties.version == charts[-1]
    with pytest.raises(ResourceNotFoundError):  # the chart's own version is not an extension version
        types.cluster_get_version(*where, os.environ["KUEUE_CHART_VERSIONS"].split()[-1])

    arm_control.offers({"stable": []})
    assert list(types.cluster_list_versions(*where)) == []  # the default train is stable
    with pytest.raises(ResourceNotFoundError):
        types.cluster_get_version(*where, charts[0])          # not offered in stable now
    with pytest.raises(ResourceNotFoundError):
        list(types.cluster_list_versions(*where[:-1], "microsoft.flux"))
    # Installs honour the same offer: a stable-train extension has no version to install.
    poller = azure["ext"].extensions.begin_create(*ext_args(azure), {"properties": {
        "extensionType": "microsoft.kueue", "releaseTrain": "stable"}})
    with pytest.raises(HttpResponseError):
        poller.result()
    ext = azure["ext"].extensions.get(*ext_args(azure))
    assert ext.provisioning_state == "Failed" and "Release train 'stable' offers no version" in ext.error_info.message


def test_extension_lifecycle(cluster, kube, azure, arm_control):
    """Create -> Kueue really runs (both Deployments ready, aks-* objects, webhooks) -> get/list
    (with 429s and 500s retried) -> update -> delete: every Kueue object and CRD gone, the Job left."""
    from azure.core.exceptions import ResourceNotFoundError
    from kubernetes import client

    apps, core, custom = client.AppsV1Api(kube), client.CoreV1Api(kube), client.CustomObjectsApi(kube)
    newest = cluster.state["chart_versions"][0]
    body = {"properties": {"extensionType": "microsoft.kueue", "releaseTrain": "preview", "autoUpgradeMode": "patch",
                           "scope": {"cluster": {"releaseNamespace": "kueue-system"}},
                           "configurationSettings": {"emulator.note": "first"},
                           "configurationProtectedSettings": {"emulator.secret": "hunter2"}}}
    poller = azure["ext"].extensions.begin_create(*ext_args(azure), body)
    assert arm_control.requests(method="PUT")[0]["status"] == 201
    result = poller.result()
    assert result.properties.provisioning_state == "Succeeded"
    # currentVersion in AKS's form; the extension installed that version's Kueue chart.
    assert result.properties.current_version == extension_version(newest) and result.properties.extension_state == "Ready"
    releases = json.loads(helm(cluster, os.environ["HELM_V3"], "list", "-n", "kueue-system", "-o", "json").stdout)
    assert [(r["name"], r["chart"]) for r in releases] == [("kueue", "kueue-" + newest)], releases
    assert result.properties.configuration_settings == {"emulator.note": "first"}
    assert not result.properties.configuration_protected_settings
    assert result.properties.aks_assigned_identity.type == "SystemAssigned" and result.system_data.created_by_type == "Application"
    # Everything now running listens on loopback only: the control plane, the Kueue manager and the
    # extension's process the node agent runs, and the emulator itself.
    from .test_harness import _listeners_of, assert_loopback_only
    assert_loopback_only(cluster, kube)
    with open(os.path.join(cluster.folder, "arm", "state.json")) as handle:
        emulator = _listeners_of({json.load(handle)["pid"]})
    assert emulator and all(ipaddress.ip_address(addr).is_loopback for addr, _port, _pid in emulator), emulator

    for name in ("kueue-controller-manager", "kueue-extension"):
        dep = apps.read_namespaced_deployment(name, "kueue-system")
        assert dep.status.ready_replicas == 1, name
    assert custom.get_cluster_custom_object("kueue.x-k8s.io", "v1beta2", "resourceflavors", "aks-cpu")
    values = {n: custom.get_cluster_custom_object("kueue.x-k8s.io", "v1beta2", "workloadpriorityclasses", n)["value"]
              for n in ("aks-low-priority", "aks-medium-priority", "aks-high-priority")}
    assert values == {"aks-low-priority": 100, "aks-medium-priority": 500, "aks-high-priority": 1000}
    probe = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "probe"}, "spec": {}}
    custom.create_cluster_custom_object("kueue.x-k8s.io", "v1beta2", "clusterqueues", probe, dry_run="All")

    arm_control.fault(429, count=2, method="GET", path="/extensions/kueue", retry_after=1)
    arm_control.fault(500, count=1, method="GET", path="/extensions/kueue")
    got = azure["ext"].extensions.get(*ext_args(azure))
    assert got.properties.provisioning_state == "Succeeded"
    assert [r["status"] for r in arm_control.requests(method="GET", path="/extensions/kueue")][-4:] == [429, 429, 500, 200]
    assert [e.name for e in azure["ext"].extensions.list(*ext_args(azure)[:4])] == ["kueue"]

    patch = {"properties": {"configurationSettings": {"emulator.note": "second"}}}
    updated = azure["ext"].extensions.begin_update(*ext_args(azure), patch).result()
    assert updated.properties.provisioning_state == "Succeeded"
    assert updated.properties.configuration_settings == {"emulator.note": "second"}
    assert arm_control.requests(method="PATCH")[-1]["status"] == 202
    azure["ext"].extensions.begin_update(*ext_args(azure), patch).result()
    assert arm_control.requests(method="PATCH")[-1]["status"] == 200  # nothing to change: no operation
    values = yaml.safe_load(helm(cluster, os.environ["HELM_V3"], "get", "values", "kueue", "-n", "kueue-system",
                                 "-o", "yaml").stdout)
    assert values["emulator"] == {"note": "second", "secret": "hunter2"}

    core.create_namespace({"metadata": {"name": "arm-jobs"}})
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "left-alone"},
           "spec": {"suspend": True, "template": {"spec": {"restartPolicy": "Never",
                                                           "containers": [{"name": "c", "image": "pause"}]}}}}
    client.BatchV1Api(kube).create_namespaced_job("arm-jobs", job)
    try:
        azure["ext"].extensions.begin_delete(*ext_args(azure)).result()
        assert arm_control.requests(method="DELETE")[-1]["status"] == 202
        with pytest.raises(ResourceNotFoundError):
            azure["ext"].extensions.get(*ext_args(azure))
        assert kueue_crds(kube) == []
        assert "kueue-extension" not in [d.metadata.name for d in apps.list_deployment_for_all_namespaces().items]
        assert client.BatchV1Api(kube).read_namespaced_job("left-alone", "arm-jobs").spec.suspend is True
    finally:
        core.delete_namespace("arm-jobs")
        wait_for("namespace arm-jobs to be gone",
                 lambda: "arm-jobs" not in [n.metadata.name for n in core.list_namespace().items], timeout=180)


def test_failed_provisioning_reports_error_info(kube, azure, arm_control):
    from azure.core.exceptions import HttpResponseError

    arm_control.provisioning(fail={"code": "ExtensionOperationFailed", "message": "helm: image pull back-off"})
    body = {"properties": {"extensionType": "microsoft.kueue", "releaseTrain": "preview"}}
    with pytest.raises(HttpResponseError) as err:
        azure["ext"].extensions.begin_create(*ext_args(azure), body).result()
    assert "image pull back-off" in str(err.value)
    props = azure["ext"].extensions.get(*ext_args(azure)).properties
    assert props.provisioning_state == "Failed"
    assert (props.error_info.code, props.error_info.message) == ("ExtensionOperationFailed", "helm: image pull back-off")
    assert props.statuses[0].level == "Error"
    arm_control.reset()

    # A version the train does not offer, and a chart version without AKS's packaging suffix, end Failed.
    for version in ("0.11.0-aks.0.4.4", os.environ["KUEUE_CHART_VERSIONS"].split()[0]):
        pinned = {"properties": {"extensionType": "microsoft.kueue", "version": version,
                                 "autoUpgradeMinorVersion": False}}
        with pytest.raises(HttpResponseError):
            azure["ext"].extensions.begin_create(*ext_args(azure), pinned).result()
        props = azure["ext"].extensions.get(*ext_args(azure)).properties
        assert props.provisioning_state == "Failed" and "Version '%s'" % version in props.error_info.message
        assert "Available versions: %s." % ", ".join(os.environ["KUEUE_EXTENSION_VERSIONS"].split()) \
            in props.error_info.message
    azure["ext"].extensions.begin_delete(*ext_args(azure)).result()
    assert kueue_crds(kube) == []  # nothing was installed, nothing to remove


def test_slow_provisioning_conflict_and_force_delete(azure, arm_control):
    from azure.core.exceptions import HttpResponseError, ResourceExistsError, ResourceNotFoundError

    arm_control.provisioning(delay_seconds=3, fail={"code": "ExtensionOperationFailed", "message": "late failure"})
    body = {"properties": {"extensionType": "microsoft.kueue"}}
    poller = azure["ext"].extensions.begin_create(*ext_args(azure), body)
    assert azure["ext"].extensions.get(*ext_args(azure)).properties.provisioning_state == "Creating"
    with pytest.raises(ResourceExistsError) as err:
        azure["ext"].extensions.begin_create(*ext_args(azure), body)
    assert err.value.status_code == 409 and err.value.error.code == "Conflict"
    with pytest.raises(HttpResponseError):
        poller.result()
    assert azure["ext"].extensions.get(*ext_args(azure)).properties.provisioning_state == "Failed"
    azure["ext"].extensions.begin_delete(*ext_args(azure), force_delete=True).result()
    assert arm_control.requests(method="DELETE")[-1]["status"] == 200
    with pytest.raises(ResourceNotFoundError):
        azure["ext"].extensions.get(*ext_args(azure))


def test_unmanaged_kueue_rejects_creation(cluster, kube, azure, arm_control):
    from azure.core.exceptions import HttpResponseError
    from kubernetes import client

    helm(cluster, os.environ["HELM_V3"], "install", "kueue", os.environ["KUEUE_CHART_REF"], "--version",
         cluster.state["chart_versions"][-1], "--plain-http", "-n", "oss-kueue", "--create-namespace")
    try:
        body = {"properties": {"extensionType": "microsoft.kueue", "releaseTrain": "stable"}}
        with pytest.raises(HttpResponseError):
            azure["ext"].extensions.begin_create(*ext_args(azure), body).result()
        props = azure["ext"].extensions.get(*ext_args(azure)).properties
        assert props.provisioning_state == "Failed"
        assert "oss-kueue/kueue-controller-manager" in props.error_info.message
        azure["ext"].extensions.begin_delete(*ext_args(azure)).result()
        assert client.AppsV1Api(kube).read_namespaced_deployment("kueue-controller-manager", "oss-kueue")
    finally:
        helm(cluster, os.environ["HELM_V3"], "uninstall", "kueue", "-n", "oss-kueue", "--wait", check=False)
        ext_api = client.ApiextensionsV1Api(kube)
        for name in kueue_crds(kube):
            ext_api.delete_custom_resource_definition(name)
        core = client.CoreV1Api(kube)
        core.delete_namespace("oss-kueue")
        wait_for("the OSS Kueue's CRDs and namespace to be gone", lambda: not kueue_crds(kube) and "oss-kueue" not in [
            n.metadata.name for n in core.list_namespace().items], timeout=180)
