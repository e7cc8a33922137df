"""The ARM emulator's HTTPS server: Entra ID token endpoint, managedClusters, extensions, control API.

Run: python -m tests.emulators.arm.server RUN_DIR   (started and stopped by emulator.py)

Shapes follow azure-rest-api-specs (see README.md): Microsoft.KubernetesConfiguration
extensions 2025-03-01 and Microsoft.ContainerService managedClusters.
"""
from __future__ import annotations

import base64
import copy
import datetime
import hashlib
import hmac
import http.server
import json
import os
import re
import secrets
import ssl
import sys
import threading
import time
import traceback
import urllib.parse
import uuid

from .kube import EXTENSION_DEPLOYMENT, MANAGER, ExtensionInstaller, KubeError

EXTENSION_API_VERSIONS = ("2022-11-01", "2023-05-01", "2024-11-01", "2025-03-01")
# managedClusters: the stable versions the azure-mgmt-containerservice releases of 2025-2026 use (41.9.0: 2026-09-01).
CLUSTER_API_VERSIONS = ("2024-09-01", "2024-10-01", "2025-01-01", "2025-02-01", "2025-03-01", "2025-04-01",
                        "2025-05-01", "2025-06-01", "2025-07-01", "2025-08-01", "2025-09-01", "2025-10-01",
                        "2026-01-01", "2026-02-01", "2026-08-01", "2026-09-01")
# Microsoft.KubernetesConfiguration/extensionTypes: ExtensionTypes_ClusterListVersions and _ClusterGetVersion
# (the 2024-11-01-preview of azure-mgmt-kubernetesconfiguration-extensiontypes, and the stable 2026-04-01).
EXTENSION_TYPES_API_VERSIONS = ("2024-11-01-preview", "2026-04-01")
EXTENSION_TYPE = "microsoft.kueue"
DEFAULT_NAMESPACE = "kueue-system"
RELEASE_TRAINS = ("stable", "preview")
TOKEN_LIFETIME = 3600

DEFAULT_CLUSTER = {
    "kubernetesVersion": "1.34.5",
    "currentKubernetesVersion": "1.34.5",
    "sku": {"name": "Base", "tier": "Standard"},
    "nodeProvisioningProfile": {"mode": "Manual"},
    "agentPoolProfiles": [{
        "name": "nodepool1", "count": 3, "vmSize": "Standard_D4s_v5", "osType": "Linux", "osSKU": "Ubuntu",
        "mode": "System", "type": "VirtualMachineScaleSets", "enableAutoScaling": True, "minCount": 1,
        "maxCount": 5, "orchestratorVersion": "1.34.5", "currentOrchestratorVersion": "1.34.5",
        "provisioningState": "Succeeded", "powerState": {"code": "Running"}, "maxPods": 110,
    }],
}


def default_cluster(version: str | None = None) -> dict:
    """DEFAULT_CLUSTER at Kubernetes ``version`` (the local control plane's, ``v1.37.2`` or ``1.37.2``; the
    emulator reports the version of the cluster it stands for, as ARM does), each pool's orchestrator too."""
    out = copy.deepcopy(DEFAULT_CLUSTER)
    if version:
        version = version.lstrip("v")
        out["kubernetesVersion"] = out["currentKubernetesVersion"] = version
        for pool in out["agentPoolProfiles"]:
            pool["orchestratorVersion"] = pool["currentOrchestratorVersion"] = version
    return out


# ManagedClusterAgentPoolProfile (managedClusters.json of the containerservice spec, 2025-10-01): the fields an
# agentPoolProfiles entry may set through the agentpools switch, with their JSON types; what ARM fills in when a
# pool is created without them (type, osType, osSKU, mode, maxPods 250 on Azure CNI overlay, the version, the
# states) comes from pool_profile.
AGENT_POOL_FIELDS = {"name": str, "count": int, "vmSize": str, "osType": str, "osSKU": str, "mode": str,
                     "enableAutoScaling": bool, "minCount": int, "maxCount": int, "maxPods": int,
                     "nodeLabels": dict, "nodeTaints": list, "scaleSetPriority": str,
                     "scaleSetEvictionPolicy": str, "availabilityZones": list, "type": str}


