import json
import os

import pytest

from azure.identity import (
    AzureCliCredential,
    ClientSecretCredential,
    DefaultAzureCredential,
    EnvironmentCredential,
    ManagedIdentityCredential,
    WorkloadIdentityCredential,
)
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.kueueops.aks.plugins.module_utils.azure.azure_auth import (
    AZURE_AUTH_ARGSPEC,
    build_credential,
    cli_default_subscription,
    get_azure_session,
    read_credential_file,
    require_azure_identity,
    resolve_cloud,
)
from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import KueueOpsError

SUB = '00000000-0000-0000-0000-000000000001'
TENANT = '00000000-0000-0000-0000-0000000000aa'


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    for name in list(os.environ):
        if name.startswith('AZURE_') or name.startswith('IDENTITY_') or name == 'ANSIBLE_AZURE_AUTH_SOURCE':
            monkeypatch.delenv(name)
    monkeypatch.setenv('HOME', str(tmp_path))  # no real ~/.azure


def params(**kw):
    base = dict((name, spec.get('default')) for name, spec in AZURE_AUTH_ARGSPEC.items())
    base.update(kw)
    return base


def credfile(tmp_path, text):
    path = tmp_path / 'credentials'
    path.write_text(text)
    return str(path)


# ---- argspec ----------------------------------------------------------------

def test_argspec_names_env_and_no_log(monkeypatch):
    envs = {name: spec['fallback'][1][0] for name, spec in AZURE_AUTH_ARGSPEC.items()}
    assert envs == {'auth_source': 'ANSIBLE_AZURE_AUTH_SOURCE', 'subscription_id': 'AZURE_SUBSCRIPTION_ID',
                    'client_id': 'AZURE_CLIENT_ID', 'secret': 'AZURE_SECRET', 'tenant': 'AZURE_TENANT',
                    'profile': 'AZURE_PROFILE', 'cloud_environment': 'AZURE_CLOUD_ENVIRONMENT'}
    assert AZURE_AUTH_ARGSPEC['secret']['no_log'] is True
    assert AZURE_AUTH_ARGSPEC['auth_source']['choices'] == ['auto', 'cli', 'env', 'credential_file', 'msi', 'workload_identity']
    monkeypatch.setenv('AZURE_SECRET', 's3cr3t-value')
    monkeypatch.setenv('ANSIBLE_AZURE_AUTH_SOURCE', 'msi')
    result = ArgumentSpecValidator(AZURE_AUTH_ARGSPEC).validate({})
    assert result.error_messages == []
    assert result.validated_parameters['auth_source'] == 'msi'
    assert result.validated_parameters['cloud_environment'] == 'AzureCloud'
    assert 's3cr3t-value' in result._no_log_values


# ---- clouds -------------------------------------------------------------------

@pytest.mark.parametrize('name,arm,authority', [
    ('AzureCloud', 'https://management.azure.com/', 'https://login.microsoftonline.com'),
    ('azurechinacloud', 'https://management.chinacloudapi.cn/', 'https://login.chinacloudapi.cn'),
    ('AzureUSGovernment', 'https://management.usgovcloudapi.net/', 'https://login.microsoftonline.us'),
    (None, 'https://management.azure.com/', 'https://login.microsoftonline.com'),
])
def test_named_clouds(name, arm, authority):
    _, got_arm, got_authority, scope = resolve_cloud(name, {})
    assert (got_arm, got_authority, scope) == (arm, authority, arm.rstrip('/') + '/.default')


def test_custom_endpoint_uses_authority_host_env():
    name, arm, authority, scope = resolve_cloud('https://127.0.0.1:8443', {'AZURE_AUTHORITY_HOST': 'https://127.0.0.1:8444/'})
    assert (name, arm, authority, scope) == ('custom', 'https://127.0.0.1:8443/', 'https://127.0.0.1:8444',
                                             'https://127.0.0.1:8443/.default')
    assert resolve_cloud('https://arm.local/', {})[2] == 'https://login.microsoftonline.com'


@pytest.mark.parametrize('value', ['AzureGermanCloud', 'http://127.0.0.1:8443', 'management.azure.com'])
def test_bad_cloud(value):
    with pytest.raises(KueueOpsError) as info:
        resolve_cloud(value, {})
    assert info.value.field == 'cloud_environment' and 'AzureChinaCloud' in info.value.message()


def test_insecure_authority_rejected():
    with pytest.raises(KueueOpsError):
        resolve_cloud('https://arm.local', {'AZURE_AUTHORITY_HOST': 'http://login.local'})


