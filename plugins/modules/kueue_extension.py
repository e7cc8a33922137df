#!/usr/bin/python
# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kueue_extension
short_description: Install, update or remove the AKS managed Kueue extension (microsoft.kueue)
version_added: 1.0.0
description:
  - Manages the AKS cluster extension C(microsoft.kueue), the "AKS managed Kueue extension (preview)" path of the
    AKS documentation, through Azure Resource Manager (C(Microsoft.KubernetesConfiguration/extensions), API
    2025-03-01) with the Azure SDK for Python; no Azure CLI is needed.
  - B(One name.) The AKS documentation creates the extension as C(aks-kueue) but shows and deletes it as C(kueue).
    This module uses one name, O(name) (default V(kueue)), for every operation; give V(aks-kueue) to manage an
    extension created with the documentation's command.
  - B(Preflight.) Before anything is created or changed (with O(preflight), the default), the module reads the managed
    cluster and fails, with the reason and the fix, when its Kubernetes version is older than 1.34 (it warns when the
    version is newer than 1.37, the newest minor the collection is tested on), when it is AKS
    Automatic (C(sku.name) V(Automatic)), when node auto-provisioning is on (C(nodeProvisioningProfile.mode) V(Auto);
    the extension supports only the cluster autoscaler), when it is stopped, when O(release_train) offers no version of
    the extension type to the cluster or not the pinned O(version) (checked on create and when the version or the
    release train changes, with the extension types API C(ExtensionTypes_ClusterListVersions), 2026-04-01; when that
    list cannot be read, the module warns and ARM checks the version when the extension is written), or when an
    unmanaged (open-source) Kueue already runs in any namespace (a C(kueue-controller-manager) Deployment, or one
    labelled as the Kueue chart's manager, without the extension's C(kueue-extension) Deployment beside it; the
    extension is a cluster singleton and rejects it). For that last check the module reads the cluster's Deployments
    with the Kubernetes options (O(kubeconfig), O(host), ...) when they point at something that exists, otherwise with
    the cluster credentials it fetches from ARM. It warns (without failing) that the preview's availability by region
    may change. Preflight runs in check mode too and only when the extension would be created or changed.
  - B(Waits.) Creation, update and deletion are long-running ARM operations; with O(wait) the module follows the
    operation (honouring C(Retry-After)) and then reads the extension until C(provisioningState) is V(Succeeded)
    and, when ARM reports it, C(extensionState) is healthy (V(Available), the AKS documentation's value, or V(Ready),
    that of the REST specification's example), up to O(timeout) seconds. V(Failed) or V(Canceled)
    fails the task with the extension's C(errorInfo) and C(statuses) messages.
  - B(Retries.) Throttling (429, with C(Retry-After)) and transient errors (408, 500, 502, 503, 504) are retried by
    the Azure SDK's retry policy, at most 5 times per request with exponential back-off (at most 60 seconds apart).
  - B(Idempotent.) An extension that already matches the options reports C(changed=false) and is not written.
    O(extension_type) and O(release_namespace) cannot change on an existing extension; a difference fails with the
    fix (remove it first). An existing extension in state V(Failed) is created again (a PUT).
  - B(Protected settings.) ARM never returns the values of C(configurationProtectedSettings), so they cannot be
    compared. With O(update_protected_settings=on_create) (the default) they are sent when the extension is created
    (or re-created after a failure) and, when ARM reports their names, when the set of names differs; otherwise an
    existing extension is left as it is and the task reports C(changed=false). To rotate a value, run once with
    O(update_protected_settings=always), which sends them on every run and therefore always reports a change. Their
    values are never logged, returned or shown in a diff; only their names are.
  - B(State absent removes every Kueue object.) As the AKS documentation says, deleting the extension deletes all
    Kueue custom resources in the cluster (ClusterQueues, LocalQueues, ResourceFlavors, Cohorts, priority classes
    and every other Kueue configuration), clearing the finalizers that would block it; Jobs and Pods stay, queued
    Jobs stay suspended. Back up first with kueueops.aks.kueue_backup, or use the kueueops.aks.uninstall_with_backup
    role, which backs up, pauses GitOps and lists the affected Jobs before it uninstalls.
  - B(Credentials.) With O(kubeconfig_dest) or O(return_kubeconfig), the module fetches the cluster's kubeconfig
    through C(listClusterUserCredential) (C(listClusterAdminCredential) with O(admin_credentials)), so the following
    tasks reach the cluster without C(az aks get-credentials).
author:
  - kueueops contributors (@kueueops)
options:
  state:
    description: V(present) creates or updates the extension; V(absent) deletes it.
    type: str
    choices: [present, absent]
    default: present
  resource_group:
    description: Resource group of the AKS cluster.
    type: str
    required: true
  cluster_name:
    description: Name of the AKS cluster (a C(Microsoft.ContainerService/managedClusters) resource).
    type: str
    required: true
  name:
    description:
      - Name of the extension resource. The AKS documentation is inconsistent (C(aks-kueue) on create, C(kueue) on
        show and delete); this module always uses this one name.
    type: str
    default: kueue
  extension_type:
    description: Extension type to install. It cannot change on an existing extension.
    type: str
    default: microsoft.kueue
  release_train:
    description:
      - Release train the extension follows (V(preview) while the managed Kueue extension is in preview, later
        V(stable)). Without O(version), ARM installs and auto-upgrades to the newest version of the train.
      - Only V(preview) and V(stable) (in any case) are release trains of the extension; any other value is refused
        before anything is sent to ARM.
    type: str
    default: preview
  version:
    description:
      - Pin this exact extension version, in AKS's own form C(<Kueue version>-aks.<packaging>) as the release train
        lists it (for example V(0.19.6-aks.0.4.4), Kueue 0.19.6). ARM requires C(autoUpgradeMinorVersion=false) for a
        pinned version, which the module sends. Omit to follow O(release_train).
      - A version the release train does not offer is refused by the preflight (and by O(list_versions)) before
        anything is written; for a bare Kueue version (V(0.19.6)) the message names the offered version of that
        Kueue release.
      - V(latest) pins the newest version the release train offers without crossing a Kueue minor - on an existing
        extension, the newest offered patch of its installed minor (a newer minor offered is reported as a warning
        and in RV(notices), with C(playbooks/upgrade.yml), which crosses it); on a fresh cluster, the newest offered
        version of the newest minor this collection's catalog knows. The versions are listed from ARM for it.
      - An exact version of another Kueue minor than the installed extension's fails before anything is written
        unless O(allow_minor_change=true); so does a Kueue release the catalog knows as broken (0.20.0 to 0.20.5),
        naming why and the first good patch.
      - Without O(version), and with O(preflight) on, the module warns that AKS upgrades the extension's minor by
        itself (C(autoUpgradeMinorVersion)).
    type: str
  allow_minor_change:
    description:
      - Let an exact O(version) take the installed extension to another Kueue minor. The upgrade role sets it for
        each hop of its plan, after a verified backup; an install should not.
    type: bool
    default: false
  auto_upgrade_mode:
    description:
      - Which automatic upgrades ARM applies (C(autoUpgradeMode)). With a pinned O(version) the default is V(none)
        (stay exactly on it); V(patch) also takes patch releases of the pinned minor; V(compatible) takes any
        compatible release.
      - Without O(version) the extension follows O(release_train) (C(autoUpgradeMinorVersion=true)); V(patch) or
        V(compatible) is sent when given, ARM's default (V(compatible)) applies otherwise, and V(none) is refused
        (pin a version instead).
    type: str
    choices: [none, patch, compatible]
  release_namespace:
    description: Namespace the extension installs Kueue into (cluster scope). It cannot change on an existing extension.
    type: str
    default: kueue-system
  configuration_settings:
    description:
      - Configuration settings of the extension, name-value pairs. Values must be scalars; booleans are sent as
        V(true)/V(false) and numbers as text, since ARM takes strings.
      - The whole set is managed. Settings the extension has and this dictionary does not are removed. Omit the option
        to leave the extension's settings as they are.
      - They are returned by ARM in clear text; never put secrets here, use O(configuration_protected_settings).
    type: dict
  configuration_protected_settings:
    description:
      - Sensitive configuration settings, name-value pairs. Never logged, returned or shown in a diff; ARM never returns
        their values.
      - When they are sent is set by O(update_protected_settings).
    type: dict
  update_protected_settings:
    description:
      - V(on_create) sends O(configuration_protected_settings) when the extension is created (or re-created after a
        failure), and when ARM reports a different set of names; an existing extension is otherwise not changed for
        them.
      - V(always) sends them on every run (the way to rotate a value); the task then always reports a change.
    type: str
    choices: [on_create, always]
    default: on_create
  wait:
    description:
      - Wait until the operation ends, the extension is V(Succeeded) and, when reported, V(Available) or V(Ready) (or, with
        O(state=absent), gone). Without it the module returns once ARM accepted the request.
    type: bool
    default: true
  timeout:
    description:
      - Seconds to wait for the operation and the extension's states.
      - C(wait_timeout) is an alias, the name kubernetes.core modules use.
    type: int
    default: 900
    aliases: [ wait_timeout ]
  force_delete:
    description:
      - With O(state=absent), ask ARM to delete the extension resource even if the agent cannot uninstall it from the
        cluster (C(forceDelete=true)); what the extension installed may then stay in the cluster.
    type: bool
    default: false
  preflight:
    description:
      - Check the cluster's prerequisites before creating or changing the extension (see the description). Turn it off
        only when a check is known to be wrong for your cluster.
    type: bool
    default: true
  list_versions:
    description:
      - List the versions of O(extension_type) that ARM offers the cluster in O(release_train)
        (C(ExtensionTypes_ClusterListVersions)) on every run, whether or not the extension changes, and return them as
        RV(offered_versions); a pinned O(version) they do not hold is refused before anything is written, as the
        preflight does. With check mode this reads what an upgrade can choose from and changes nothing.
      - Only with O(state=present).
    type: bool
    default: false
  kubeconfig_dest:
    description:
      - Write the cluster's kubeconfig (from C(listClusterUserCredential), or C(listClusterAdminCredential) with
        O(admin_credentials)) to this path, atomically, with mode 0600. An identical file is left alone
        (C(changed=false)). Only with O(state=present).
    type: path
  return_kubeconfig:
    description:
      - Return the cluster's kubeconfig as RV(kubeconfig) (a dictionary that O(kubeconfig) of the following tasks takes).
        It holds credentials, so the module refuses unless the task sets C(no_log) to true.
    type: bool
    default: false
  admin_credentials:
    description:
      - Fetch the cluster admin credentials (C(listClusterAdminCredential)) instead of the user credentials. Clusters
        with local accounts disabled refuse this.
    type: bool
    default: false
