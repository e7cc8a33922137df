#!/usr/bin/python
# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kueue_extension
short_description: Install, update or remove the AKS managed Kueue extension (microsoft.kueue)
version_added: 0.1.0
description:
  - Manages the AKS cluster extension C(microsoft.kueue), the "AKS managed Kueue extension (preview)" path of the
    AKS documentation, through Azure Resource Manager (C(Microsoft.KubernetesConfiguration/extensions), API
    2025-03-01) with the Azure SDK for Python; no Azure CLI is needed.
  - B(One name.) The AKS documentation creates the extension as C(aks-kueue) but shows and deletes it as C(kueue).
    This module uses one name, O(name) (default V(kueue)), for every operation; give V(aks-kueue) to manage an
    extension created with the documentation's command.
  - B(Preflight.) Before anything is created or changed (with O(preflight), the default), the module reads the managed
    cluster and fails, with the reason and the fix, when its Kubernetes version is older than 1.34, when it is AKS
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
      - Pin this exact extension version (for example V(0.14.2)). ARM requires C(autoUpgradeMinorVersion=false) for a
        pinned version, which the module sends. Omit to follow O(release_train).
    type: str
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
  platform:
    platforms: all
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - kueueops.aks.azure_auth
  - kueueops.aks.azure_auth.connection
  - kueueops.aks.kube_auth
notes:
  - Check mode reads the cluster and the extension, runs the preflight, and reports what would change without sending
    a PUT, PATCH or DELETE and without writing O(kubeconfig_dest).
  - The Kubernetes options are used only by the preflight's search for an unmanaged Kueue. With the credentials
    fetched from ARM, O(proxy), O(no_proxy) and O(proxy_headers) still apply.
  - Supports diff mode; the diff holds the extension's type, namespace, release train, version, upgrade settings,
    configuration settings and the names of the protected settings.
requirements:
  - azure-identity >= 1.15.0
  - azure-mgmt-containerservice >= 30.0.0
  - azure-mgmt-kubernetesconfiguration-extensions >= 1.0.0
  - kubernetes >= 29.0.0 (for the preflight's Kubernetes check)
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
    version: 0.14.2
    auto_upgrade_mode: patch
    configuration_settings:
      controllerManager.featureGates.TopologyAwareScheduling: true

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
  sample: {name: kueue, properties: {extensionType: microsoft.kueue, releaseTrain: preview, currentVersion: 0.14.2,
           provisioningState: Succeeded, extensionState: Available, scope: {cluster: {releaseNamespace: kueue-system}}}}
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
           offered_versions: [0.14.2, 0.14.1], kueue_deployments: []}
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
import os

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.kueueops.aks.plugins.module_utils import extension as x
from ansible_collections.kueueops.aks.plugins.module_utils.azure_auth import (
    AZURE_AUTH_ARGSPEC,
    AZURE_CONNECTION_ARGSPEC,
    build_credential,
    require_azure_identity,
)
from ansible_collections.kueueops.aks.plugins.module_utils.errors import KueueOpsError
from ansible_collections.kueueops.aks.plugins.module_utils.kube_client import (
    KUBE_AUTH_ARGSPEC,
    build_api_client,
    describe_kube_error,
    kubeconfig_secret_values,
    require_kubernetes,
)

try:
    from azure.core.exceptions import AzureError, HttpResponseError, ResourceNotFoundError
    from azure.core.rest import HttpRequest
    from azure.mgmt.containerservice import ContainerServiceClient
    from azure.mgmt.kubernetesconfiguration.extensions import KubernetesConfigurationExtensionsMgmtClient
except ImportError as exc:
    HAS_AZURE_MGMT = False
    AZURE_MGMT_IMPORT_ERROR = exc

    class AzureError(Exception):
        pass

    class ResourceNotFoundError(AzureError):
        pass

    HttpResponseError = ResourceNotFoundError
    HttpRequest = None
else:
    HAS_AZURE_MGMT = True
    AZURE_MGMT_IMPORT_ERROR = None

from ansible_collections.kueueops.aks.plugins.module_utils.kueue_cluster import Cluster, path
from ansible_collections.kueueops.aks.plugins.module_utils.wait import Deadline, poll_until

try:
    import yaml
except ImportError:  # reported by require_kubernetes when the preflight needs it
    yaml = None

POLL_SECONDS = 2
RETRY = dict(retry_total=5, retry_backoff_factor=0.8, retry_backoff_max=60, connection_timeout=30, read_timeout=120)
KUBE_TIMEOUT = 30


