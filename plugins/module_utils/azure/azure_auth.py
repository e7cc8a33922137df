# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Azure Resource Manager authentication on azure-identity.

Option names and AZURE_* environment fallbacks follow azure.azcollection.
``build_credential(params)`` returns an ``AzureSession`` whose ``credential``,
``subscription_id`` and ``client_kwargs()`` are what an ARM SDK client takes::

    session = build_credential(module.params)
    client = ContainerServiceClient(session.credential, session.subscription_id, **session.client_kwargs())
"""

import configparser
import json
import os

from urllib.parse import urlparse

from ansible.module_utils.basic import missing_required_lib
from ansible.module_utils.common.parameters import env_fallback

from ansible_collections.kueueops.aks.plugins.module_utils.azure.azure_sdk import azure_import_error, azure_module
from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import KueueOpsError


def _identity():
    return azure_module('azure.identity')


AUTH_SOURCES = ['auto', 'cli', 'env', 'credential_file', 'msi', 'workload_identity']

AZURE_AUTH_ARGSPEC = dict(
    auth_source=dict(type='str', default='auto', choices=AUTH_SOURCES,
                     fallback=(env_fallback, ['ANSIBLE_AZURE_AUTH_SOURCE'])),
    subscription_id=dict(type='str', fallback=(env_fallback, ['AZURE_SUBSCRIPTION_ID'])),
    client_id=dict(type='str', fallback=(env_fallback, ['AZURE_CLIENT_ID'])),
    secret=dict(type='str', no_log=True, fallback=(env_fallback, ['AZURE_SECRET'])),
    tenant=dict(type='str', fallback=(env_fallback, ['AZURE_TENANT'])),
    profile=dict(type='str', fallback=(env_fallback, ['AZURE_PROFILE'])),
    cloud_environment=dict(type='str', default='AzureCloud', fallback=(env_fallback, ['AZURE_CLOUD_ENVIRONMENT'])),
)

# How to reach the endpoints (doc fragment kueueops.aks.azure_auth.connection); kept apart
# from AZURE_AUTH_ARGSPEC, which mirrors azure.azcollection's authentication options.
AZURE_CONNECTION_ARGSPEC = dict(
    ca_bundle=dict(type='path', fallback=(env_fallback, ['AZURE_CA_BUNDLE'])),
)

PUBLIC_AUTHORITY = 'https://login.microsoftonline.com'

# name -> (resource_manager_url, authority_host)
CLOUDS = {
    'AzureCloud': ('https://management.azure.com/', PUBLIC_AUTHORITY),
    'AzureChinaCloud': ('https://management.chinacloudapi.cn/', 'https://login.chinacloudapi.cn'),
    'AzureUSGovernment': ('https://management.usgovcloudapi.net/', 'https://login.microsoftonline.us'),
}

DEFAULT_CREDENTIAL_FILE = '~/.azure/credentials'


class AzureSession:
    """A credential plus what an ARM client needs to use it."""

    def __init__(self, credential, subscription_id, cloud, source, ca_bundle=None):
        self.credential = credential
        self.subscription_id = subscription_id
        self.cloud_name, self.resource_manager_url, self.authority_host, self.credential_scope = cloud
        self.source = source
        self.ca_bundle = ca_bundle

    @property
    def base_url(self):
        return self.resource_manager_url

    @property
    def credential_scopes(self):
        return [self.credential_scope]

    def client_kwargs(self):
        """Keyword arguments for an ARM SDK client: ``base_url`` and ``credential_scopes``,
        and ``connection_verify`` when a CA bundle is configured."""
        kwargs = dict(base_url=self.base_url, credential_scopes=self.credential_scopes)
        if self.ca_bundle:
            kwargs['connection_verify'] = self.ca_bundle
        return kwargs


def resolve_cloud(cloud_environment, environ=None):
    """Return ``(name, resource_manager_url, authority_host, credential_scope)``.

    Accepts a cloud name (case-insensitive) or the HTTPS URL of a custom ARM
    endpoint, whose authority comes from ``AZURE_AUTHORITY_HOST``.
    """
    environ = os.environ if environ is None else environ
    value = (cloud_environment or 'AzureCloud').strip()
    for name, (arm, authority) in CLOUDS.items():
        if value.lower() == name.lower():
            return name, arm, authority, arm.rstrip('/') + '/.default'
    parsed = urlparse(value)
    if parsed.scheme == 'https' and parsed.netloc:
        arm = value.rstrip('/') + '/'
        authority = (environ.get('AZURE_AUTHORITY_HOST') or PUBLIC_AUTHORITY).rstrip('/')
        if urlparse(authority).scheme != 'https':
            raise KueueOpsError('AZURE_AUTHORITY_HOST %s is not an https URL' % authority, field='cloud_environment',
                                fix='set AZURE_AUTHORITY_HOST to the https URL of the Entra ID authority of that cloud')
        return 'custom', arm, authority, arm.rstrip('/') + '/.default'
    raise KueueOpsError('unknown cloud %r' % value, field='cloud_environment',
                        fix='use one of %s, or the https URL of a custom Azure Resource Manager endpoint'
                            % ', '.join(sorted(CLOUDS)))


def read_credential_file(profile=None, path=None):
    """Read a profile of an azcollection credentials INI file; return its keys as a dict."""
    path = os.path.expanduser(path or DEFAULT_CREDENTIAL_FILE)
    section = profile or 'default'
    if not os.path.isfile(path):
        raise KueueOpsError('credential file %s does not exist' % path, field='auth_source',
                            fix='create it with a [%s] section (subscription_id, client_id, secret, tenant), '
                                'or choose another auth_source' % section)
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(path)
    except configparser.Error as exc:
        raise KueueOpsError('cannot parse %s: %s' % (path, exc.__class__.__name__), field='auth_source',
                            fix='make it an INI file with [profile] sections')
    if not parser.has_section(section):
        raise KueueOpsError('profile %s is not in %s (profiles: %s)' % (section, path, ', '.join(parser.sections()) or 'none'),
                            field='profile', fix='set profile (or AZURE_PROFILE) to one of the file\'s sections')
    return dict(parser.items(section))


def cli_default_subscription(environ=None):
    """The default subscription id of the Azure CLI (azureProfile.json), or None."""
    environ = os.environ if environ is None else environ
    config_dir = environ.get('AZURE_CONFIG_DIR') or os.path.expanduser('~/.azure')
    path = os.path.join(config_dir, 'azureProfile.json')
    try:
        with open(path, encoding='utf-8-sig') as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None
    for subscription in data.get('subscriptions') or []:
        if subscription.get('isDefault'):
            return subscription.get('id')
    return None


def _http_kwargs(authority, ca_bundle):
    """Keyword arguments for the azure-identity credentials that talk HTTP to an authority.

    A custom authority (not one of the public clouds) is not in Microsoft's instance
    discovery list, so MSAL must not validate it there (``disable_instance_discovery``).
    """
    kwargs = {}
    if ca_bundle:
        kwargs['connection_verify'] = ca_bundle
    if authority and authority.rstrip('/') not in set(cloud[1] for cloud in CLOUDS.values()):
        kwargs['disable_instance_discovery'] = True
    return kwargs


def _service_principal(client_id, secret, tenant, authority, origin, **kwargs):
    missing = [name for name, value in (('client_id', client_id), ('secret', secret), ('tenant', tenant)) if not value]
    if missing:
        raise KueueOpsError('a service principal needs client_id, secret and tenant; missing %s (%s)'
                            % (', '.join(missing), origin), field=missing[0],
                            fix='set %s (or AZURE_%s), or choose another auth_source'
                                % (missing[0], missing[0].upper()))
    return _identity().ClientSecretCredential(tenant_id=tenant, client_id=client_id, client_secret=secret,
                                              authority=authority, **kwargs)


def _workload_identity(client_id, tenant, authority, environ, **kwargs):
    client_id = client_id or environ.get('AZURE_CLIENT_ID')
    tenant = tenant or environ.get('AZURE_TENANT_ID')
    token_file = environ.get('AZURE_FEDERATED_TOKEN_FILE')
    missing = [name for name, value in (('client_id', client_id), ('tenant', tenant),
                                        ('AZURE_FEDERATED_TOKEN_FILE', token_file)) if not value]
    if missing:
        raise KueueOpsError('workload identity needs %s' % ', '.join(missing), field='auth_source',
                            fix='run in a pod with the azure.workload.identity/use label, or set client_id, tenant '
                                'and AZURE_FEDERATED_TOKEN_FILE')
    return _identity().WorkloadIdentityCredential(tenant_id=tenant, client_id=client_id, token_file_path=token_file,
                                                  authority=authority, **kwargs)


def _env_credential(authority, environ, **kwargs):
    client_id = environ.get('AZURE_CLIENT_ID')
    if client_id and environ.get('AZURE_SECRET') and environ.get('AZURE_TENANT'):
        return _identity().ClientSecretCredential(tenant_id=environ['AZURE_TENANT'], client_id=client_id,
                                                  client_secret=environ['AZURE_SECRET'], authority=authority,
                                                  **kwargs)
    identity_ready = client_id and environ.get('AZURE_TENANT_ID') and (
        environ.get('AZURE_CLIENT_SECRET') or environ.get('AZURE_CLIENT_CERTIFICATE_PATH'))
    if not identity_ready:
        raise KueueOpsError('the environment holds no service principal', field='auth_source',
                            fix='export AZURE_CLIENT_ID, AZURE_SECRET and AZURE_TENANT (or AZURE_CLIENT_ID, '
                                'AZURE_CLIENT_SECRET and AZURE_TENANT_ID), or choose another auth_source')
    return _identity().EnvironmentCredential(authority=authority, **kwargs)


def select_credential(params, authority, environ, credential_file=None):
    """Return ``(credential, source, profile_values)`` for ``params['auth_source']``."""
    source = params.get('auth_source') or 'auto'
    client_id, secret, tenant = params.get('client_id'), params.get('secret'), params.get('tenant')
    http = _http_kwargs(authority, params.get('ca_bundle'))

    if source == 'cli':
        identity = _identity()
        return identity.AzureCliCredential(tenant_id=tenant) if tenant else identity.AzureCliCredential(), 'cli', {}
    if source == 'env':
        return _env_credential(authority, environ, **http), 'env', {}
    if source == 'msi':
        msi = dict(connection_verify=http['connection_verify']) if 'connection_verify' in http else {}
        if client_id:
            msi['client_id'] = client_id
        return _identity().ManagedIdentityCredential(**msi), 'msi', {}
    if source == 'workload_identity':
        return _workload_identity(client_id, tenant, authority, environ, **http), 'workload_identity', {}
    if source == 'credential_file':
        values = read_credential_file(params.get('profile'), credential_file)
        if values.get('ad_user') and not values.get('client_id'):
            raise KueueOpsError('user/password (ad_user) authentication is not supported', field='profile',
                                fix='store a service principal (client_id, secret, tenant) in the profile')
        return (_service_principal(values.get('client_id'), values.get('secret'), values.get('tenant'), authority,
                                   'credential file profile %s' % (params.get('profile') or 'default'), **http),
                'credential_file', values)
    if source != 'auto':
        raise KueueOpsError('unknown auth_source %r' % source, field='auth_source', fix='use one of ' + ', '.join(AUTH_SOURCES))

    # auto: explicit service principal, workload identity, credential file, then DefaultAzureCredential.
    if secret:
        return (_service_principal(client_id, secret, tenant, authority, 'auth_source=auto', **http),
                'service_principal', {})
    if environ.get('AZURE_FEDERATED_TOKEN_FILE'):
        return _workload_identity(client_id, tenant, authority, environ, **http), 'workload_identity', {}
    path = os.path.expanduser(credential_file or DEFAULT_CREDENTIAL_FILE)
    if os.path.isfile(path):
        values = read_credential_file(params.get('profile'), path)
        if values.get('client_id') and values.get('secret'):
            return (_service_principal(values.get('client_id'), values.get('secret'), values.get('tenant'), authority,
                                       'credential file profile %s' % (params.get('profile') or 'default'), **http),
                    'credential_file', values)
    kwargs = dict(exclude_interactive_browser_credential=True, authority=authority)
    kwargs.update(http)
    if client_id:
        kwargs.update(managed_identity_client_id=client_id, workload_identity_client_id=client_id)
    if tenant:
        kwargs.update(workload_identity_tenant_id=tenant)
    return _identity().DefaultAzureCredential(**kwargs), 'default', {}


def build_credential(params, environ=None, credential_file=None):
    """Build an ``AzureSession`` from AZURE_AUTH_ARGSPEC ``params``.

    Raises ``KueueOpsError`` naming the option at fault. No token is requested here.
    """
    environ = os.environ if environ is None else environ
    cloud = resolve_cloud(params.get('cloud_environment'), environ)
    ca_bundle = params.get('ca_bundle')
    if ca_bundle:
        ca_bundle = os.path.expanduser(ca_bundle)
        if not os.path.isfile(ca_bundle):
            raise KueueOpsError('CA bundle %s does not exist' % ca_bundle, field='ca_bundle',
                                fix='give the path of a PEM file with the CA certificates to trust (or unset '
                                    'AZURE_CA_BUNDLE)')
        params = dict(params, ca_bundle=ca_bundle)
    credential, source, profile_values = select_credential(params, cloud[2], environ, credential_file)
    subscription_id = params.get('subscription_id') or profile_values.get('subscription_id')
    if not subscription_id and source == 'cli':
        subscription_id = cli_default_subscription(environ)
    if not subscription_id:
        raise KueueOpsError('no Azure subscription id', field='subscription_id',
                            fix='set subscription_id or the AZURE_SUBSCRIPTION_ID environment variable')
    return AzureSession(credential, subscription_id, cloud, source, ca_bundle=ca_bundle)


def require_azure_identity(module):
    """Fail the module with installation advice when azure-identity is missing."""
    if azure_module('azure.identity') is None:
        module.fail_json(
            msg=missing_required_lib(
                'azure-identity',
                reason='to authenticate to Azure; run `pip install azure-identity` '
                       '(or `pip install -r requirements.txt` from the kueueops.aks collection) '
                       'in the Python that runs the module',
            ),
            exception=azure_import_error('azure.identity'),
        )


def get_azure_session(module):
    """Module entry point: guard the import, build the session or fail cleanly."""
    require_azure_identity(module)
    try:
        return build_credential(module.params)
    except KueueOpsError as exc:
        module.fail_json(msg=exc.message())