attributes:
  check_mode:
    support: full
    details: Runs the preflight and reports what it would create, change or delete; sends no write to Azure Resource Manager.
  diff_mode:
    support: full
    details: The extension before and after (protected settings never shown).
extends_documentation_fragment:
  - kueueops.aks.azure_auth
  - kueueops.aks.azure_auth.connection
  - kueueops.aks.attributes
  - kueueops.aks.kube_auth
notes:
  - Check mode reads the cluster and the extension, runs the preflight, and reports what would change without sending
    a PUT, PATCH or DELETE and without writing O(kubeconfig_dest).
  - The Kubernetes options are used only by the preflight's search for an unmanaged Kueue. With the credentials
    fetched from ARM, O(proxy), O(no_proxy) and O(proxy_headers) still apply.
  - Supports diff mode; the diff holds the extension's type, namespace, release train, version, upgrade settings,
    configuration settings and the names of the protected settings.
requirements:
  - azure-mgmt-containerservice >= 30.0.0
  - azure-mgmt-kubernetesconfiguration-extensions >= 1.0.0
  - PyYAML
seealso:
  - module: kueueops.aks.kueue_verify
  - module: kueueops.aks.kueue_backup
  - name: Install and configure Kueue on AKS
    description: The AKS documentation of the managed Kueue extension.
    link: https://learn.microsoft.com/azure/aks/kueue-overview