class KueueExtension:
    def __init__(self, module):
        self.module = module
        self.p = module.params
        self.warnings = []
        self.secrets = [self.p.get('secret')] + list((self.p.get('configuration_protected_settings') or {}).values())
        self.deadline = None
        self._kubeconfig_bytes = None

    # ------------------------------------------------------------------ ARM
    def connect(self):
        session = build_credential(self.p)
        kwargs = session.client_kwargs()
        kwargs.update(RETRY, polling_interval=POLL_SECONDS)
        self.subscription_id = session.subscription_id
        self.ext = KubernetesConfigurationExtensionsMgmtClient(session.credential, session.subscription_id, **kwargs)
        self.aks = ContainerServiceClient(session.credential, session.subscription_id, **kwargs)

    def azure(self, exc, what):
        return x.describe_azure_error(exc, what, self.p, self.secrets)

    def ext_args(self):
        return (self.p['resource_group'], x.CLUSTER_RP, x.CLUSTER_RESOURCE, self.p['cluster_name'], self.p['name'])

    def get_cluster(self):
        try:
            return self.aks.managed_clusters.get(self.p['resource_group'], self.p['cluster_name']).as_dict()
        except AzureError as exc:
            raise self.azure(exc, 'reading managed cluster %s' % self.p['cluster_name'])

    def get_extension(self):
        try:
            return self.ext.extensions.get(*self.ext_args()).as_dict()
        except ResourceNotFoundError:
            return None
        except AzureError as exc:
            raise self.azure(exc, 'reading extension %s' % self.p['name'])

    def remaining(self):
        """What is left of the task's timeout, at least 1 s (the SDK's pollers take it as their own timeout)."""
        return max(1.0, self.deadline.remaining())

    def timed_out(self, what, extension=None):
        state = ''
        if extension:
            props = extension.get('properties') or {}
            state = ' (provisioningState %s, extensionState %s)' % (props.get('provisioningState'),
                                                                    props.get('extensionState'))
        return KueueOpsError('%s did not finish within %ss%s' % (what, self.p['timeout'], state), field='timeout',
                             fix='raise timeout; the operation may still finish in Azure, run the task again to see')

    def failed(self, extension, what, deleting=False):
        props = extension.get('properties') or {}
        if deleting:
            fix = ('run the task again to retry the deletion, or set force_delete=true to remove the extension '
                   'resource even if the cluster cannot be cleaned up')
        else:
            fix = ('correct the cause named above (settings, version, cluster capacity) and run again; an extension '
                   'whose state is Failed is created again')
        return KueueOpsError('%s: the extension is %s: %s' % (what, props.get('provisioningState'),
                                                              x._scrub(x.failure_message(extension), self.secrets)),
                             field='name', fix=fix)

    def follow(self, poller, what, deleting=False):
        """Wait for an LRO poller; on an operation failure report the extension's own errorInfo."""
        try:
            poller.wait(timeout=self.remaining())
            if not poller.done():
                try:
                    current = self.get_extension()
                except KueueOpsError:
                    current = None
                raise self.timed_out(what, current)
            return poller.result()
        except AzureError as exc:
            current = self.get_extension()
            if current is not None and x.is_failed(current):
                raise self.failed(current, what, deleting)
            raise self.azure(exc, what)

    def wait_ready(self, what):
        """Read the extension until Succeeded (and Available); fail on Failed/Canceled or the timeout."""
        def read():
            current = self.get_extension()
            if current is None:
                raise KueueOpsError('%s: the extension disappeared while waiting for it' % what, field='name',
                                    fix='something else deleted it; run the task again')
            if not x.is_ready(current) and x.is_failed(current):
                raise self.failed(current, what)
            return current

        current, ready = poll_until(read, x.is_ready, self.deadline, POLL_SECONDS)
        if not ready:
            raise self.timed_out(what, current)
        return current

    def wait_settled(self, current):
        """Let an operation that another actor started end before deciding anything."""
        if current is None or not x.is_busy(current):
            return current
        current, settled = poll_until(self.get_extension, lambda cur: cur is None or not x.is_busy(cur),
                                      self.deadline, POLL_SECONDS)
        if not settled:
            raise self.timed_out('the running operation on extension %s' % self.p['name'], current)
        return current

    def wait_gone(self, what):
        def read():
            current = self.get_extension()
            if current is not None and x.is_failed(current):
                raise self.failed(current, what, deleting=True)
            return current

        current, gone = poll_until(read, lambda cur: cur is None, self.deadline, POLL_SECONDS)
        if not gone:
            raise self.timed_out(what, current)

    # ------------------------------------------------------------------ credentials and Kubernetes
    def kubeconfig_bytes(self):
        if self._kubeconfig_bytes is None:
            admin = self.p['admin_credentials']
            what = 'fetching the cluster %s credentials' % ('admin' if admin else 'user')
            ops = self.aks.managed_clusters
            try:
                if admin:
                    result = ops.list_cluster_admin_credentials(self.p['resource_group'], self.p['cluster_name'])
                else:
                    result = ops.list_cluster_user_credentials(self.p['resource_group'], self.p['cluster_name'])
            except AzureError as exc:
                err = self.azure(exc, what)
                if admin:
                    err.fix = (err.fix or '') + '; clusters with local accounts disabled refuse admin credentials: ' \
                                                'set admin_credentials=false'
                raise err
            kubeconfigs = result.kubeconfigs or []
            if not kubeconfigs or not kubeconfigs[0].value:
                raise KueueOpsError('ARM returned no kubeconfig while %s' % what, field='cluster_name',
                                    fix='check that the cluster is running')
            self._kubeconfig_bytes = bytes(kubeconfigs[0].value)
        return self._kubeconfig_bytes

    def kubeconfig_dict(self):
        if yaml is None:
            self.module.fail_json(msg=missing_required_lib('PyYAML', reason='to read the cluster kubeconfig'))
        try:
            data = yaml.safe_load(self.kubeconfig_bytes().decode('utf-8'))
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            raise KueueOpsError('the kubeconfig ARM returned is not YAML: %s' % type(exc).__name__,
                                field='cluster_name')
        if not isinstance(data, dict):
            raise KueueOpsError('the kubeconfig ARM returned is not a mapping', field='cluster_name')
        if not self.p['return_kubeconfig']:
            self.module.no_log_values.update(kubeconfig_secret_values(data))
        return data

    def kube_params(self):
        """The module's Kubernetes options when they point at something, else the fetched credentials."""
        p = self.p
        if x.explicit_kube_options(p.get('kubeconfig'), p.get('host'), p.get('kubeconfig_dest')):
            return dict((key, p.get(key)) for key in KUBE_AUTH_ARGSPEC), 'the Kubernetes options'
        params = dict((key, None) for key in KUBE_AUTH_ARGSPEC)
        # How to reach the API server still applies to the fetched credentials' cluster.
        for key in ('proxy', 'no_proxy', 'proxy_headers'):
            params[key] = p.get(key)
        params['kubeconfig'] = self.kubeconfig_dict()
        return params, 'the cluster credentials from ARM'

    def kueue_deployments(self):
        require_kubernetes(self.module)
        params, source = self.kube_params()
        api = build_api_client(params)
        cluster = Cluster(api, timeout=KUBE_TIMEOUT)
        deployments = path('apps/v1', 'deployments')
        try:
            managers = set()
            for selector in (dict(fieldSelector='metadata.name=%s' % x.KUEUE_MANAGER_NAME),
                             dict(labelSelector=x.KUEUE_MANAGER_LABELS)):
                for item in cluster.items(deployments, **selector):
                    managers.add((item['metadata']['namespace'], item['metadata']['name']))
            extension_ns = set(item['metadata']['namespace'] for item in cluster.items(
                deployments, fieldSelector='metadata.name=%s' % x.EXTENSION_DEPLOYMENT))
        except Exception as exc:  # pylint: disable=broad-except
            err = describe_kube_error(exc, host=api.configuration.host)
            raise KueueOpsError('preflight: cannot list the Deployments of the cluster with %s: %s'
                                % (source, err.problem), field=err.field or 'preflight',
                                fix='%s; or set the Kubernetes options (kubeconfig, context) to reach the cluster, or '
                                    'preflight=false to skip the checks' % (err.fix or 'check access to the cluster'))
        return sorted('%s/%s' % item for item in managers), x.unmanaged_kueue(managers, extension_ns)

    def offered_versions(self):
        """The versions ARM offers the cluster in release_train (ExtensionTypes_ClusterListVersions, every page);
        None, with a warning, when they cannot be listed: ARM then checks the version when the extension is written."""
        p = self.p
        url = x.extension_type_versions_url(self.subscription_id, p['resource_group'], p['cluster_name'],
                                            p['extension_type'], p['release_train'])
        pages = []
        try:
            while url and len(pages) < 100:
                response = self.ext.send_request(HttpRequest('GET', url))
                if response.status_code != 200:
                    raise HttpResponseError(response=response)
                pages.append(response.json())
                url = pages[-1].get('nextLink')
        except (AzureError, ValueError) as exc:
            err = self.azure(exc, 'listing the versions of %s offered to cluster %s' % (p['extension_type'],
                                                                                        p['cluster_name']))
            self.warnings.append('preflight: the offered versions were not checked (%s); ARM checks the version when '
                                 'the extension is written' % err.problem)
            return None
        return x.offered_versions(pages)

    def preflight(self, cluster, check_versions=False):
        failures, warnings, facts = x.preflight_cluster(cluster, self.p['release_train'])
        self.warnings.extend(warnings)
        if check_versions:
            facts['offered_versions'] = self.offered_versions()
            if facts['offered_versions'] is not None:
                offer = x.version_offer_error(self.p, facts['offered_versions'], self.p['cluster_name'])
                if offer:
                    failures.append(offer)
        if failures:
            raise KueueOpsError('preflight failed: ' + ' '.join(
                '(%d) %s' % (idx + 1, err.message()) for idx, err in enumerate(failures)),
                field=failures[0].field, fix=None)
        found, unmanaged = self.kueue_deployments()
        facts['kueue_deployments'] = found
        if unmanaged:
            raise x.unmanaged_kueue_error(unmanaged)
        facts['ran'] = True
        return facts

    def write_kubeconfig(self, result):
        dest = self.p.get('kubeconfig_dest')
        if not dest:
            return False
        dest = os.path.abspath(dest)
        data = self.kubeconfig_bytes()
        result['kubeconfig_path'] = dest
        if x.file_matches(dest, data):
            return False
        if not self.module.check_mode:
            x.write_private_file(dest, data)
        return True

    # ------------------------------------------------------------------ states
    def run(self):
        p = self.p
        if p['return_kubeconfig'] and not self.module.no_log:
            raise KueueOpsError('the kubeconfig holds credentials and the task does not set no_log',
                                field='return_kubeconfig',
                                fix='add no_log: true to the task, or write it to a 0600 file with kubeconfig_dest')
        if p['timeout'] <= 0:
            raise KueueOpsError('must be positive', field='timeout', fix='give the seconds to wait, for example 900')
        x.validate_params(p)
        self.connect()
        self.deadline = Deadline(p['timeout'])
        cluster = self.get_cluster()
        current = self.get_extension()
        if p['wait'] and not self.module.check_mode:
            current = self.wait_settled(current)
        if p['state'] == 'absent':
            return self.absent(current)
        return self.present(cluster, current)

    def diff(self, before, after):
        if self.module._diff:
            return dict(before=before, after=after)
        return None

    def present(self, cluster, current):
        p = self.p
        result = dict(changed=False, operation='none', changes=[], preflight={'ran': False})
        before = x.diff_view(extension=current) if current is not None else {}
        if current is None:
            operation, changes = 'created', ['extension']
        else:
            changes, immutable = x.compare(p, current)
            if immutable:
                props = current.get('properties') or {}
                have = ', '.join('%s %s' % (field, props.get('extensionType') if field == 'extension_type'
                                            else x.release_namespace_of(props)) for field in immutable)
                raise KueueOpsError(
                    'extension %s exists with %s; %s cannot change on an existing extension'
                    % (p['name'], have, ' and '.join(immutable)), field=immutable[0],
                    fix='use the existing value, or remove the extension first (state=absent; back up with the kueue '
                        'role\'s uninstall_with_backup) and create it again')
            if x.is_failed(current):
                operation = 'created'
                changes = changes or ['provisioning_state']
            else:
                operation = 'updated' if changes else 'none'
        result['changes'] = changes
        after = dict(before)
        after.update(dict((k, v) for k, v in x.diff_view(params=p).items()
                          if not (k == 'configuration_settings' and p.get('configuration_settings') is None)
                          and not (k == 'auto_upgrade_mode' and v is None)))
        if operation != 'none':
            result.update(changed=True, operation=operation)
            diff = self.diff(before, after)
            if diff:
                result['diff'] = diff
            if p['preflight']:
                result['preflight'] = self.preflight(cluster, check_versions=operation == 'created' or bool(
                    set(changes) & set(['version', 'release_train'])))
            if not self.module.check_mode:
                current = self.write(operation, current, changes)
        elif p['wait'] and not self.module.check_mode and not x.is_ready(current):
            current = self.wait_ready('waiting for extension %s to become ready' % p['name'])
        if current is not None:
            result['extension'] = x.redact_extension(current)
        if self.write_kubeconfig(result):
            result['changed'] = True
        if p['return_kubeconfig']:
            result['kubeconfig'] = self.kubeconfig_dict()
        return result

    def write(self, operation, current, changes):
        p = self.p
        what = '%s extension %s' % ('creating' if operation == 'created' else 'updating', p['name'])
        try:
            if operation == 'created':
                body = {'properties': x.desired_properties(p)}
                poller = self.ext.extensions.begin_create(*self.ext_args(), extension=body, polling=p['wait'])
            else:
                body = x.patch_body(p, current, changes)
                poller = self.ext.extensions.begin_update(*self.ext_args(), patch_extension=body, polling=p['wait'])
        except AzureError as exc:
            raise self.azure(exc, what)
        if not p['wait']:
            return self.get_extension()
        self.follow(poller, what)
        current = self.wait_ready(what)
        wanted = x.desired_properties(p).get('configurationSettings')
        kept = sorted(set((current.get('properties') or {}).get('configurationSettings') or {}) - set(wanted or {}))
        if wanted is not None and kept:
            self.warnings.append('ARM kept the configuration settings %s that configuration_settings does not list; '
                                 'remove and re-create the extension to drop them' % ', '.join(kept))
        return current

    def absent(self, current):
        p = self.p
        result = dict(changed=False, operation='none', changes=[])
        if current is None:
            return result
        result.update(changed=True, operation='deleted', changes=['extension'])
        diff = self.diff(x.diff_view(extension=current), {})
        if diff:
            result['diff'] = diff
        self.warnings.append('deleting extension %s deletes every Kueue custom resource in cluster %s (queues, '
                             'flavors, cohorts, priority classes); Jobs and Pods stay' % (p['name'], p['cluster_name']))
        if self.module.check_mode:
            result['extension'] = x.redact_extension(current)
            return result
        what = 'deleting extension %s' % p['name']
        try:
            poller = self.ext.extensions.begin_delete(*self.ext_args(), force_delete=p['force_delete'] or None,
                                                      polling=p['wait'])
        except AzureError as exc:
            raise self.azure(exc, what)
        if p['wait']:
            self.follow(poller, what, deleting=True)
            self.wait_gone(what)
        return result