# ---- credential selection --------------------------------------------------------

def test_auto_explicit_service_principal():
    session = build_credential(params(client_id='app', secret='pw', tenant=TENANT, subscription_id=SUB), environ={})
    assert isinstance(session.credential, ClientSecretCredential)
    assert session.source == 'service_principal' and session.subscription_id == SUB
    assert session.client_kwargs() == {'base_url': 'https://management.azure.com/',
                                       'credential_scopes': ['https://management.azure.com/.default']}


def test_auto_partial_service_principal_names_missing_option():
    with pytest.raises(KueueOpsError) as info:
        build_credential(params(client_id='app', secret='pw', subscription_id=SUB), environ={})
    assert info.value.field == 'tenant' and 'AZURE_TENANT' in info.value.message()


def test_auto_workload_identity(tmp_path):
    token = tmp_path / 'token'
    token.write_text('jwt')
    env = {'AZURE_FEDERATED_TOKEN_FILE': str(token), 'AZURE_CLIENT_ID': 'wi', 'AZURE_TENANT_ID': TENANT}
    session = build_credential(params(subscription_id=SUB), environ=env)
    assert isinstance(session.credential, WorkloadIdentityCredential) and session.source == 'workload_identity'


def test_auto_credential_file_then_default(tmp_path):
    path = credfile(tmp_path, '[default]\nsubscription_id=%s\nclient_id=app\nsecret=pw\ntenant=%s\n' % (SUB, TENANT))
    session = build_credential(params(), environ={}, credential_file=path)
    assert isinstance(session.credential, ClientSecretCredential) and session.subscription_id == SUB
    session = build_credential(params(subscription_id=SUB), environ={}, credential_file=str(tmp_path / 'none'))
    assert isinstance(session.credential, DefaultAzureCredential) and session.source == 'default'


def test_auto_client_id_without_secret_is_default_with_that_identity():
    session = build_credential(params(client_id='mi-client', subscription_id=SUB), environ={}, credential_file='/nonexistent')
    assert isinstance(session.credential, DefaultAzureCredential)


def test_cli_uses_cli_default_subscription(tmp_path):
    (tmp_path / 'azureProfile.json').write_text('\ufeff' + json.dumps({'subscriptions': [
        {'id': 'other', 'isDefault': False}, {'id': SUB, 'isDefault': True}]}), encoding='utf-8')
    session = build_credential(params(auth_source='cli'), environ={'AZURE_CONFIG_DIR': str(tmp_path)})
    assert isinstance(session.credential, AzureCliCredential) and session.subscription_id == SUB
    assert cli_default_subscription({'AZURE_CONFIG_DIR': str(tmp_path / 'missing')}) is None
    session = build_credential(params(auth_source='cli', tenant=TENANT, subscription_id='x'), environ={})
    assert isinstance(session.credential, AzureCliCredential) and session.subscription_id == 'x'


def test_env_with_azcollection_names():
    env = {'AZURE_CLIENT_ID': 'app', 'AZURE_SECRET': 'pw', 'AZURE_TENANT': TENANT}
    session = build_credential(params(auth_source='env', subscription_id=SUB), environ=env)
    assert isinstance(session.credential, ClientSecretCredential)


def test_env_with_azure_identity_names(monkeypatch):
    env = {'AZURE_CLIENT_ID': 'app', 'AZURE_CLIENT_SECRET': 'pw', 'AZURE_TENANT_ID': TENANT}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    session = build_credential(params(auth_source='env', subscription_id=SUB), environ=env)
    assert isinstance(session.credential, EnvironmentCredential)


def test_env_without_service_principal():
    with pytest.raises(KueueOpsError) as info:
        build_credential(params(auth_source='env', subscription_id=SUB), environ={})
    assert info.value.field == 'auth_source' and 'AZURE_SECRET' in info.value.message()


def test_msi_system_and_user_assigned():
    assert isinstance(build_credential(params(auth_source='msi', subscription_id=SUB), environ={}).credential,
                      ManagedIdentityCredential)
    assert isinstance(build_credential(params(auth_source='msi', client_id='uami', subscription_id=SUB),
                                       environ={}).credential, ManagedIdentityCredential)


def test_workload_identity_missing_token_file():
    with pytest.raises(KueueOpsError) as info:
        build_credential(params(auth_source='workload_identity', client_id='a', tenant=TENANT, subscription_id=SUB), environ={})
    assert 'AZURE_FEDERATED_TOKEN_FILE' in info.value.message()