"""

EXAMPLES = r"""
- name: Install the managed Kueue extension and write a kubeconfig for the following tasks
  kueueops.aks.kueue_extension:
    resource_group: rg-batch
    cluster_name: aks-batch
    kubeconfig_dest: "{{ playbook_dir }}/aks-batch.kubeconfig"
  register: kueue_ext

- name: Pin a version, patch releases only, with settings
  kueueops.aks.kueue_extension:
    resource_group: rg-batch
    cluster_name: aks-batch
    version: 0.19.6-aks.0.4.4
    auto_upgrade_mode: patch
    configuration_settings:
      # Helm --set keys: the chart's featureGates is a list of {name, enabled}
      "controllerManager.featureGates[0].name": TopologyAwareScheduling
      "controllerManager.featureGates[0].enabled": true

- name: Against a sovereign cloud behind a private CA, with a service principal
  kueueops.aks.kueue_extension:
    resource_group: rg-batch
    cluster_name: aks-batch
    cloud_environment: AzureUSGovernment
    ca_bundle: /etc/pki/corp-ca.pem
    client_id: "{{ sp_client_id }}"
    secret: "{{ sp_secret }}"
    tenant: "{{ sp_tenant }}"
    subscription_id: "{{ subscription_id }}"

- name: List the versions the release train offers the cluster, changing nothing
  kueueops.aks.kueue_extension:
    resource_group: rg-batch
    cluster_name: aks-batch
    preflight: false
    list_versions: true
  check_mode: true
  register: kueue_offer