def main():
    argument_spec = dict(
        state=dict(type='str', default='present', choices=['present', 'absent']),
        resource_group=dict(type='str', required=True),
        cluster_name=dict(type='str', required=True),
        name=dict(type='str', default='kueue'),
        extension_type=dict(type='str', default=x.EXTENSION_TYPE),
        release_train=dict(type='str', default='preview'),
        version=dict(type='str'),
        auto_upgrade_mode=dict(type='str', choices=list(x.AUTO_UPGRADE_MODES)),
        release_namespace=dict(type='str', default='kueue-system'),
        configuration_settings=dict(type='dict'),
        configuration_protected_settings=dict(type='dict', no_log=True),
        update_protected_settings=dict(type='str', default='on_create', choices=['on_create', 'always']),
        wait=dict(type='bool', default=True),
        timeout=dict(type='int', default=900, aliases=['wait_timeout']),
        force_delete=dict(type='bool', default=False),
        preflight=dict(type='bool', default=True),
        kubeconfig_dest=dict(type='path'),
        return_kubeconfig=dict(type='bool', default=False),
        admin_credentials=dict(type='bool', default=False),
    )
    argument_spec.update(copy.deepcopy(AZURE_AUTH_ARGSPEC))
    argument_spec.update(copy.deepcopy(AZURE_CONNECTION_ARGSPEC))
    argument_spec.update(copy.deepcopy(KUBE_AUTH_ARGSPEC))
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    require_azure_identity(module)
    if not HAS_AZURE_MGMT:
        module.fail_json(msg=missing_required_lib(
            'azure-mgmt-kubernetesconfiguration-extensions and azure-mgmt-containerservice',
            reason='to manage the AKS extension; run `pip install -r requirements.txt` from the kueueops.aks '
                   'collection in the Python that runs the module'), exception=str(AZURE_MGMT_IMPORT_ERROR))
    runner = KueueExtension(module)
    try:
        result = runner.run()
    except Exception as exc:  # pylint: disable=broad-except
        # Never a traceback: a KueueOpsError names the option and the fix; anything unexpected
        # is reported in one line, secrets scrubbed.
        for warning in runner.warnings:
            module.warn(warning)
        module.fail_json(msg=x.describe_azure_error(exc, 'managing extension %s' % module.params['name'],
                                                    module.params, runner.secrets).message())
    for warning in runner.warnings:
        module.warn(warning)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