def test_credential_file_profiles(tmp_path):
    path = credfile(tmp_path, '[default]\nclient_id=a\nsecret=b\ntenant=c\nsubscription_id=s1\n'
                              '[prod]\nclient_id=a2\nsecret=b2\ntenant=c2\nsubscription_id=s2\n'
                              '[user]\nad_user=u\npassword=p\n[half]\nclient_id=a\nsecret=b\n')
    session = build_credential(params(auth_source='credential_file', profile='prod'), environ={}, credential_file=path)
    assert isinstance(session.credential, ClientSecretCredential) and session.subscription_id == 's2'
    assert session.source == 'credential_file'
    session = build_credential(params(auth_source='credential_file', subscription_id='explicit'), environ={}, credential_file=path)
    assert session.subscription_id == 'explicit'
    with pytest.raises(KueueOpsError) as info:
        build_credential(params(auth_source='credential_file', profile='nope'), environ={}, credential_file=path)
    assert info.value.field == 'profile' and 'prod' in info.value.message()
    with pytest.raises(KueueOpsError) as info:
        build_credential(params(auth_source='credential_file', profile='user'), environ={}, credential_file=path)
    assert 'ad_user' in info.value.message()
    with pytest.raises(KueueOpsError) as info:
        build_credential(params(auth_source='credential_file', profile='half', subscription_id=SUB), environ={}, credential_file=path)
    assert info.value.field == 'tenant'


def test_credential_file_missing_or_broken(tmp_path):
    with pytest.raises(KueueOpsError) as info:
        read_credential_file(None, str(tmp_path / 'absent'))
    assert 'does not exist' in info.value.message()
    with pytest.raises(KueueOpsError):
        read_credential_file(None, credfile(tmp_path, 'no section header\n'))


def test_missing_subscription_names_option_and_env():
    with pytest.raises(KueueOpsError) as info:
        build_credential(params(client_id='a', secret='b', tenant=TENANT), environ={})
    assert info.value.field == 'subscription_id'
    assert info.value.message() == ('subscription_id: no Azure subscription id. '
                                    'Fix: set subscription_id or the AZURE_SUBSCRIPTION_ID environment variable.')


def test_unknown_auth_source():
    with pytest.raises(KueueOpsError):
        build_credential(params(auth_source='password', subscription_id=SUB), environ={})


def test_custom_cloud_session_kwargs():
    session = build_credential(params(client_id='a', secret='b', tenant=TENANT, subscription_id=SUB,
                                      cloud_environment='https://127.0.0.1:8443'),
                               environ={'AZURE_AUTHORITY_HOST': 'https://127.0.0.1:8444'})
    assert session.base_url == 'https://127.0.0.1:8443/'
    assert session.credential_scopes == ['https://127.0.0.1:8443/.default']
    assert session.authority_host == 'https://127.0.0.1:8444'


def test_arm_client_accepts_session():
    from azure.mgmt.containerservice import ContainerServiceClient
    session = build_credential(params(client_id='a', secret='b', tenant=TENANT, subscription_id=SUB), environ={})
    client = ContainerServiceClient(session.credential, session.subscription_id, **session.client_kwargs())
    assert client._config.subscription_id == SUB
    assert client._config.credential_scopes == ['https://management.azure.com/.default']


class FakeModule:
    def __init__(self, module_params):
        self.params = module_params
        self.failed = None

    def fail_json(self, **kwargs):
        self.failed = kwargs
        raise SystemExit(1)


def test_get_azure_session(monkeypatch):
    module = FakeModule(params(client_id='a', secret='b', tenant=TENANT, subscription_id=SUB))
    assert get_azure_session(module).subscription_id == SUB
    module = FakeModule(params(client_id='a', secret='b', tenant=TENANT))
    with pytest.raises(SystemExit):
        get_azure_session(module)
    assert module.failed['msg'].startswith('subscription_id: ')
    assert 'b' not in module.failed['msg'].split()


def test_require_azure_identity(azure_sdk_missing):
    module = FakeModule(params())
    require_azure_identity(module)
    azure_sdk_missing('azure.identity')  # the import really fails
    with pytest.raises(SystemExit):
        require_azure_identity(module)
    assert 'azure-identity' in module.failed['msg'] and 'pip install azure-identity' in module.failed['msg']
    assert 'ImportError' in module.failed['exception'] and "'azure.identity'" in module.failed['exception']
