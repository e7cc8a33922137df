# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Azure Resource Manager for the AKS managed cluster and its extensions (issue 42): the management SDK's import and
the one check of a missing one, the ARM clients with their retry policy (``AksArm``), the secrets a run scrubs, and
the read of a managed cluster that kueue_capacity_info makes. It writes nothing: the extension's writes are
``extension_arm.KueueExtension``'s, on the same clients.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kueueops.aks.plugins.module_utils.azure import extension as x
from ansible_collections.kueueops.aks.plugins.module_utils.azure.azure_auth import build_credential, require_azure_identity
from ansible_collections.kueueops.aks.plugins.module_utils.azure.azure_sdk import azure_error, azure_import_error, azure_module
from ansible_collections.kueueops.aks.plugins.module_utils.kube.kube_client import missing_library

# The Azure management SDK the ARM reads and writes use, imported on first use (azure_sdk.azure_module).
AZURE_MGMT_MODULES = ('azure.core.exceptions', 'azure.core.rest', 'azure.mgmt.containerservice',
                      'azure.mgmt.kubernetesconfiguration.extensions')
POLL_SECONDS = 2
RETRY = dict(retry_total=5, retry_backoff_factor=0.8, retry_backoff_max=60, connection_timeout=30, read_timeout=120)


def azure_mgmt_import_error():
    """Import the Azure management SDK (AZURE_MGMT_MODULES); None when it is there, else the traceback of the first
    module that is not (require_azure_sdk reports it)."""
    for name in AZURE_MGMT_MODULES:
        if azure_module(name) is None:
            return azure_import_error(name)
    return None


def require_azure_sdk(module, libraries, reason):
    """Fail the module, before anything is sent, with installation advice when azure-identity or the Azure management
    SDK is missing: the one check of every module that calls ARM. `libraries` names the distributions the module
    needs, `reason` what for."""
    require_azure_identity(module)
    error = azure_mgmt_import_error()
    if error:
        module.fail_json(exception=error, **missing_library(libraries, reason=(
            '%s; run `pip install -r requirements.txt` from the kueueops.aks collection in the Python that runs the '
            'module' % reason)))


def secrets_of(params):
    """The option values that must never reach the output (scrubbed from every error)."""
    return [params.get('secret')] + list((params.get('configuration_protected_settings') or {}).values())


class AksArm:
    """The ARM clients of a run (the managed cluster's and its extensions'), on ``self.p``'s Azure options, with the
    retry policy and the error messages of every ARM call (secrets ``self.secrets`` scrubbed). KueueExtension writes
    through it; ``read_managed_cluster`` only reads."""

    def connect(self):
        session = build_credential(self.p)
        kwargs = session.client_kwargs()
        kwargs.update(RETRY, polling_interval=POLL_SECONDS)
        self.subscription_id = session.subscription_id
        self.ext = azure_module('azure.mgmt.kubernetesconfiguration.extensions').KubernetesConfigurationExtensionsMgmtClient(
            session.credential, session.subscription_id, **kwargs)
        self.aks = azure_module('azure.mgmt.containerservice').ContainerServiceClient(
            session.credential, session.subscription_id, **kwargs)

    def azure(self, exc, what):
        return x.describe_azure_error(exc, what, self.p, self.secrets)

    def get_cluster(self):
        try:
            return self.aks.managed_clusters.get(self.p['resource_group'], self.p['cluster_name']).as_dict()
        except azure_error('AzureError') as exc:
            raise self.azure(exc, 'reading managed cluster %s' % self.p['cluster_name'])


def read_managed_cluster(params):
    """The managed cluster's ARM JSON (``properties.agentPoolProfiles`` among the rest), read with ``params``' Azure
    options, ``resource_group`` and ``cluster_name`` through the client, retry policy and error messages
    kueue_extension uses (kueue_capacity_info reads the agent pools this way)."""
    arm = AksArm()
    arm.p, arm.secrets = params, secrets_of(params)
    arm.connect()
    return arm.get_cluster()
