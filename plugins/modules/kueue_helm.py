#!/usr/bin/python
# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kueue_helm
short_description: Install, upgrade or uninstall Kueue with its upstream Helm chart
version_added: 0.1.0
description:
  - Wraps the C(helm) binary (v3.13 or newer, or v4; the module detects which and adapts its flags) to install
    the upstream Kueue chart, the "Open-source Kueue with Helm" path of the AKS documentation.
  - Kueue-aware values. O(feature_gates) is rendered into C(controllerManager.featureGates) the way the chart
    expects it; O(integrations) into the top-level C(managerConfig.controllerManagerConfigYaml), keeping the rest of
    the chart's default Configuration and using the Configuration apiVersion of the chosen Kueue version. Gate and
    framework names are checked against the chosen version before helm runs.
  - Refuses values that the chart would silently ignore, such as C(managerConfig) nested under
    C(controllerManager) (the shape of the AKS documentation's own example, which never enables its integrations),
    and feature gates set both on the command line and inside the Configuration (the Kueue manager exits).
  - Idempotent. An unchanged release (same chart version, same values, status C(deployed)) reports
    C(changed=false) without running an upgrade. Check mode changes nothing and reports what would change;
    diff mode shows the chart version and values before and after. The values of the AKS managed extension's
    release (O(allow_managed_extension=true)) are shown as C(VALUE_REDACTED_BY_KUEUEOPS), since AKS passes the
    extension's protected settings to Helm as values.
  - Refuses to install when the AKS managed Kueue extension already runs on the cluster (it is a cluster
    singleton), unless O(allow_managed_extension=true).
  - B(State absent destroys every Kueue object in the cluster.) The chart ships Kueue's CRDs as templates, so
    C(helm uninstall) deletes the CRDs and with them every ResourceFlavor, ClusterQueue, LocalQueue, Cohort,
    WorkloadPriorityClass and Workload. Export them first (kueueops.aks.kueue_backup, or the
    kueueops.aks.uninstall_with_backup role, which does it for you). The module
    reports how many objects of each kind were deleted and warns.
author:
  - kueueops contributors (@kueueops)
options:
  state:
    description: V(present) installs or upgrades; V(absent) uninstalls.
    type: str
    choices: [present, absent]
    default: present
  release_name:
    description: Helm release name.
    type: str
    default: kueue
    aliases: [name]
  release_namespace:
    description: Namespace of the release (Kueue's namespace).
    type: str
    default: kueue-system
    aliases: [namespace]
  create_namespace:
    description: Create O(release_namespace) if it does not exist.
    type: bool
    default: true
  chart_ref:
    description:
      - The Kueue chart. An C(oci://) reference (the upstream registry, or a mirror such as an Azure Container
        Registry), or a path to a chart folder or packaged C(.tgz) on the controller.
    type: str
    default: oci://registry.k8s.io/kueue/charts/kueue
  chart_version:
    description:
      - Exact chart version (C(0.19.2) or C(v0.19.2)), or V(latest) for the highest semantic version tag in the
        O(chart_ref) OCI repository (pre-releases excluded). Resolved by helm itself, the way C(helm install) without
        C(--version) resolves it (C(helm show chart)), so it works against mirrors and air-gapped registries with
        whatever helm uses to reach them (a login done beforehand with C(helm registry login) into helm's registry
        config, E(HELM_REGISTRY_CONFIG); O(registry_username); O(registry_ca_file); O(plain_http)). No GitHub API
        call.
      - A pinned version the registry does not publish fails before any change, naming the newest it publishes.
      - For a local chart path, the chart's own version is used and V(latest) means that version.
    type: str
    default: latest
  plain_http:
    description:
      - Use plain HTTP to reach the OCI registry (local or air-gapped registries only).
      - Contradicts the TLS options (O(registry_ca_file), O(registry_cert_file), O(registry_key_file),
        O(registry_insecure_skip_tls_verify)); the module refuses both together (helm would silently use HTTPS).
    type: bool
    default: false
  registry_username:
    description:
      - User name for a private OCI registry (for ACR, a token name or a service principal ID).
      - Without it, helm uses its own registry config, so a C(helm registry login) done beforehand (for ACR,
        C(az acr login --expose-token) then C(helm registry login)) works with no password in the playbook.
    type: str
  registry_password:
    description:
      - Password or token for a private OCI registry. Passed to C(helm registry login) on standard input, kept in a
        private registry config removed after the run, and never logged.
    type: str
  registry_ca_file:
    description:
      - CA bundle (PEM) that signs the OCI registry's TLS certificate, for a registry with a private CA. helm's
        C(--ca-file), passed to every helm call that reaches the registry (C(registry login), C(show), C(upgrade
        --install)).
      - The registry options carry helm's flag names behind a C(registry_) prefix, like O(registry_username);
        the Kubernetes options already own C(cert_file) and C(key_file) (aliases of O(client_cert) and
        O(client_key), as in kubernetes.core), and C(ca_file) beside O(ca_cert) would read as the API server's CA.
    type: path
  registry_cert_file:
    description:
      - Client certificate (PEM) for a registry that requires TLS client authentication; helm's C(--cert-file).
        Needs O(registry_key_file).
    type: path
  registry_key_file:
    description:
      - Private key of O(registry_cert_file); helm's C(--key-file). The path is not a secret; keep the file itself
        readable only by the user that runs Ansible.
    type: path
  registry_insecure_skip_tls_verify:
    description:
      - Do not verify the registry's TLS certificate (test registries only; prefer O(registry_ca_file)). helm's
        C(--insecure-skip-tls-verify) (C(--insecure) for C(helm registry login)).
    type: bool
    default: false
  feature_gates:
    description:
      - "Kueue feature gates, gate name to enabled (for example C({TopologyAwareScheduling: true}))."
      - Validated against the gates of the chosen Kueue version; an unknown name fails with the list of valid ones.
    type: dict
  integrations:
    description:
      - Integration frameworks to enable (for example C(batch/job), C(ray.io/rayjob)). Replaces the chart default
        list. Omit to keep the chart's list.
    type: list
    elements: str
  values:
    description: Other chart values, deep-merged under what the module renders from O(feature_gates) and O(integrations).
    type: dict
    default: {}
    aliases: [release_values]
  values_files:
    description: Values files on the controller, applied before O(values) and the rendered values.
    type: list
    elements: path
    default: []
  binary_path:
    description: The helm binary, a name on C(PATH) or a path.
    type: path
    default: helm
  wait:
    description: Wait until the release's resources are ready (and, for V(absent), deleted).
    type: bool
    default: true
  timeout:
    description:
      - Seconds helm waits, and the namespace deletion waits.
      - C(wait_timeout) is an alias, the name kubernetes.core modules use.
    type: int
    default: 300
    aliases: [ wait_timeout ]
  atomic:
    description: Roll back a failed install or upgrade (helm v3 C(--atomic), helm v4 C(--rollback-on-failure)).
    type: bool
    default: false
  allow_managed_extension:
    description:
      - Proceed although the AKS managed Kueue extension (its C(kueue-extension) Deployment) runs on the cluster.
        The extension rejects an unmanaged Kueue; migrate instead (back up, remove the extension, install with
        Helm, restore).
    type: bool
    default: false
  delete_namespace:
    description:
      - With O(state=absent), also delete O(release_namespace) and wait until it is gone.
      - First, every APIService whose backend Service is in O(release_namespace) (the chart's visibility API, left
        behind when the release is already gone or kept by a C(helm.sh/resource-policy)) is deleted and waited for;
        with its backend gone it would be unavailable, which fails API discovery and keeps the namespace
        C(Terminating) (C(NamespaceDeletionDiscoveryFailure)).
    type: bool
    default: false
attributes:
  check_mode:
    support: full
    details: Runs every validation of the install (the role preflight) and reports whether the release would change; runs no helm upgrade or uninstall.
  diff_mode:
    support: full
    details: The Helm values before and after (the managed extension's values hidden), or what an uninstall removes.
  platform:
    platforms: all
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - kueueops.aks.kube_auth
notes:
  - Helm reads cluster credentials from the environment (C(KUBECONFIG), C(HELM_KUBETOKEN), ...), never from the
    command line. A kubeconfig given as a dictionary is written to a 0600 file in a private folder for the run.
  - Helm gets the Kubernetes options from the same translation as the module's Python client; several kubeconfig
    paths and the context the module uses, and O(proxy) (the C(proxy-url) of the context's cluster), O(client_cert)
    and O(client_key) in a 0600 kubeconfig put first in C(KUBECONFIG). O(proxy_headers) other than
    O(proxy_headers.proxy_basic_auth) are refused, helm cannot send them.
  - O(client_cert) and O(client_key) have no helm equivalent; give them inside a kubeconfig.
requirements:
  - helm >= 3.13 (v3) or v4
  - kubernetes >= 29.0.0
  - PyYAML
seealso:
  - module: kueueops.aks.kueue_verify
"""

EXAMPLES = r"""
- name: Install the latest Kueue with the AKS documentation's gates and frameworks
  kueueops.aks.kueue_helm:
    chart_version: latest
    feature_gates:
      TopologyAwareScheduling: true
      LocalQueueMetrics: true
    integrations:
      - batch/job
      - kubeflow.org/mpijob
      - ray.io/rayjob
      - ray.io/raycluster
      - jobset.x-k8s.io/jobset
      - kubeflow.org/pytorchjob

- name: Install a pinned version from an Azure Container Registry mirror
  kueueops.aks.kueue_helm:
    chart_ref: oci://myregistry.azurecr.io/kueue/charts/kueue
    chart_version: 0.19.2
    registry_username: "{{ acr_token_name }}"
    registry_password: "{{ acr_token }}"

- name: Resolve latest from a mirror with a private CA, logged in beforehand with helm registry login (check mode)
  kueueops.aks.kueue_helm:
    chart_ref: oci://registry.example.internal/kueue/charts/kueue
    chart_version: latest
    registry_ca_file: /etc/pki/registry-ca.pem
  check_mode: true
  environment:
    HELM_REGISTRY_CONFIG: /home/deploy/.config/helm/registry/config.json

- name: Uninstall (destroys every Kueue object; back up first)
  kueueops.aks.kueue_helm:
    state: absent
    delete_namespace: true
"""

RETURN = r"""
chart_version:
  description: The chart version installed (or that would be), after resolving V(latest).
  returned: always
  type: str
  sample: 0.19.2
release:
  description: The release after the run, as C(helm list) reports it.
  returned: when the release exists after the run
  type: dict
  sample: {name: kueue, namespace: kueue-system, revision: "2", status: deployed, chart: kueue-0.19.2, app_version: v0.19.2}
values:
  description: The user-supplied values the release has (or would have), including the rendered gates and Configuration.
  returned: when O(state=present)
  type: dict
helm_version:
  description: Version of the helm binary used.
  returned: always
  type: str
  sample: v3.19.5
server_version:
  description: Kubernetes API server version.
  returned: always
  type: str
  sample: v1.34.5
deleted_objects:
  description: Kueue objects that existed before the uninstall, per kind (they are deleted with the CRDs).
  returned: when O(state=absent) and the release existed
  type: dict
  sample: {clusterqueues: 2, localqueues: 7, resourceflavors: 3}
apiservices_deleted:
  description:
    - The APIServices served from O(release_namespace) that were deleted before the namespace (would be, in check
      mode), so that the namespace deletion does not wait on their discovery.
  returned: when O(state=absent) and O(delete_namespace=true)
  type: list
  elements: str
  sample: [v1beta2.visibility.kueue.x-k8s.io]
finalizers_cleared:
  description:
    - How many Kueue objects had their C(kueue.x-k8s.io/) finalizers removed after the uninstall, so that the CRDs
      could finish deleting (the Kueue manager that would remove them is gone).
  returned: when O(state=absent) deleted Kueue objects
  type: int
"""

import copy
import json
import os
import shutil
from urllib.parse import quote

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kueueops.aks.plugins.module_utils.errors import KueueOpsError
from ansible_collections.kueueops.aks.plugins.module_utils.helm_runner import (
    HelmError,
    HelmRunner,
    check_helm_kube_options,
    helm_kube_env,
    registry_failure,
    registry_tls,
    split_oci_ref,
)
from ansible_collections.kueueops.aks.plugins.module_utils.helm_values import (
    HAS_YAML,
    chart_default_config_yaml,
    deep_merge,
    detect_misnested_values,
    render_values,
)
from ansible_collections.kueueops.aks.plugins.module_utils.kube_client import (
    KUBE_AUTH_ARGSPEC,
    REDACTED,
    check_connection,
    describe_kube_error,
    get_api_client,
    resolve_kube_options,
)
from ansible_collections.kueueops.aks.plugins.module_utils.kueue_catalog import (
    catalog_for,
    problems_fix,
    validate_feature_gates,
    validate_integrations,
    version_warning,
)
from ansible_collections.kueueops.aks.plugins.module_utils.kueue_api import CRD_PLURALS, GROUP
from ansible_collections.kueueops.aks.plugins.module_utils.kueue_cluster import Cluster, path as api_path
from ansible_collections.kueueops.aks.plugins.module_utils.verify import Verifier, kueue_apiservices
from ansible_collections.kueueops.aks.plugins.module_utils import versions
from ansible_collections.kueueops.aks.plugins.module_utils.wait import Deadline, poll_until, watch_until

from ansible_collections.kueueops.aks.plugins.module_utils.kube_import import ApiException

try:
    import yaml
except ImportError:  # guarded by get_api_client / HAS_YAML
    yaml = None


def _normalize(values):
    return json.loads(json.dumps(values or {}, sort_keys=True))


def _load_values_files(paths):
    merged = {}
    for path in paths:
        if not os.path.isfile(path):
            raise KueueOpsError("values file %s does not exist" % path, field="values_files",
                                fix="give a path on the controller")
        try:
            with open(path) as handle:
                data = yaml.safe_load(handle) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise KueueOpsError("cannot read values file %s: %s" % (path, exc), field="values_files",
                                fix="correct the file: it must be readable YAML, a mapping of chart values")
        if not isinstance(data, dict):
            raise KueueOpsError("values file %s is not a mapping (it holds a %s)" % (path, type(data).__name__),
                                field="values_files",
                                fix="write the chart values as a YAML mapping, as in the chart's values.yaml")
        merged = deep_merge(merged, data)
    return merged


class KueueHelm:
    def __init__(self, module):
        self.module = module
        self.p = module.params
        self.warnings = []
        self.tls = {}
        self.api = None  # the ApiClient, once run() builds it
        self.cluster = None  # the Cluster on it (kueue_cluster)

    # ------------------------------------------------------------ helpers
    def fail(self, err, **extra):
        if isinstance(err, KueueOpsError):
            self.module.fail_json(msg=err.message(), **extra)
        self.module.fail_json(msg=str(err), **extra)

    def kube_env(self, private_dir):
        # The translation the Python client got (resolve_kube_options), for the server it reached.
        return helm_kube_env(resolve_kube_options(self.p), server=self.api.configuration.host,
                             private_dir=private_dir)

    def find_helm(self):
        binary = self.p["binary_path"]
        if os.sep in binary:
            if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
                raise HelmRunner.not_found(binary)
            return binary
        found = shutil.which(binary)
        if not found:
            raise HelmRunner.not_found("PATH=%s" % os.environ.get("PATH", ""))
        return found

    def managed_extension(self):
        found = self.cluster.items(api_path("apps/v1", "deployments"), fieldSelector="metadata.name=kueue-extension")
        return ["%s/%s" % (d["metadata"]["namespace"], d["metadata"]["name"]) for d in found]

    def release(self, runner):
        return runner.list_release(self.p["release_name"], self.p["release_namespace"])

    def show_oci_chart(self, runner, version=None):
        """Chart.yaml of the oci:// chart_ref at ``version`` (None: the newest release, as helm resolves it)."""
        ref = self.p["chart_ref"]
        try:
            return runner.show_chart(ref, version, plain_http=self.p["plain_http"], tls=self.tls)
        except HelmError as exc:
            error = registry_failure(exc, ref, version=version, logged_in=bool(self.p.get("registry_username")),
                                     tls=any(self.tls.values()), plain_http=self.p["plain_http"])
            if error is None:  # the pinned version is not published: name the newest that is
                newest = None
                try:
                    newest = self.show_oci_chart(runner).get("version")
                except KueueOpsError as latest_error:
                    if latest_error.field != "chart_version":
                        raise  # no such repository, say: that is the error to fix
                error = KueueOpsError("version %s is not published in %s" % (version, ref), field="chart_version",
                                      fix="give a published version (the newest is %s), or latest"
                                      % (newest or "unknown: helm found no release"))
            raise error

    def resolve_version(self, runner):
        ref, wanted = self.p["chart_ref"], (self.p["chart_version"] or "latest").strip()
        if ref.startswith("oci://"):
            split_oci_ref(ref)  # a tag or digest in the reference, or no repository: refused before helm runs
            version = None if wanted == "latest" else self.check_semver(wanted)
            chart = self.show_oci_chart(runner, version)
            found = str(chart.get("version") or "")
            if not found:
                raise KueueOpsError("the chart helm found at %s has no version" % ref, field="chart_ref",
                                    fix="point chart_ref at the Kueue chart's repository")
            return found if version is None else version
        if not os.path.exists(ref):
            raise KueueOpsError("%s is neither an oci:// reference nor an existing chart path" % ref,
                                field="chart_ref", fix="give oci://REGISTRY/REPO/kueue or a chart folder/.tgz")
        chart = runner.show_chart(ref)
        version = str(chart.get("version", ""))
        if wanted not in ("latest", version, "v" + version):
            raise KueueOpsError("the chart at %s is version %s, not %s" % (ref, version, wanted),
                                field="chart_version", fix="use latest or %s with this chart path" % version)
        return version

    @staticmethod
    def check_semver(version):
        parsed = versions.parse(version, patch=True)
        if parsed is None:
            raise KueueOpsError("%r is not a chart version" % version, field="chart_version",
                                fix="give an exact version such as 0.19.2, or latest")
        return parsed.text

    def count_kueue_objects(self):
        counts = {}
        try:
            discovery = self.cluster.request("GET", "/apis")  # a 404 raises too, as the typed call did
        except ApiException:
            return counts
        versions = [g["preferredVersion"]["version"] for g in discovery.get("groups") or [] if g["name"] == GROUP]
        if not versions:
            return counts
        for plural in CRD_PLURALS:
            try:
                items = self.cluster.items(api_path("%s/%s" % (GROUP, versions[0]), plural))
            except ApiException:
                continue
            if items:
                counts[plural] = len(items)
        return counts

    # ---------------------------------------------------------------- run
    def run(self):
        p = self.p
        if not HAS_YAML:
            self.module.fail_json(msg="PyYAML is required: pip install PyYAML")
        if p["timeout"] <= 0:
            raise KueueOpsError("must be a positive number of seconds", field="timeout", fix="e.g. timeout: 300")
        # Input problems first, before anything is contacted.
        problems = detect_misnested_values(p["values"] or {})
        file_values = _load_values_files(p["values_files"]) if p["state"] == "present" else {}
        problems += ["(in values_files) " + msg for msg in detect_misnested_values(file_values)]
        if problems:
            raise KueueOpsError(" ".join(problems), field="values",
                                fix="put the Configuration under the top-level managerConfig.controllerManagerConfigYaml "
                                    "string, or use the module's integrations and feature_gates options")
        if p.get("registry_password") and not p.get("registry_username"):
            raise KueueOpsError("registry_password is set without registry_username", field="registry_username",
                                fix="give both, or neither for an anonymous registry")
        self.tls = registry_tls(p)

        check_helm_kube_options(resolve_kube_options(p))  # what helm cannot do, before anything is contacted
        self.api = get_api_client(self.module)
        self.cluster = Cluster(self.api)
        try:
            self.server_version = check_connection(self.api)
        except KueueOpsError as exc:
            self.fail(exc)
        binary = self.find_helm()
        run_command = self.module.run_command
        with HelmRunner(run_command, binary) as runner:
            env = self.kube_env(runner.private_dir())
            runner.env.update(env)
            if env.get("HELM_KUBETOKEN"):
                runner.add_secret(env["HELM_KUBETOKEN"])
            proxy_auth = (p.get("proxy_headers") or {}).get("proxy_basic_auth")
            if proxy_auth:  # also as it is written in the proxy-url of helm's kubeconfig
                for value in (proxy_auth, proxy_auth.partition(":")[2], quote(proxy_auth.partition(":")[2], safe="")):
                    runner.add_secret(value)
            if p.get("registry_password"):
                runner.add_secret(p["registry_password"])
            for value in runner.no_log_values:
                self.module.no_log_values.add(value)
            self.warnings.extend(runner.warnings)
            result = dict(helm_version=runner.version_string, server_version=self.server_version)
            if p["state"] == "absent":
                return self.absent(runner, result)
            return self.present(runner, result, file_values)

    def present(self, runner, result, file_values):
        p = self.p
        try:
            extension = self.managed_extension()
        except ApiException as exc:
            raise describe_kube_error(exc)
        if extension and not p["allow_managed_extension"]:
            raise KueueOpsError(
                "the AKS managed Kueue extension runs on this cluster (%s); it is a cluster singleton and rejects an "
                "unmanaged Kueue" % ", ".join(extension), field="allow_managed_extension",
                fix="keep the extension, or migrate: back up with kueueops.aks.kueue_backup, remove the extension "
                    "(kueueops.aks.kueue_extension state=absent), install with this module, restore with "
                    "kueueops.aks.kueue_queues; set allow_managed_extension=true only to override this check")
        if p.get("registry_username") and p["chart_ref"].startswith("oci://"):
            host = split_oci_ref(p["chart_ref"])[0]
            try:
                runner.registry_login(host, p["registry_username"], p["registry_password"] or "",
                                      plain_http=p["plain_http"], tls=self.tls)
            except HelmError as exc:
                raise registry_failure(exc, p["chart_ref"], logged_in=True, tls=any(self.tls.values()),
                                       plain_http=p["plain_http"]) or exc
        version = self.resolve_version(runner)
        result["chart_version"] = version
        warning = version_warning(version)
        if warning:
            self.warnings.append(warning)
        problems = []
        if p.get("feature_gates"):
            problems += validate_feature_gates(version, p["feature_gates"])
        if p.get("integrations") is not None:
            problems += validate_integrations(version, p["integrations"])
        if problems and catalog_for(version) is not None:
            raise KueueOpsError(" ".join(problems), field="feature_gates" if p.get("feature_gates") and any(
                "gate" in x for x in problems) else "integrations",
                fix=problems_fix(version, problems))

        default_cfg = None
        if p.get("integrations") is not None:
            default_cfg = chart_default_config_yaml(runner.show_values(
                p["chart_ref"], version if p["chart_ref"].startswith("oci://") else None, plain_http=p["plain_http"],
                tls=self.tls))
        user_values = deep_merge(file_values, p["values"] or {})
        values = render_values(version, p.get("feature_gates"), p.get("integrations"), user_values, default_cfg)
        # What helm records as the release's user-supplied values: the files, then our rendered file.
        desired = _normalize(values)
        result["values"] = desired

        current = self.release(runner)
        before_values = _normalize(runner.get_values(p["release_name"], p["release_namespace"])) if current else None
        before = {"chart_version": current["chart"].rsplit("-", 1)[-1], "status": current["status"],
                  "values": before_values} if current else {}
        after = {"chart_version": version, "status": "deployed", "values": desired}
        changed = before != after
        if self.module._diff:
            shown = before
            if extension and before_values:
                # The managed extension's release: its values hold the extension's configuration protected settings
                # (AKS hands them to Helm as values). Compared above, never shown.
                shown = dict(before, values=REDACTED)
            result["diff"] = dict(before=shown, after=after)
        if not changed:
            result["release"] = current
            return dict(result, changed=False)
        if self.module.check_mode:
            return dict(result, changed=True)
        kwargs = dict(version=version if p["chart_ref"].startswith("oci://") else None,
                      create_namespace=p["create_namespace"], wait=p["wait"], timeout=p["timeout"],
                      atomic=p["atomic"], plain_http=p["plain_http"], tls=self.tls)
        try:
            runner.upgrade_install(p["release_name"], p["release_namespace"], p["chart_ref"], values,
                                   values_files=None, **kwargs)
        except KueueOpsError as exc:
            status = None
            try:
                status = self.release(runner)
            except KueueOpsError:
                pass
            if p["wait"] and _is_wait_timeout(exc):
                exc = self.wait_timed_out(exc)
            self.fail(exc, release=status, chart_version=version, changed=status is not None and status != current)
        result["release"] = self.release(runner)
        return dict(result, changed=True)

    def wait_timed_out(self, exc):
        """helm --wait says only "context deadline exceeded": name what was not ready, and the timeout."""
        pending = []
        try:
            names = [d["metadata"]["name"] for d in
                     self.cluster.items(api_path("apps/v1", "deployments", self.p["release_namespace"]))]
            verifier = Verifier(self.api, namespace=self.p["release_namespace"], webhook_probe=False)
            verifier.deployments_expected = lambda: names
            pending = ["%s: %s" % (c.name, c.reason) for c in verifier.check_deployments() if not c.ok]
        except Exception:  # pylint: disable=broad-except
            pass  # what helm said is still reported
        text = "helm --wait gave up after %ss (timeout) with the release not ready: %s; helm said: %s" % (
            self.p["timeout"], "; ".join(pending) or "no Deployment of namespace %s is unready now (a Job, a hook or "
                                                     "a Service may be what helm waited for)"
            % self.p["release_namespace"], exc.problem.splitlines()[-1] if exc.problem else "")
        return KueueOpsError(text, field="timeout",
                             fix="raise timeout, or look at why: kubectl -n %s get deploy,pods; kueueops.aks.kueue_verify"
                             % self.p["release_namespace"])

    def absent(self, runner, result):
        p = self.p
        current = self.release(runner)
        result["chart_version"] = current["chart"].rsplit("-", 1)[-1] if current else None
        changed = False
        ns_exists = self.namespace_exists() if p["delete_namespace"] else False
        if current:
            counts = self.count_kueue_objects()
            result["deleted_objects"] = counts
            if self.module._diff:
                result["diff"] = dict(before={"release": current, "kueue_objects": counts}, after={})
            changed = True
            if not self.module.check_mode:
                # With Kueue objects left, helm's own --wait would hang: the manager goes first,
                # and nobody removes its resource-in-use finalizers, so the CRDs never finish
                # terminating. Uninstall, then clear those finalizers (what the AKS managed
                # extension's uninstall does) and wait for the CRDs to be gone.
                runner.uninstall(p["release_name"], p["release_namespace"], wait=p["wait"] and not counts,
                                 timeout=p["timeout"])
                if counts:
                    result["finalizers_cleared"] = self.clear_kueue_finalizers(p["timeout"] if p["wait"] else 0)
                    self.warnings.append("helm uninstall deleted Kueue's CRDs and with them %s" % ", ".join(
                        "%d %s" % (n, k) for k, n in sorted(counts.items())))
        if p["delete_namespace"]:
            # An APIService whose backend goes with the namespace must go first: unavailable, it fails
            # the namespace controller's discovery and the namespace never finishes terminating.
            names = [svc["metadata"]["name"] for svc in self.apiservices()]
            result["apiservices_deleted"] = names
            if names:
                changed = True
                if not self.module.check_mode:
                    self.delete_apiservices(names)
        if ns_exists:
            changed = True
            if not self.module.check_mode:
                self.delete_namespace()
        return dict(result, changed=changed)

    def apiservices(self):
        try:
            return kueue_apiservices(self.cluster, self.p["release_namespace"])
        except ApiException as exc:
            raise describe_kube_error(exc)

    def delete_apiservices(self, names):
        """Delete the APIServices ``names`` and wait until they are gone (they carry no finalizers)."""
        for name in names:
            try:
                self.cluster.delete(api_path("apiregistration.k8s.io/v1", "apiservices", name=name))  # 404: False
            except ApiException as exc:
                raise describe_kube_error(exc)
        left, gone = poll_until(
            lambda: [svc["metadata"]["name"] for svc in self.apiservices() if svc["metadata"]["name"] in names],
            lambda left: not left, Deadline(self.p["timeout"] if self.p["wait"] else 0), 0.2)
        if not gone and self.p["wait"]:
            raise KueueOpsError("APIService(s) %s still present %ss after their deletion" % (
                ", ".join(left), self.p["timeout"]), field="timeout",
                fix="raise timeout, or look at what holds them: kubectl get apiservice %s -o yaml" % " ".join(left))

    def clear_kueue_finalizers(self, timeout):
        """Remove kueue.x-k8s.io/ finalizers from the objects of terminating Kueue CRDs until
        the CRDs are gone (or `timeout` seconds pass). Returns how many objects it patched."""
        cleared = set()
        kept = []  # objects held by finalizers that are not Kueue's (nobody here removes them)

        def terminating():
            crds = [c for c in self.cluster.items(api_path("apiextensions.k8s.io/v1", "customresourcedefinitions"))
                    if c["spec"]["group"] == GROUP]
            del kept[:]
            for crd in crds:
                version = [v["name"] for v in crd["spec"]["versions"] if v.get("storage")][0]
                plural = crd["spec"]["names"]["plural"]
                try:
                    items = self.cluster.items(api_path("%s/%s" % (GROUP, version), plural))
                except ApiException:
                    continue
                for item in items:
                    meta = item["metadata"]
                    keep = [f for f in meta.get("finalizers") or [] if not f.startswith(GROUP + "/")]
                    if keep:
                        kept.append("%s %s%s (finalizers %s)" % (plural, meta.get("namespace", "") and
                                                                 meta["namespace"] + "/", meta["name"],
                                                                 ", ".join(keep)))
                    if keep == (meta.get("finalizers") or []):
                        continue
                    body = {"metadata": {"finalizers": keep or None, "resourceVersion": meta["resourceVersion"]}}
                    try:
                        # A JSON merge patch, as the typed custom object patch sent a dict body.
                        self.cluster.patch(api_path("%s/%s" % (GROUP, version), plural, meta.get("namespace"),
                                                    meta["name"]), body)
                        cleared.add((plural, meta.get("namespace"), meta["name"]))
                    except ApiException as exc:
                        if exc.status not in (404, 409):
                            raise
            return crds

        crds, gone = poll_until(terminating, lambda crds: not crds, Deadline(timeout), 0.5)
        if not gone and timeout:
            raise KueueOpsError("Kueue CRDs still terminating after %ss: %s%s" % (
                timeout, ", ".join(c["metadata"]["name"] for c in crds),
                "; objects held by finalizers that are not Kueue's: %s" % "; ".join(kept[:10]) if kept
                else ""), field="timeout",
                fix="raise timeout, or remove those finalizers (whoever added them should)")
        return len(cleared)

    def namespace_exists(self):
        try:
            return self.cluster.get(api_path("v1", "namespaces", name=self.p["release_namespace"])) is not None
        except ApiException as exc:
            raise describe_kube_error(exc)

    def delete_namespace(self):
        ns = self.p["release_namespace"]
        try:
            self.cluster.delete(api_path("v1", "namespaces", name=ns))  # 404: False
        except ApiException as exc:
            raise describe_kube_error(exc)
        if not self.p["wait"]:
            return
        # A watch on this one namespace, from the list's version, returns as soon as it changes or is deleted.
        try:
            watch_until(self.cluster, api_path("v1", "namespaces"), Deadline(self.p["timeout"]),
                        listed=lambda found: found, changed=lambda event: event["type"] != "DELETED",
                        round_seconds=10, fieldSelector="metadata.name=%s" % ns)
        except ApiException as exc:
            raise describe_kube_error(exc)
        try:
            ns_obj = self.cluster.get(api_path("v1", "namespaces", name=ns))
        except ApiException as exc:
            raise describe_kube_error(exc)
        if ns_obj is None:  # gone right at the deadline
            return
        status = ns_obj.get("status") or {}
        conditions = [c.get("message") for c in status.get("conditions") or [] if c.get("status") == "True"]
        raise KueueOpsError("namespace %s still terminating after %ss: %s" % (ns, self.p["timeout"], "; ".join(
            conditions) or status.get("phase")), field="timeout", fix="raise timeout, or look at what holds it")


def _is_wait_timeout(exc):
    text = str(getattr(exc, "problem", exc)).lower()
    return "context deadline exceeded" in text or "timed out waiting for the condition" in text


def main():
    argument_spec = dict(
        state=dict(type="str", default="present", choices=["present", "absent"]),
        release_name=dict(type="str", default="kueue", aliases=["name"]),
        release_namespace=dict(type="str", default="kueue-system", aliases=["namespace"]),
        create_namespace=dict(type="bool", default=True),
        chart_ref=dict(type="str", default="oci://registry.k8s.io/kueue/charts/kueue"),
        chart_version=dict(type="str", default="latest"),
        plain_http=dict(type="bool", default=False),
        registry_username=dict(type="str"),
        registry_password=dict(type="str", no_log=True),
        registry_ca_file=dict(type="path"),
        registry_cert_file=dict(type="path"),
        registry_key_file=dict(type="path", no_log=False),
        registry_insecure_skip_tls_verify=dict(type="bool", default=False),
        feature_gates=dict(type="dict"),
        integrations=dict(type="list", elements="str"),
        values=dict(type="dict", default={}, aliases=["release_values"]),
        values_files=dict(type="list", elements="path", default=[]),
        binary_path=dict(type="path", default="helm"),
        wait=dict(type="bool", default=True),
        timeout=dict(type="int", default=300, aliases=["wait_timeout"]),
        atomic=dict(type="bool", default=False),
        allow_managed_extension=dict(type="bool", default=False),
        delete_namespace=dict(type="bool", default=False),
    )
    argument_spec.update(copy.deepcopy(KUBE_AUTH_ARGSPEC))
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    runner = KueueHelm(module)
    try:
        result = runner.run()
    except KueueOpsError as exc:
        module.fail_json(msg=exc.message(), warnings=runner.warnings)
    except ApiException as exc:
        module.fail_json(msg=describe_kube_error(exc).message())
    for warning in runner.warnings:
        module.warn(warning)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