- name: Return the kubeconfig as a value instead of a file
  kueueops.aks.kueue_extension:
    resource_group: rg-batch
    cluster_name: aks-batch
    return_kubeconfig: true
  no_log: true
  register: aks

- name: Remove the extension (deletes every Kueue object; prefer the kueue role's uninstall_with_backup)
  kueueops.aks.kueue_extension:
    resource_group: rg-batch
    cluster_name: aks-batch
    state: absent
"""

RETURN = r"""
extension:
  description:
    - The extension as ARM reports it after the run (C(id), C(name), C(properties) with C(extensionType),
      C(releaseTrain), C(version), C(currentVersion), C(autoUpgradeMinorVersion), C(autoUpgradeMode),
      C(provisioningState), C(extensionState), C(statuses), C(errorInfo), C(configurationSettings), ...); the values
      of C(configurationProtectedSettings) are replaced by C(VALUE_REDACTED_BY_KUEUEOPS).
    - In check mode, the extension as it is (not as it would be).
  returned: when the extension exists after the run
  type: dict
  sample: {name: kueue, properties: {extensionType: microsoft.kueue, releaseTrain: preview,
                                     currentVersion: 0.19.6-aks.0.4.4,
           provisioningState: Succeeded, extensionState: Available, scope: {cluster: {releaseNamespace: kueue-system}}}}
version:
  description: The exact version pinned (or that would be), after resolving V(latest).
  returned: when O(state=present) and O(version) is given
  type: str
  sample: 0.19.6-aks.0.4.4
installed_version:
  description: The extension version on the cluster before the run (C(currentVersion)).
  returned: when O(state=present) and the extension existed
  type: str
  sample: 0.18.4-aks.0.4.4
notices:
  description:
    - What the release train says about the version, also given as warnings - a newer Kueue minor offered than the
      installed one and the command that crosses it, a minor known to this collection from its release notes only,
      or that the extension follows its release train and AKS upgrades its minor by itself.
  returned: when O(state=present)
  type: list
  elements: str
operation:
  description: What the module did (or would do in check mode).
  returned: always
  type: str
  sample: created
  choices: [created, updated, deleted, none]
changes:
  description: The options whose value differs from the extension's (empty when it matches).
  returned: always
  type: list
  elements: str
  sample: [configuration_settings]
preflight:
  description:
    - The preflight's findings, when it ran (C(ran) false otherwise, for example when nothing had to change).
    - C(offered_versions) lists the versions of O(extension_type) that ARM offers the cluster in O(release_train),
      newest first as ARM lists them, when the preflight checked them (on create, or when the version or the
      release train changes); null when they could not be listed (see the warnings).
  returned: when O(state=present)
  type: dict
  sample: {ran: true, kubernetes_version: 1.34.2, sku: Base, node_provisioning_mode: Manual, location: westeurope,
           offered_versions: [0.19.6-aks.0.4.4, 0.18.2-aks.0.4.4], kueue_deployments: []}
offered_versions:
  description:
    - The versions of O(extension_type) that ARM offers the cluster in O(release_train), newest first as ARM lists them
      (AKS's form, C(<Kueue version>-aks.<packaging>)), whenever the module listed them; with O(list_versions) on every
      run, otherwise when the preflight checked them (on create, or when the version or the release train changes).
    - Null when they could not be listed (see the warnings).
  returned: when the module listed them
  type: list
  elements: str
  sample: [0.19.6-aks.0.4.4, 0.18.2-aks.0.4.4]
kubeconfig_path:
  description: The path the kubeconfig was written to (or would be, in check mode).
  returned: when O(kubeconfig_dest) is set and O(state=present)
  type: str
  sample: /home/ops/aks-batch.kubeconfig
kubeconfig:
  description: The cluster's kubeconfig (a dictionary, usable as O(kubeconfig)). Holds credentials.
  returned: when O(return_kubeconfig=true) and O(state=present)
  type: dict
"""

import copy

from ansible_collections.kueueops.aks.plugins.module_utils.azure import extension as x
from ansible_collections.kueueops.aks.plugins.module_utils.azure.azure_auth import AZURE_AUTH_ARGSPEC, AZURE_CONNECTION_ARGSPEC
from ansible_collections.kueueops.aks.plugins.module_utils.azure.arm import require_azure_sdk
from ansible_collections.kueueops.aks.plugins.module_utils.azure.extension_arm import KueueExtension
from ansible_collections.kueueops.aks.plugins.module_utils.kube.module import KueueOpsModule


def main():
    argument_spec = dict(
        state=dict(type='str', default='present', choices=['present', 'absent']),
        resource_group=dict(type='str', required=True),
        cluster_name=dict(type='str', required=True),
        name=dict(type='str', default='kueue'),
        extension_type=dict(type='str', default=x.EXTENSION_TYPE),
        release_train=dict(type='str', default='preview'),
        version=dict(type='str'),
        allow_minor_change=dict(type='bool', default=False),
        auto_upgrade_mode=dict(type='str', choices=list(x.AUTO_UPGRADE_MODES)),
        release_namespace=dict(type='str', default='kueue-system'),
        configuration_settings=dict(type='dict'),
        configuration_protected_settings=dict(type='dict', no_log=True),
        update_protected_settings=dict(type='str', default='on_create', choices=['on_create', 'always']),
        wait=dict(type='bool', default=True),
        timeout=dict(type='int', default=900, aliases=['wait_timeout']),
        force_delete=dict(type='bool', default=False),
        preflight=dict(type='bool', default=True),
        list_versions=dict(type='bool', default=False),
        kubeconfig_dest=dict(type='path'),
        return_kubeconfig=dict(type='bool', default=False),
        admin_credentials=dict(type='bool', default=False),
    )
    argument_spec.update(copy.deepcopy(AZURE_AUTH_ARGSPEC))
    argument_spec.update(copy.deepcopy(AZURE_CONNECTION_ARGSPEC))
    module = KueueOpsModule(argument_spec, supports_check_mode=True)
    require_azure_sdk(module, 'azure-mgmt-kubernetesconfiguration-extensions and azure-mgmt-containerservice',
                      reason='to manage the AKS extension')
    runner = KueueExtension(module.params, check_mode=module.check_mode, diff=module._diff, no_log=module.no_log,
                            no_log_values=module.no_log_values)
    # Never a traceback: a KueueOpsError names the option and the fix; anything unexpected is reported in one
    # line, secrets scrubbed.
    module.exit_json(**module.run(runner.run, warnings=runner.warnings, describe=lambda exc: x.describe_azure_error(
        exc, 'managing extension %s' % module.params['name'], module.params, runner.secrets).message()))


if __name__ == '__main__':
    main()
