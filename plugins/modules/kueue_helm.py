#!/usr/bin/python
# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kueue_helm
short_description: Install, upgrade or uninstall Kueue with its upstream Helm chart
version_added: 1.0.0
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
    description:
      - V(present) installs or upgrades; V(absent) uninstalls; V(rolled_back) runs C(helm rollback) to
        O(rollback_revision) (what the role entry point C(upgrade) does when a hop fails its verification).
    type: str
    choices: [present, absent, rolled_back]
    default: present
  rollback_revision:
    description:
      - With O(state=rolled_back), the release revision to go back to (the revision before the upgrade,
        the C(helm_release.revision) that M(kueueops.aks.kueue_info) returns). Required with it,
        refused otherwise. A rollback re-run once it is done changes nothing.
    type: int
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
      - B(An installed Kueue never crosses a minor by accident.) When the release exists, V(latest) is the newest
        patch of the installed minor that the registry publishes (a newer minor is reported as a warning and in
        RV(notices), with the command that crosses it, C(playbooks/upgrade.yml)), and a pinned version of another
        minor fails before any change unless O(allow_minor_change=true). On a fresh cluster V(latest) is the newest
        patch of the newest minor this collection's catalog knows (a newer minor is never chosen).
      - A patch the catalog knows as broken (Kueue 0.20.0 to 0.20.5) is never chosen by V(latest), and fails
        before any change when pinned, naming why and the first good patch.
    type: str
    default: latest
  allow_minor_change:
    description:
      - Let a pinned O(chart_version) take an installed Kueue to another minor. The upgrade role sets it for each
        hop of its plan, after a verified backup; an install should not (C(playbooks/upgrade.yml) plans the
        crossing, backs up and checks what each crossed minor requires).
    type: bool
    default: false
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
extends_documentation_fragment:
  - kueueops.aks.attributes
  - kueueops.aks.kube_auth
  - kueueops.aks.chart_values
notes:
  - The collection is tested on Kubernetes 1.34 to 1.37; on a cluster whose API server reports a newer minor, the
    module warns, naming the newest tested one, and goes on.
  - Helm reads cluster credentials from the environment (C(KUBECONFIG), C(HELM_KUBETOKEN), ...), never from the
    command line. A kubeconfig given as a dictionary is written to a 0600 file in a private folder for the run.
  - Helm gets the Kubernetes options from the same translation as the module's Python client; several kubeconfig
    paths and the context the module uses, and O(proxy) (the C(proxy-url) of the context's cluster), O(client_cert)
    and O(client_key) in a 0600 kubeconfig put first in C(KUBECONFIG). O(proxy_headers) other than
    O(proxy_headers.proxy_basic_auth) are refused, helm cannot send them.
  - O(client_cert) and O(client_key) reach helm as the C(client-certificate) and C(client-key) of the context's user in
    that kubeconfig; with the in-cluster service account (no kubeconfig or host) they are refused.
requirements:
  - helm >= 3.13 (v3) or v4
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
installed_version:
  description: The chart version of the release before the run.
  returned: when O(state=present) and the release existed
  type: str
  sample: 0.18.4
notices:
  description:
    - What the release train says about the version chosen, also given as warnings; for example that a newer minor
      than the installed one is published and the command that crosses it, or that a minor is known to this
      collection from its release notes only.
  returned: when O(state=present)
  type: list
  elements: str
  sample: ["Kueue 0.19.2 is published, a newer minor than the installed 0.18.4: this run stays on 0.18, ..."]
release:
  description: The release after the run, as C(helm list) reports it.
  returned: when the release exists after the run
  type: dict
  sample: {name: kueue, namespace: kueue-system, revision: "2", status: deployed, chart: kueue-0.19.2, app_version: v0.19.2}
release_values:
  description:
    - The user-supplied values the release has (or would have), including the rendered gates and Configuration
      (what C(helm get values) prints); named after the O(values) option's alias O(release_values), as
      kubernetes.core.helm names that option.
  returned: when O(state=present)
  type: dict
  sample: {controllerManager: {featureGates: [{name: TopologyAwareScheduling, enabled: true}]}}
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

from ansible_collections.kueueops.aks.plugins.module_utils.install.helm_install import KueueHelm
from ansible_collections.kueueops.aks.plugins.module_utils.helm.helm_runner import chart_argspec
from ansible_collections.kueueops.aks.plugins.module_utils.helm.helm_values import HAS_YAML, chart_value_argspec
from ansible_collections.kueueops.aks.plugins.module_utils.kube.module import KueueOpsModule


def main():
    argument_spec = dict(
        state=dict(type="str", default="present", choices=["present", "absent", "rolled_back"]),
        rollback_revision=dict(type="int"),
        release_name=dict(type="str", default="kueue", aliases=["name"]),
        release_namespace=dict(type="str", default="kueue-system", aliases=["namespace"]),
        create_namespace=dict(type="bool", default=True),
        chart_version=dict(type="str", default="latest"),
        feature_gates=dict(type="dict"),
        integrations=dict(type="list", elements="str"),
        values=dict(type="dict", default={}, aliases=["release_values"]),
        values_files=dict(type="list", elements="path", default=[]),
        wait=dict(type="bool", default=True),
        timeout=dict(type="int", default=300, aliases=["wait_timeout"]),
        atomic=dict(type="bool", default=False),
        allow_managed_extension=dict(type="bool", default=False),
        allow_minor_change=dict(type="bool", default=False),
        delete_namespace=dict(type="bool", default=False),
        **dict(chart_argspec(), **chart_value_argspec())
    )
    module = KueueOpsModule(argument_spec, supports_check_mode=True,
                            required_if=[("state", "rolled_back", ("rollback_revision",))])
    if module.params["rollback_revision"] is not None and module.params["state"] != "rolled_back":
        module.refuse("rollback_revision applies only to state=rolled_back", "rollback_revision",
                      "remove it, or set state: rolled_back")
    if module.params["state"] == "rolled_back" and module.params["rollback_revision"] < 1:
        module.refuse("a Helm revision is 1 or more, got %d" % module.params["rollback_revision"],
                      "rollback_revision", "give a revision helm history lists")
    runner = KueueHelm(module.params, lambda: module.api_client, module.run_command,
                       check_mode=module.check_mode, diff=module._diff, no_log_values=module.no_log_values)
    if not HAS_YAML:
        module.fail_json(msg="PyYAML is required: pip install PyYAML")
    module.exit_json(**module.run(runner.run, warnings=runner.warnings))


if __name__ == "__main__":
    main()