def pool_profile(given: dict, version: str = DEFAULT_CLUSTER["kubernetesVersion"]) -> dict:
    """An agentPoolProfiles entry as GET managedClusters returns it, from the fields a test gives; a field of
    the wrong JSON type, or an autoscaler without minCount/maxCount, is refused (400) as ARM refuses it."""
    for key, value in given.items():
        if key not in AGENT_POOL_FIELDS or not isinstance(value, AGENT_POOL_FIELDS[key]) or (
                AGENT_POOL_FIELDS[key] is int and isinstance(value, bool)):
            raise ArmError(400, "InvalidParameter", "agentPoolProfiles: %r is not a field of "
                           "ManagedClusterAgentPoolProfile of that type" % key)
    if not given.get("name") or not given.get("vmSize"):
        raise ArmError(400, "InvalidParameter", "agentPoolProfiles: name and vmSize are required")
    if given.get("enableAutoScaling") and not (isinstance(given.get("minCount"), int)
                                               and isinstance(given.get("maxCount"), int)):
        raise ArmError(400, "InvalidParameter", "agentPoolProfiles: enableAutoScaling needs minCount and maxCount")
    if any(not isinstance(t, str) or ":" not in t for t in given.get("nodeTaints") or []):
        raise ArmError(400, "InvalidParameter", "agentPoolProfiles: nodeTaints are strings key=value:Effect")
    spot = given.get("scaleSetPriority") == "Spot"
    taints = list(given.get("nodeTaints") or [])
    if spot and "kubernetes.azure.com/scalesetpriority=spot:NoSchedule" not in taints:
        taints.append("kubernetes.azure.com/scalesetpriority=spot:NoSchedule")  # AKS adds it to every Spot pool
    profile = {"count": 1, "osType": "Linux", "osSKU": "Ubuntu", "mode": "User", "type": "VirtualMachineScaleSets",
               "enableAutoScaling": False, "maxPods": 250, "orchestratorVersion": version,
               "currentOrchestratorVersion": version, "provisioningState": "Succeeded",
               "powerState": {"code": "Running"}, "scaleSetPriority": "Regular"}
    profile.update(given)
    if taints:
        profile["nodeTaints"] = taints
    if spot:
        profile.setdefault("scaleSetEvictionPolicy", "Delete")
    return profile


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def log(msg: str) -> None:
    print("[arm %s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class ArmError(Exception):
    """An error response as ARM and resource providers give it: {"error": {"code", "message"}}."""

    def __init__(self, status: int, code: str, message: str, headers: dict | None = None):
        super().__init__(message)
        self.status, self.code, self.message, self.headers = status, code, message, headers or {}


def merge(base: dict, patch: dict) -> dict:
    out = copy.deepcopy(base)
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


class Emulator:
    """All state of one emulated subscription: one resource group, one AKS cluster."""

    def __init__(self, folder: str, config: dict):
        self.folder = folder
        self.config = config
        self.url = config["url"]
        self.lock = threading.RLock()
        self.signing_key = secrets.token_bytes(32)
        self.installer = ExtensionInstaller(folder)
        self.cluster_props = default_cluster(config.get("kubernetes_version"))
        self.extensions: dict[str, dict] = {}    # lower-case name -> record
        self.operations: dict[str, dict] = {}    # operation id -> status resource
        self.faults: list[dict] = []
        self.provisioning = {"delay_seconds": 0.0, "fail": None}
        self.offers: dict[str, list] = {}  # release train -> versions offered, when a test narrows them
        self.requests: list[dict] = []
        self.busy: dict[str, threading.Thread] = {}
        self.issued_credentials: dict[str, str] = {}  # User/Admin -> base64 kubeconfig

    # ------------------------------------------------------------- identity
    def cluster_id(self) -> str:
        return "/subscriptions/%s/resourceGroups/%s/providers/Microsoft.ContainerService/managedClusters/%s" % (
            self.config["subscription_id"], self.config["resource_group"], self.config["cluster_name"])

    def issue_token(self, scope: str) -> dict:
        issued = int(time.time())
        claims = {"aud": scope[:-len("/.default")], "iss": "%s/%s/v2.0" % (self.url, self.config["tenant_id"]),
                  "iat": issued, "nbf": issued, "exp": issued + TOKEN_LIFETIME, "appid": self.config["client_id"],
                  "oid": self.config["principal_object_id"], "tid": self.config["tenant_id"], "idtyp": "app",
                  "ver": "2.0", "sub": self.config["principal_object_id"]}
        head = b64url(json.dumps({"typ": "JWT", "alg": "HS256"}).encode())
        body = b64url(json.dumps(claims).encode())
        sig = b64url(hmac.new(self.signing_key, ("%s.%s" % (head, body)).encode(), hashlib.sha256).digest())
        return {"token_type": "Bearer", "expires_in": TOKEN_LIFETIME, "ext_expires_in": TOKEN_LIFETIME,
                "access_token": "%s.%s.%s" % (head, body, sig)}

    def check_token(self, header: str | None) -> None:
        challenge = {"WWW-Authenticate": 'Bearer authorization_uri="%s/%s", error="invalid_token", '
                                         'error_description="The authentication failed because of missing '
                                         '\'Authorization\' header."' % (self.url, self.config["tenant_id"])}
        if not header:
            raise ArmError(401, "AuthenticationFailed",
                           "Authentication failed. The 'Authorization' header is missing.", challenge)
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token:
            raise ArmError(401, "AuthenticationFailed",
                           "Authentication failed. The 'Authorization' header is provided in an invalid format.",
                           challenge)
        invalid = ArmError(401, "InvalidAuthenticationToken", "The access token is invalid.",
                           {"WWW-Authenticate": 'Bearer authorization_uri="%s/%s", error="invalid_token", '
                                                'error_description="The access token is invalid."'
                                                % (self.url, self.config["tenant_id"])})
        try:
            head, body, sig = token.split(".")
            expected = b64url(hmac.new(self.signing_key, ("%s.%s" % (head, body)).encode(), hashlib.sha256).digest())
            claims = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
        except ValueError:
            raise invalid from None
        if not hmac.compare_digest(sig, expected) or claims.get("aud", "").rstrip("/") != self.url:
            raise invalid
        if claims["exp"] < time.time():
            raise ArmError(401, "ExpiredAuthenticationToken",
                           "The access token expiry UTC time '%s' is earlier than current UTC time '%s'." % (
                               datetime.datetime.fromtimestamp(claims["exp"], datetime.timezone.utc), now()))

    # ------------------------------------------------------------- clusters
    def cluster(self) -> dict:
        props = copy.deepcopy(self.cluster_props)
        location = self.config["location"]
        dns = "%s-dns" % self.config["cluster_name"]
        body = {
            "id": self.cluster_id(), "name": self.config["cluster_name"], "type": "Microsoft.ContainerService/managedClusters",
            "location": location, "sku": props.pop("sku"),
            "identity": {"type": "SystemAssigned", "principalId": self.config["principal_object_id"],
                         "tenantId": self.config["tenant_id"]},
            "properties": dict({
                "provisioningState": "Succeeded", "powerState": {"code": "Running"},
                "dnsPrefix": dns, "fqdn": "localhost", "azurePortalFQDN": "localhost",
                "enableRBAC": True, "supportPlan": "KubernetesOfficial",
                "nodeResourceGroup": "MC_%s_%s_%s" % (self.config["resource_group"], self.config["cluster_name"], location),
                "networkProfile": {"networkPlugin": "azure", "networkPluginMode": "overlay", "outboundType": "loadBalancer",
                                   "serviceCidr": self.installer.cluster.state.get("service_cidr", ""),
                                   "loadBalancerSku": "standard"},
                "oidcIssuerProfile": {"enabled": False},
            }, **props),
        }
        return body

    def credentials(self, kind: str) -> dict:
        """As AKS does: the same credential on every call until it is rotated (here: for the life of
        the emulator), so a kubeconfig written from it is stable between runs."""
        with self.lock:
            if kind not in self.issued_credentials:
                user = "cluster%s_%s_%s" % (kind, self.config["resource_group"], self.config["cluster_name"])
                self.issued_credentials[kind] = base64.b64encode(self.installer.kubeconfig(user)).decode()
            return {"kubeconfigs": [{"name": "cluster" + kind, "value": self.issued_credentials[kind]}]}

    # ----------------------------------------------------------- extensions
    def ext_id(self, name: str) -> str:
        return "%s/providers/Microsoft.KubernetesConfiguration/extensions/%s" % (self.cluster_id(), name)

    def ext_view(self, rec: dict) -> dict:
        """The Extension resource as GET returns it: protected settings never come back."""
        props = copy.deepcopy(rec["properties"])
        props["configurationProtectedSettings"] = {}
        return {"id": self.ext_id(rec["name"]), "name": rec["name"], "type": "Microsoft.KubernetesConfiguration/extensions",
                "systemData": dict(rec["systemData"]), "properties": props}

    def validate(self, body, create: bool) -> dict:
        if not isinstance(body, dict) or not isinstance(body.get("properties"), dict):
            raise ArmError(400, "InvalidRequestContent",
                           "The request content was invalid and could not be deserialized: 'properties' is required.")
        props = body["properties"]
        if create:
            ext_type = props.get("extensionType")
            if not isinstance(ext_type, str) or not ext_type:
                raise ArmError(400, "BadRequest", "The extensionType is required.")
            if ext_type.lower() != EXTENSION_TYPE:
                raise ArmError(400, "BadRequest", "Extension type '%s' is not registered for cluster type "
                               "'managedClusters' in location '%s'." % (ext_type, self.config["location"]))
            scope = props.get("scope") or {}
            if scope.get("namespace"):
                raise ArmError(400, "BadRequest", "Extension type 'microsoft.kueue' supports only the cluster scope.")
        for field in ("configurationSettings", "configurationProtectedSettings"):
            value = props.get(field)
            if value is not None and (not isinstance(value, dict)
                                      or not all(isinstance(v, str) for v in value.values())):
                raise ArmError(400, "InvalidRequestContent", "The request content was invalid and could not be "
                               "deserialized: '%s' must map names to string values." % field)
        mode = props.get("autoUpgradeMode")
        if mode is not None and mode not in ("none", "patch", "compatible"):
            raise ArmError(400, "BadRequest", "The autoUpgradeMode '%s' is not valid. Allowed values: none, patch, "
                           "compatible." % mode)
        train = props.get("releaseTrain")
        if train is not None and (not isinstance(train, str) or train.lower() not in RELEASE_TRAINS):
            raise ArmError(400, "BadRequest", "The release train '%s' is not valid for extension type "
                           "'microsoft.kueue'. Valid release trains: %s." % (train, ", ".join(RELEASE_TRAINS)))
        if props.get("version") and props.get("autoUpgradeMinorVersion") is True:
            raise ArmError(400, "BadRequest", "To use 'version', autoUpgradeMinorVersion must be 'false'.")
        if "autoUpgradeMinorVersion" in props and not isinstance(props["autoUpgradeMinorVersion"], bool):
            raise ArmError(400, "InvalidRequestContent", "The request content was invalid and could not be "
                           "deserialized: 'autoUpgradeMinorVersion' must be a boolean.")
        return props

    def new_record(self, name: str, props: dict) -> dict:
        pinned = props.get("version")
        ns = ((props.get("scope") or {}).get("cluster") or {}).get("releaseNamespace") or DEFAULT_NAMESPACE
        stamp = now()
        return {
            "name": name, "namespace": ns, "installed": False, "created_namespace": False,
            "protected": dict(props.get("configurationProtectedSettings") or {}),
            "systemData": {"createdBy": self.config["client_id"], "createdByType": "Application", "createdAt": stamp,
                           "lastModifiedBy": self.config["client_id"], "lastModifiedByType": "Application",
                           "lastModifiedAt": stamp},
            "properties": {
                "extensionType": props["extensionType"],
                "autoUpgradeMode": props.get("autoUpgradeMode") or "compatible",
                "autoUpgradeMinorVersion": props.get("autoUpgradeMinorVersion", not pinned),
                "releaseTrain": props.get("releaseTrain") or "Stable",
                "version": pinned or None,
                "scope": {"cluster": {"releaseNamespace": ns}},
                "configurationSettings": dict(props.get("configurationSettings") or {}),
                "provisioningState": "Creating", "currentVersion": None, "statuses": [], "errorInfo": None,
                "customLocationSettings": None, "packageUri": None,
                "aksAssignedIdentity": {"principalId": str(uuid.uuid5(uuid.NAMESPACE_URL, self.ext_id(name))),
                                        "tenantId": self.config["tenant_id"], "type": "SystemAssigned"},
                "isSystemExtension": False, "extensionState": None,
            },
        }

    def start_operation(self, rec: dict, action: str) -> tuple[str, dict]:
        """Run `action` (install/uninstall) in the background; return the operation id and LRO headers."""
        op_id = str(uuid.uuid4())
        op_path = "%s/operations/%s" % (self.ext_id(rec["name"]), op_id)
        self.operations[op_id] = {"id": op_path, "name": op_id, "status": "InProgress", "properties": {},
                                  "error": None, "startTime": now()}
        thread = threading.Thread(target=self.run_operation, args=(rec, action, op_id), daemon=True)
        self.busy[rec["name"].lower()] = thread
        thread.start()
        url = "%s%s?api-version=2025-03-01" % (self.url, op_path)
        return op_id, {"Azure-AsyncOperation": url, "Operation-Location": url, "Retry-After": "1",
                       "x-ms-async-operation-timeout": "PT48H"}

    def run_operation(self, rec: dict, action: str, op_id: str) -> None:
        props = rec["properties"]
        error = None
        try:
            if self.provisioning["delay_seconds"]:
                time.sleep(self.provisioning["delay_seconds"])
            fail = self.provisioning["fail"]
            if fail and action == "install":
                error = {"code": fail.get("code", "ExtensionOperationFailed"), "message": fail["message"]}
                # "count": that many operations fail, then they succeed again (one failed upgrade, say)
                if fail.get("count") is not None:
                    fail["count"] -= 1
                    if fail["count"] <= 0:
                        self.provisioning["fail"] = None
            elif action == "install":
                error = self.install(rec)
            elif rec["installed"]:  # an extension that never installed anything leaves the cluster alone
                self.installer.uninstall(rec["name"], rec["namespace"], rec["created_namespace"])
        except (KubeError, OSError) as exc:
            error = {"code": "ExtensionOperationFailed",
                     "message": "The extension operation failed with the following error: %s" % exc}
        except Exception:  # noqa: BLE001 - the operation ends Failed and the log has the trace
            log(traceback.format_exc())
            error = {"code": "InternalServerError", "message": "An internal error occurred in the emulator."}
        with self.lock:
            op = self.operations[op_id]
            op["endTime"] = now()
            self.busy.pop(rec["name"].lower(), None)
            if error:
                props["provisioningState"] = "Failed"
                props["errorInfo"] = error
                props["extensionState"] = "Failed"
                props["statuses"] = [{"code": error["code"], "displayStatus": "Failed", "level": "Error",
                                      "message": error["message"], "time": now()}]
                op.update(status="Failed", error=error)
                log("%s of %s failed: %s" % (action, rec["name"], error["message"]))
            elif action == "uninstall":
                self.extensions.pop(rec["name"].lower(), None)
                op["status"] = "Succeeded"
                log("deleted extension %s" % rec["name"])
            else:
                props.update(provisioningState="Succeeded", errorInfo=None, statuses=[], extensionState="Ready")
                op["status"] = "Succeeded"
                log("extension %s Succeeded (Kueue %s)" % (rec["name"], props["currentVersion"]))

    def offered(self, train: str | None) -> list[str]:
        """The versions of microsoft.kueue offered in release train `train` (ARM's default: stable), newest
        first, in AKS's form (0.19.2-aks.0.4.4): every Kueue chart version of the local registry in both trains,
        unless a test narrowed them."""
        train = (train or "stable").lower()
        if train not in RELEASE_TRAINS:
            return []
        versions = self.installer.extension_versions()
        if train in self.offers:
            return [v for v in versions if v in self.offers[train]]
        return versions

    def version_resource(self, version: str) -> dict:
        """ExtensionTypeVersionForReleaseTrain: the version and the Kubernetes versions it does not support."""
        return {"id": "%s/providers/Microsoft.KubernetesConfiguration/extensionTypes/%s/versions/%s" % (
                    self.cluster_id(), EXTENSION_TYPE, version),
                "name": version, "type": "Microsoft.KubernetesConfiguration/extensionTypes/versions",
                "properties": {"version": version, "supportedClusterTypes": ["managedClusters"],
                               "unsupportedKubernetesVersions": {"managedCluster": [
                                   {"distributions": ["AKS"], "unsupportedVersions": ["<1.34"]}]}}}

    def install(self, rec: dict) -> dict | None:
        """Install or upgrade; an error dict when the extension cannot be installed."""
        props = rec["properties"]
        if not rec["installed"]:
            foreign = ["%s/%s" % (d["metadata"]["namespace"], d["metadata"]["name"]) for d in self.installer.managers()]
            if foreign:
                return {"code": "ExtensionOperationFailed",
                        "message": "Kueue is already installed in this cluster outside the extension (Deployment %s). "
                                   "The microsoft.kueue extension is a cluster singleton and cannot be installed "
                                   "next to an unmanaged Kueue: uninstall it first or migrate it to the extension."
                                   % ", ".join(foreign)}
        versions = self.offered(props["releaseTrain"])
        version = props["version"] or (versions[0] if versions else None)
        if version is None:
            return {"code": "ExtensionOperationFailed",
                    "message": "Release train '%s' offers no version of extension type 'microsoft.kueue'."
                               % props["releaseTrain"]}
        if version not in versions:
            return {"code": "ExtensionOperationFailed",
                    "message": "Version '%s' of extension type 'microsoft.kueue' was not found in release train '%s'. "
                               "Available versions: %s." % (version, props["releaseTrain"], ", ".join(versions))}
        if not rec["installed"]:
            rec["created_namespace"] = not self.installer.namespace_exists(rec["namespace"])
        rec["installed"] = True
        self.installer.install(rec["name"], rec["namespace"], version, props["configurationSettings"], rec["protected"])
        props["currentVersion"] = version
        return None

    def put_extension(self, name: str, body) -> tuple[int, dict, dict]:
        props = self.validate(body, create=True)
        key = name.lower()
        with self.lock:
            self.ensure_idle(key)
            rec = self.extensions.get(key)
            if rec is None:
                rec = self.extensions[key] = self.new_record(name, props)
                _op, headers = self.start_operation(rec, "install")
                return 201, self.ext_view(rec), headers
            current = rec["properties"]
            ns = ((props.get("scope") or {}).get("cluster") or {}).get("releaseNamespace") or rec["namespace"]
            if props["extensionType"].lower() != current["extensionType"].lower() or ns != rec["namespace"]:
                raise ArmError(400, "BadRequest", "The extensionType and the release namespace of an existing "
                               "extension cannot be changed.")
            fresh = self.new_record(name, props)
            fresh["systemData"]["createdAt"] = rec["systemData"]["createdAt"]
            for field in ("installed", "created_namespace"):
                fresh[field] = rec[field]
            fresh["properties"]["currentVersion"] = current["currentVersion"]
            fresh["properties"]["provisioningState"] = "Updating" if rec["installed"] else "Creating"
            self.extensions[key] = fresh
            _op, headers = self.start_operation(fresh, "install")
            return 200, self.ext_view(fresh), headers

    def patch_extension(self, name: str, body) -> tuple[int, dict, dict]:
        props = self.validate(body, create=False)
        with self.lock:
            rec = self.get_record(name)
            self.ensure_idle(name.lower())
            current = rec["properties"]
            wanted = {k: props[k] for k in ("autoUpgradeMode", "autoUpgradeMinorVersion", "releaseTrain", "version",
                                            "configurationSettings") if k in props}
            if "version" in wanted and wanted["version"] and "autoUpgradeMinorVersion" not in wanted:
                wanted["autoUpgradeMinorVersion"] = False
            protected = props.get("configurationProtectedSettings")
            changed = any(current.get(k) != v for k, v in wanted.items())
            changed = changed or (protected is not None and protected != rec["protected"])
            if not changed and current["provisioningState"] == "Succeeded":
                return 200, self.ext_view(rec), {}
            current.update(wanted)
            if protected is not None:
                rec["protected"] = dict(protected)
            current["provisioningState"] = "Updating"
            rec["systemData"]["lastModifiedAt"] = now()
            _op, headers = self.start_operation(rec, "install")
            return 202, self.ext_view(rec), headers

    def delete_extension(self, name: str, force: bool) -> tuple[int, dict | None, dict]:
        with self.lock:
            rec = self.extensions.get(name.lower())
            if rec is None:
                return 204, None, {}
            self.ensure_idle(name.lower())
            if force:
                self.extensions.pop(name.lower())
                threading.Thread(target=self.force_cleanup, args=(rec,), daemon=True).start()
                return 200, None, {}
            rec["properties"]["provisioningState"] = "Deleting"
            _op, headers = self.start_operation(rec, "uninstall")
            return 202, None, headers

    def force_cleanup(self, rec: dict) -> None:
        if not rec["installed"]:
            return
        try:
            self.installer.uninstall(rec["name"], rec["namespace"], rec["created_namespace"])
        except (KubeError, OSError) as exc:
            log("force delete of %s: cleanup failed: %s" % (rec["name"], exc))

    def ensure_idle(self, key: str) -> None:
        if key in self.busy:
            raise ArmError(409, "Conflict", "An operation is already in progress on extension '%s'. Retry after it "
                           "completes." % self.extensions[key]["name"])

    def get_record(self, name: str) -> dict:
        rec = self.extensions.get(name.lower())
        if rec is None:
            raise ArmError(404, "ResourceNotFound", "The Resource 'Microsoft.KubernetesConfiguration/extensions/%s' "
                           "under resource group '%s' was not found. For more details please go to "
                           "https://aka.ms/ARMResourceNotFoundFix" % (name, self.config["resource_group"]))
        return rec

    # ------------------------------------------------------------- controls
    def reset(self) -> None:
        with self.lock:
            self.faults.clear()
            self.provisioning = {"delay_seconds": 0.0, "fail": None}
            self.offers = {}
            self.cluster_props = default_cluster(self.config.get("kubernetes_version"))
            self.requests.clear()

    def take_fault(self, method: str, path: str) -> dict | None:
        with self.lock:
            for fault in self.faults:
                if fault["remaining"] <= 0:
                    continue
                if fault.get("method") and fault["method"].upper() != method:
                    continue
                if fault.get("path") and fault["path"].lower() not in path.lower():
                    continue
                fault["remaining"] -= 1
                return fault
        return None


ARM_PATH = re.compile(
    r"^/subscriptions/(?P<sub>[^/]+)/resourcegroups/(?P<rg>[^/]+)"
    r"(?:/providers/(?P<rp>[^/]+)/(?P<rtype>[^/]+)/(?P<cluster>[^/]+)"
    r"(?:/(?P<action>listClusterUserCredential|listClusterAdminCredential)"
    r"|/providers/Microsoft\.KubernetesConfiguration/extensions(?:/(?P<ext>[^/]+)(?:/operations/(?P<op>[^/]+))?)?"
    r"|/providers/Microsoft\.KubernetesConfiguration/extensionTypes/(?P<etype>[^/]+)/versions(?:/(?P<etver>[^/]+))?"
    r")?)?/?$",
    re.IGNORECASE)


def arm_action(method: str, path: str) -> str:
    """The RBAC action of an ARM request, as ARM names it in AuthorizationFailed: provider/types/verb."""
    parts = [p for p in path.split("/") if p]
    lowered = [p.lower() for p in parts]
    if "providers" not in lowered:
        return "Microsoft.Resources/subscriptions/resourceGroups/read"
    idx = len(lowered) - 1 - lowered[::-1].index("providers")
    rest = parts[idx + 1:]
    types = [rest[0]] + rest[1::2]
    verb = {"GET": "read", "PUT": "write", "PATCH": "write", "DELETE": "delete"}.get(method, "action")
    return "/".join(types) + "/" + verb


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "kueueops-arm-emulator"
    emulator: Emulator

    def log_message(self, format, *args):  # noqa: A002 - BaseHTTPRequestHandler's signature
        pass

    def send(self, status: int, body=None, headers: dict | None = None) -> None:
        data = b"" if body is None else json.dumps(body).encode()
        path = urllib.parse.urlsplit(self.path).path
        if not path.startswith("/_emulator"):  # logged before the answer, so a client that has it finds it logged
            with self.emulator.lock:
                self.emulator.requests.append({"method": self.command, "path": path, "status": status, "time": time.time()})
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-ms-request-id", str(uuid.uuid4()))
        self.send_header("x-ms-correlation-request-id", self.headers.get("x-ms-client-request-id") or str(uuid.uuid4()))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        ctype = self.headers.get("Content-Type") or ""
        if "x-www-form-urlencoded" in ctype:
            return dict(urllib.parse.parse_qsl(raw.decode()))
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError as exc:
            raise ArmError(400, "InvalidRequestContent",
                           "The request content was invalid and could not be deserialized: %s" % exc) from None

    def handle_any(self) -> None:
        try:
            self.route()
        except ArmError as err:
            self.send(err.status, {"error": {"code": err.code, "message": err.message}}, err.headers)
        except Exception:  # noqa: BLE001 - a 500 as ARM gives it; the trace goes to the log
            log(traceback.format_exc())
            self.send(500, {"error": {"code": "InternalServerError", "message": "Encountered internal server error."}})

    do_GET = do_PUT = do_PATCH = do_DELETE = do_POST = handle_any

    def route(self) -> None:
        em = self.emulator
        parts = urllib.parse.urlsplit(self.path)
        path, query = parts.path, dict(urllib.parse.parse_qsl(parts.query))
        if path.startswith("/_emulator/"):
            return self.control(path[len("/_emulator/"):])
        tenant_match = re.match(r"^/([^/]+)/(v2\.0/\.well-known/openid-configuration|oauth2/v2\.0/token)$", path)
        if tenant_match:
            return self.entra(tenant_match.group(1), tenant_match.group(2))
        em.check_token(self.headers.get("Authorization"))
        fault = em.take_fault(self.command, path)
        if fault:
            self.body()
            headers = {"Retry-After": str(fault.get("retry_after", 1))} if fault["status"] == 429 else {}
            code = "TooManyRequests" if fault["status"] == 429 else "InternalServerError"
            message = ("The request is being throttled. Retry after %s seconds." % fault.get("retry_after", 1)
                       if fault["status"] == 429 else "Encountered internal server error.")
            if fault["status"] == 403:  # a role without the action: ARM's authorization failure
                code = "AuthorizationFailed"
                message = ("The client '%s' with object id '%s' does not have authorization to perform action "
                           "'%s' over scope '%s' or the scope is invalid. If access was recently granted, please "
                           "refresh your credentials." % (em.config["client_id"], em.config["client_id"],
                                                          arm_action(self.command, path), path))
            return self.send(fault["status"], {"error": {"code": code, "message": message}}, headers)
        match = ARM_PATH.match(path)
        if not match:
            raise ArmError(404, "InvalidResourceType", "The resource type could not be found in the namespace for "
                           "api version '%s'." % query.get("api-version", ""))
        self.arm(match, query)

    # ------------------------------------------------------------- Entra ID
    def entra(self, tenant: str, endpoint: str) -> None:
        em = self.emulator
        cfg = em.config
        if tenant.lower() != cfg["tenant_id"]:
            return self.send(400, {"error": "invalid_tenant", "error_codes": [90002],
                                   "error_description": "AADSTS90002: Tenant '%s' not found. Check to make sure you "
                                   "have the correct tenant ID and are signing into the correct cloud." % tenant})
        base = "%s/%s" % (em.url, cfg["tenant_id"])
        if endpoint.endswith("openid-configuration"):
            return self.send(200, {
                "token_endpoint": base + "/oauth2/v2.0/token",
                "authorization_endpoint": base + "/oauth2/v2.0/authorize",
                "device_authorization_endpoint": base + "/oauth2/v2.0/devicecode",
                "issuer": base + "/v2.0", "jwks_uri": base + "/discovery/v2.0/keys",
                "token_endpoint_auth_methods_supported": ["client_secret_post", "private_key_jwt", "client_secret_basic"],
                "response_types_supported": ["code", "id_token", "code id_token", "id_token token"],
                "scopes_supported": ["openid", "profile", "email", "offline_access"],
                "subject_types_supported": ["pairwise"], "id_token_signing_alg_values_supported": ["RS256"],
                "tenant_region_scope": "EU", "cloud_instance_name": "emulator", "cloud_graph_host_name": "localhost",
                "msgraph_host": "localhost"})
        if self.command != "POST":
            raise ArmError(405, "MethodNotAllowed", "The token endpoint accepts POST only.")
        form = self.body() or {}
        trace = "\r\nTrace ID: %s\r\nCorrelation ID: %s\r\nTimestamp: %s" % (uuid.uuid4(), uuid.uuid4(), now())

        def aad_error(status: int, error: str, code: int, text: str):
            return self.send(status, {"error": error, "error_description": "AADSTS%d: %s%s" % (code, text, trace),
                                      "error_codes": [code], "timestamp": now(), "trace_id": str(uuid.uuid4()),
                                      "correlation_id": str(uuid.uuid4()),
                                      "error_uri": "%s/error?code=%d" % (em.url, code)})
        if form.get("grant_type") != "client_credentials":
            return aad_error(400, "unsupported_grant_type", 70003, "The app requested an unsupported grant type.")
        if form.get("client_id") != cfg["client_id"]:
            return aad_error(400, "unauthorized_client", 700016, "Application with identifier '%s' was not found in "
                             "the directory '%s'." % (form.get("client_id"), cfg["tenant_id"]))
        if not hmac.compare_digest(form.get("client_secret", ""), cfg["client_secret"]):
            # Entra ID answers a wrong secret with 401 invalid_client (AADSTS7000215).
            return aad_error(401, "invalid_client", 7000215, "Invalid client secret provided. Ensure the secret being "
                             "sent in the request is the client secret value, not the client secret ID, for a secret "
                             "added to app '%s'." % cfg["client_id"])
        scope = (form.get("scope") or "").split()
        resource = [s for s in scope if s.endswith("/.default")]
        if not resource or resource[0][:-len("/.default")].rstrip("/") != em.url:
            return aad_error(400, "invalid_resource", 500011, "The resource principal named %s was not found in the "
                             "tenant named %s." % (resource[0][:-len("/.default")] if resource else "''", cfg["tenant_id"]))
        return self.send(200, em.issue_token(resource[0]))

    # ------------------------------------------------------------------ ARM
    def arm(self, match: re.Match, query: dict) -> None:
        em = self.emulator
        cfg = em.config
        g = match.groupdict()
        is_extension = "/providers/microsoft.kubernetesconfiguration/" in self.path.lower()
        is_types = g["etype"] is not None
        api_version = query.get("api-version")
        if not api_version:
            raise ArmError(400, "MissingApiVersionParameter",
                           "The api-version query parameter (?api-version=) is required for all requests.")
        supported = (EXTENSION_TYPES_API_VERSIONS if is_types else EXTENSION_API_VERSIONS if is_extension
                     else CLUSTER_API_VERSIONS)
        if g["rtype"] and api_version not in supported:
            rtype = "extensionTypes" if is_types else "extensions" if is_extension else g["rtype"]
            raise ArmError(400, "NoRegisteredProviderFound",
                           "No registered resource provider found for location '%s' and API version '%s' for type "
                           "'%s'. The supported api-versions are '%s'. The supported locations are '%s'." % (
                               cfg["location"], api_version, rtype, ", ".join(supported), cfg["location"]))
        if g["sub"].lower() != cfg["subscription_id"]:
            raise ArmError(404, "SubscriptionNotFound", "The subscription '%s' could not be found." % g["sub"])
        if g["rg"].lower() != cfg["resource_group"].lower():
            raise ArmError(404, "ResourceGroupNotFound", "Resource group '%s' could not be found." % g["rg"])
        if not g["rtype"]:
            raise ArmError(404, "InvalidResourceType", "The resource type could not be found.")
        if (g["rp"].lower() != "microsoft.containerservice" or g["rtype"].lower() != "managedclusters"
                or g["cluster"].lower() != cfg["cluster_name"].lower()):
            raise ArmError(404, "ResourceNotFound", "The Resource '%s/%s/%s' under resource group '%s' was not "
                           "found. For more details please go to https://aka.ms/ARMResourceNotFoundFix" % (
                               g["rp"], g["rtype"], g["cluster"], g["rg"]))
        method = self.command
        if g["action"]:
            if method != "POST":
                raise ArmError(405, "MethodNotAllowed", "The requested resource does not support http method '%s'." % method)
            self.body()
            kind = "User" if g["action"].lower() == "listclusterusercredential" else "Admin"
            return self.send(200, em.credentials(kind))
        if is_types:
            return self.extension_type_versions(g["etype"], g["etver"], query)
        if not is_extension:
            if method != "GET":
                raise ArmError(405, "MethodNotAllowed", "The emulator serves only GET on managedClusters.")
            with em.lock:
                return self.send(200, em.cluster())
        ext = g["ext"]
        if g["op"]:
            with em.lock:
                op = em.operations.get(g["op"])
                if op is None or not op["id"].lower().startswith(em.ext_id(ext).lower() + "/"):
                    raise ArmError(404, "ResourceNotFound", "The operation '%s' was not found." % g["op"])
                # While in progress, Retry-After paces the SDK's polling (30 s without it).
                headers = {"Retry-After": "1"} if op["status"] == "InProgress" else {}
                return self.send(200, {k: v for k, v in op.items() if k in ("id", "name", "status", "properties", "error")},
                                 headers)
        if ext is None:
            if method != "GET":
                raise ArmError(405, "MethodNotAllowed", "The requested resource does not support http method '%s'." % method)
            with em.lock:
                return self.send(200, {"value": [em.ext_view(r) for r in em.extensions.values()], "nextLink": None})
        if method == "GET":
            with em.lock:
                return self.send(200, em.ext_view(em.get_record(ext)))
        if method == "PUT":
            status, body, headers = em.put_extension(ext, self.body())
        elif method == "PATCH":
            status, body, headers = em.patch_extension(ext, self.body())
        elif method == "DELETE":
            status, body, headers = em.delete_extension(ext, query.get("forceDelete", "").lower() == "true")
        else:
            raise ArmError(405, "MethodNotAllowed", "The requested resource does not support http method '%s'." % method)
        self.send(status, body, headers)

    def extension_type_versions(self, ext_type: str, version: str | None, query: dict) -> None:
        """ExtensionTypes_ClusterListVersions (releaseTrain, majorVersion, showLatest) and _ClusterGetVersion."""
        em = self.emulator
        if self.command != "GET":
            raise ArmError(405, "MethodNotAllowed", "The requested resource does not support http method '%s'."
                           % self.command)
        if ext_type.lower() != EXTENSION_TYPE:
            raise ArmError(404, "ResourceNotFound", "Extension type '%s' is not registered for cluster type "
                           "'managedClusters' in location '%s'." % (ext_type, em.config["location"]))
        with em.lock:
            offered = em.offered(query.get("releaseTrain"))
            if version is not None:
                if version not in offered:
                    raise ArmError(404, "ResourceNotFound", "Version '%s' of extension type '%s' was not found in "
                                   "release train '%s'." % (version, ext_type, query.get("releaseTrain") or "stable"))
                return self.send(200, em.version_resource(version))
            major = query.get("majorVersion")
            if major:
                offered = [v for v in offered if v.split(".")[0] == major]
            if query.get("showLatest", "").lower() == "true":
                offered = offered[:1]
            return self.send(200, {"value": [em.version_resource(v) for v in offered], "nextLink": None})

    # -------------------------------------------------------------- control
    def control(self, what: str) -> None:
        """The test-facing switches (tests/emulators/arm/control.py is the client)."""
        em = self.emulator
        body = self.body() if self.command in ("POST", "PATCH", "PUT") else None
        with em.lock:
            if what == "health":
                return self.send(200, {"ok": True})
            if what == "reset" and self.command == "POST":
                em.reset()
                return self.send(200, {"ok": True})
            if what == "faults" and self.command == "POST":
                if not isinstance(body, dict) or body.get("status") not in (403, 429, 500, 502, 503):
                    raise ArmError(400, "BadRequest", "a fault needs status 403, 429, 500, 502 or 503")
                fault = {"status": body["status"], "remaining": int(body.get("count", 1)),
                         "method": body.get("method"), "path": body.get("path"),
                         "retry_after": int(body.get("retry_after", 1))}
                em.faults.append(fault)
                return self.send(200, fault)
            if what == "faults" and self.command == "GET":
                return self.send(200, {"faults": em.faults})
            if what == "provisioning" and self.command == "POST":
                body = body or {}
                em.provisioning = {"delay_seconds": float(body.get("delay_seconds", 0)), "fail": body.get("fail")}
                return self.send(200, em.provisioning)
            if what == "offers" and self.command == "POST":
                if not isinstance(body, dict) or not all(isinstance(v, list) for v in body.values()):
                    raise ArmError(400, "BadRequest", "offers: {release train: [versions]}")
                em.offers.update({k.lower(): list(v) for k, v in body.items()})
                return self.send(200, {"offers": em.offers})
            if what == "agentpools" and self.command == "PUT":
                if not isinstance(body, list) or not all(isinstance(p, dict) for p in body):
                    raise ArmError(400, "BadRequest", "agentpools: a list of agentPoolProfiles entries")
                base = default_cluster(em.config.get("kubernetes_version"))
                em.cluster_props["agentPoolProfiles"] = (base["agentPoolProfiles"]
                                                         + [pool_profile(p, base["kubernetesVersion"]) for p in body])
                return self.send(200, em.cluster())
            if what == "cluster" and self.command == "PATCH":
                em.cluster_props = merge(em.cluster_props, body or {})
                return self.send(200, em.cluster())
            if what == "requests" and self.command == "GET":
                return self.send(200, {"requests": em.requests})
            if what == "requests" and self.command == "DELETE":
                em.requests.clear()
                return self.send(200, {"ok": True})
            if what == "extensions" and self.command == "GET":
                return self.send(200, {"extensions": [dict(em.ext_view(r), namespace=r["namespace"],
                                                           installed=r["installed"]) for r in em.extensions.values()]})
        raise ArmError(404, "NotFound", "no control endpoint %s %s" % (self.command, what))


class Server(http.server.ThreadingHTTPServer):
    """TLS per connection in the connection's own thread, so a client that never completes its
    handshake holds up nobody else."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address, handler, tls: ssl.SSLContext):
        super().__init__(address, handler)
        self.tls = tls

    def finish_request(self, request, client_address):
        request.settimeout(10)
        try:
            conn = self.tls.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError):
            return
        conn.settimeout(None)
        try:
            super().finish_request(conn, client_address)
        finally:
            conn.close()


def main(folder: str) -> None:
    arm_dir = os.path.join(folder, "arm")
    with open(os.path.join(arm_dir, "config.json")) as handle:
        config = json.load(handle)
    emulator = Emulator(folder, config)
    handler = type("BoundHandler", (Handler,), {"emulator": emulator})
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(os.path.join(arm_dir, "server.crt"), os.path.join(arm_dir, "server.key"))
    server = Server(("127.0.0.1", config["port"]), handler, tls)
    log("listening on %s (extension deployments: %s, %s)" % (config["url"], MANAGER, EXTENSION_DEPLOYMENT))
    server.serve_forever()


if __name__ == "__main__":
    main(sys.argv[1])
