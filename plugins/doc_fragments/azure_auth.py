# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Azure Resource Manager authentication options shared by the kueueops.aks modules.

Option names and AZURE_* environment variables are the ones of
azure.azcollection (plugins/doc_fragments/azure.py); the implementation uses
azure-identity credentials.

DOCUMENTATION also puts its module in the action group kueueops.aks.azure (meta/runtime.yml: exactly the modules
that take these options) besides kueueops.aks.kueue. ansible-doc merges fragments in the order listed and the first
one to set a key keeps it, so a module lists this fragment before kueueops.aks.attributes (whose membership is
kueueops.aks.kueue alone); tests/unit/test_action_groups.py checks the rendered membership of every module.
"""


class ModuleDocFragment:

    DOCUMENTATION = r"""
attributes:
  action_group:
    membership:
      - kueueops.aks.kueue
      - kueueops.aks.azure
options:
  auth_source:
    description:
      - Where the credentials come from.
      - V(auto) uses, in order, a service principal given by O(client_id), O(secret)
        and O(tenant); workload identity when E(AZURE_FEDERATED_TOKEN_FILE) is set;
        the O(profile) (or C(default)) service principal of C(~/.azure/credentials)
        when that file exists; then azure-identity's C(DefaultAzureCredential)
        (environment, workload identity, managed identity, Azure CLI, Azure
        PowerShell, Azure Developer CLI; never an interactive browser).
      - V(cli) uses the Azure CLI login (C(az login)). Without O(subscription_id),
        the CLI's default subscription is used.
      - V(env) reads a service principal from the environment, either the
        azure.azcollection names E(AZURE_CLIENT_ID), E(AZURE_SECRET), E(AZURE_TENANT)
        or the azure-identity names read by C(EnvironmentCredential)
        (E(AZURE_CLIENT_ID), E(AZURE_CLIENT_SECRET) or E(AZURE_CLIENT_CERTIFICATE_PATH),
        E(AZURE_TENANT_ID)).
      - V(credential_file) reads the O(profile) section (default C(default)) of
        C(~/.azure/credentials), an INI file with the keys C(subscription_id),
        C(client_id), C(secret) and C(tenant).
      - V(msi) uses the managed identity of the Azure host; O(client_id) selects a
        user-assigned identity.
      - V(workload_identity) uses a federated token (AKS workload identity) from
        E(AZURE_FEDERATED_TOKEN_FILE), with O(client_id) and O(tenant) or
        E(AZURE_CLIENT_ID) and E(AZURE_TENANT_ID).
      - Can also be set via the E(ANSIBLE_AZURE_AUTH_SOURCE) environment variable.
    type: str
    default: auto
    choices: [ auto, cli, env, credential_file, msi, workload_identity ]
  subscription_id:
    description:
      - The Azure subscription ID.
      - Can also be set via the E(AZURE_SUBSCRIPTION_ID) environment variable or
        the credential file profile.
    type: str
  client_id:
    description:
      - Azure client (application) ID of a service principal, of a user-assigned
        managed identity with O(auth_source=msi), or of a workload identity.
      - Can also be set via the E(AZURE_CLIENT_ID) environment variable.
    type: str
  secret:
    description:
      - Client secret of the service principal O(client_id).
      - Can also be set via the E(AZURE_SECRET) environment variable.
    type: str
  tenant:
    description:
      - Microsoft Entra ID tenant ID of the service principal or workload identity.
      - Can also be set via the E(AZURE_TENANT) environment variable.
    type: str
  profile:
    description:
      - Section of C(~/.azure/credentials) to read with O(auth_source=credential_file)
        or O(auth_source=auto). Defaults to C(default).
      - Can also be set via the E(AZURE_PROFILE) environment variable.
    type: str
  cloud_environment:
    description:
      - The Azure cloud, one of V(AzureCloud), V(AzureChinaCloud), V(AzureUSGovernment), or
        the HTTPS URL of a custom Azure Resource Manager endpoint (for example an
        Azure Stack Hub or a test emulator).
      - For a custom endpoint the token scope is C(<endpoint>/.default) and the
        Microsoft Entra authority is read from the azure-identity environment
        variable E(AZURE_AUTHORITY_HOST) (default V(https://login.microsoftonline.com)).
        An authority that is not one of the public clouds' is used without Microsoft
        Entra instance discovery (it would not be in Microsoft's list).
      - Can also be set via the E(AZURE_CLOUD_ENVIRONMENT) environment variable.
    type: str
    default: AzureCloud
requirements:
  - azure-identity >= 1.15.0 (Python library)
notes:
  - O(secret) is never logged or returned.
  - These options and O(ca_bundle) can be set once, for the modules that call Azure Resource Manager
    (M(kueueops.aks.kueue_extension), M(kueueops.aks.kueue_capacity_info)), with C(module_defaults) and the action group
    C(group/kueueops.aks.azure). The group C(group/kueueops.aks.kueue) holds the Kubernetes options
    only, which every module accepts; Azure options set there would make the other modules fail.
seealso:
  - name: Sign in with the Azure CLI
    description: How to authenticate with C(az login), used by O(auth_source=cli).
    link: https://learn.microsoft.com/cli/azure/authenticate-azure-cli
  - name: Microsoft Entra Workload ID on AKS
    description: The federated token that O(auth_source=workload_identity) uses.
    link: https://learn.microsoft.com/azure/aks/workload-identity-overview
"""

    # Options of how to reach Azure; extends_documentation_fragment: kueueops.aks.azure_auth.connection
    CONNECTION = r"""
options:
  ca_bundle:
    description:
      - Path of a PEM file with the CA certificates to trust for HTTPS to Azure Resource
        Manager and to the Microsoft Entra authority, instead of the system's (for a
        private CA in front of a sovereign or Azure Stack Hub endpoint, a TLS-inspecting
        proxy, or a test emulator). Passed to azure-identity and the Azure SDK clients as
        C(connection_verify).
      - Can also be set via the E(AZURE_CA_BUNDLE) environment variable.
    type: path
"""
