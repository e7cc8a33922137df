import json
import os
import stat

import pytest
import yaml

from ansible.module_utils.basic import missing_required_lib
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from kubernetes.client.exceptions import ApiException

from ansible_collections.kueueops.aks.plugins.module_utils.kube import kube_client
from tests.unit.plugins.module_utils.test_module import exit_of, output_profile, patch_module_args  # noqa: F401
from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import KueueOpsError
from ansible_collections.kueueops.aks.plugins.module_utils.kube.kube_client import (
    KUBE_AUTH_ARGSPEC,
    REDACTED,
    build_api_client,
    check_connection,
    describe_kube_error,
    get_api_client,
    kubeconfig_secret_values,
    redact_kubeconfig,
    register_kubeconfig_secrets,
    require_kubernetes,
)

CA_PEM = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n'


def kubeconfig(server='https://127.0.0.1:6443', **user):
    return {
        'apiVersion': 'v1', 'kind': 'Config', 'current-context': 'one',
        'clusters': [{'name': 'c1', 'cluster': {'server': server, 'certificate-authority-data': 'Q0EK'}},
                     {'name': 'c2', 'cluster': {'server': 'https://10.0.0.2:443', 'insecure-skip-tls-verify': True}}],
        'users': [{'name': 'u1', 'user': user or {'token': 'tok-one-secret'}},
                  {'name': 'u2', 'user': {'token': 'tok-two-secret'}}],
        'contexts': [{'name': 'one', 'context': {'cluster': 'c1', 'user': 'u1'}},
                     {'name': 'two', 'context': {'cluster': 'c2', 'user': 'u2'}}],
    }


def bearer(cfg):
    # auth_settings() runs the kubeconfig refresh hook, as a real request does
    return cfg.auth_settings()['BearerToken']['value']


def params(**kw):
    base = dict((name, None) for name in KUBE_AUTH_ARGSPEC)
    base.update(kw)
    return base


pytestmark = pytest.mark.usefixtures('no_default_kubeconfig')


# ---- argspec -------------------------------------------------------------

def test_argspec_names_aliases_and_env_fallbacks():
    assert set(KUBE_AUTH_ARGSPEC) == {
        'kubeconfig', 'context', 'host', 'api_key', 'ca_cert', 'client_cert', 'client_key',
        'validate_certs', 'proxy', 'no_proxy', 'proxy_headers', 'impersonate_user', 'impersonate_groups'}
    assert KUBE_AUTH_ARGSPEC['api_key']['no_log'] is True
    assert KUBE_AUTH_ARGSPEC['kubeconfig']['type'] == 'raw'
    assert KUBE_AUTH_ARGSPEC['ca_cert']['aliases'] == ['ssl_ca_cert']
    assert KUBE_AUTH_ARGSPEC['client_cert']['aliases'] == ['cert_file']
    assert KUBE_AUTH_ARGSPEC['client_key']['aliases'] == ['key_file']
    assert KUBE_AUTH_ARGSPEC['validate_certs']['aliases'] == ['verify_ssl']
    envs = {name: spec['fallback'][1][0] for name, spec in KUBE_AUTH_ARGSPEC.items() if name != 'proxy_headers'}
    assert envs == {
        'kubeconfig': 'K8S_AUTH_KUBECONFIG', 'context': 'K8S_AUTH_CONTEXT', 'host': 'K8S_AUTH_HOST',
        'api_key': 'K8S_AUTH_API_KEY', 'ca_cert': 'K8S_AUTH_SSL_CA_CERT', 'client_cert': 'K8S_AUTH_CERT_FILE',
        'client_key': 'K8S_AUTH_KEY_FILE', 'validate_certs': 'K8S_AUTH_VERIFY_SSL', 'proxy': 'K8S_AUTH_PROXY',
        'no_proxy': 'K8S_AUTH_NO_PROXY',
        'impersonate_user': 'K8S_AUTH_IMPERSONATE_USER', 'impersonate_groups': 'K8S_AUTH_IMPERSONATE_GROUPS'}
    # kubernetes.core's proxy_headers: a dict of three keys, each with its K8S_AUTH_PROXY_HEADERS_* variable.
    headers = KUBE_AUTH_ARGSPEC['proxy_headers']
    assert headers['type'] == 'dict' and 'fallback' not in headers
    assert {k: v['fallback'][1][0] for k, v in headers['options'].items()} == {
        'proxy_basic_auth': 'K8S_AUTH_PROXY_HEADERS_PROXY_BASIC_AUTH',
        'basic_auth': 'K8S_AUTH_PROXY_HEADERS_BASIC_AUTH', 'user_agent': 'K8S_AUTH_PROXY_HEADERS_USER_AGENT'}
    assert headers['options']['proxy_basic_auth']['no_log'] and headers['options']['basic_auth']['no_log']


def test_argspec_env_fallback_and_no_log(monkeypatch):
    monkeypatch.setenv('K8S_AUTH_API_KEY', 'sekrit-token')
    monkeypatch.setenv('K8S_AUTH_VERIFY_SSL', 'no')
    monkeypatch.setenv('K8S_AUTH_IMPERSONATE_GROUPS', 'g1,g2')
    result = ArgumentSpecValidator(KUBE_AUTH_ARGSPEC).validate({})
    assert result.error_messages == []
    assert result.validated_parameters['api_key'] == 'sekrit-token'
    assert result.validated_parameters['validate_certs'] is False
    assert result.validated_parameters['impersonate_groups'] == ['g1', 'g2']
    assert 'sekrit-token' in result._no_log_values
    assert result.validated_parameters['proxy_headers'] == dict(proxy_basic_auth=None, basic_auth=None,
                                                                user_agent=None)


def test_argspec_proxy_headers_from_env_and_no_log(monkeypatch):
    monkeypatch.setenv('K8S_AUTH_PROXY_HEADERS_PROXY_BASIC_AUTH', 'bob:pr0xy-pw')
    monkeypatch.setenv('K8S_AUTH_NO_PROXY', 'localhost,10.0.0.0/8')
    result = ArgumentSpecValidator(KUBE_AUTH_ARGSPEC).validate({'proxy_headers': {'user_agent': 'ua/1'}})
    assert result.error_messages == []
    assert result.validated_parameters['proxy_headers'] == dict(proxy_basic_auth='bob:pr0xy-pw', basic_auth=None,
                                                                user_agent='ua/1')
    assert result.validated_parameters['no_proxy'] == 'localhost,10.0.0.0/8'
    assert 'bob:pr0xy-pw' in result._no_log_values
    unknown = ArgumentSpecValidator(KUBE_AUTH_ARGSPEC).validate({'proxy_headers': {'proxy_auth': 'x'}})
    assert 'proxy_auth' in ' '.join(unknown.error_messages)


# ---- redaction -------------------------------------------------------------

def test_redact_kubeconfig_replaces_every_secret_and_keeps_the_rest():
    config = kubeconfig(**{'client-key-data': 'KEYDATA', 'client-certificate-data': 'CERTDATA',
                           'password': 'pw', 'username': 'admin'})
    config['users'].append({'name': 'oidc', 'user': {'auth-provider': {'name': 'oidc', 'config': {
        'client-id': 'kubectl', 'client-secret': 'cs', 'id-token': 'idt', 'refresh-token': 'rt',
        'idp-issuer-url': 'https://issuer'}}}})
    config['users'].append({'name': 'exec', 'user': {'exec': {
        'apiVersion': 'client.authentication.k8s.io/v1', 'command': 'kubelogin',
        'args': ['get-token', '--server-id', 'abc', '--client-secret', 'xs', '--token=tt', '--login', 'spn'],
        'env': [{'name': 'AAD_SERVICE_PRINCIPAL_CLIENT_SECRET', 'value': 'envs'}]}}})
    original = yaml.safe_dump(config)

    red = redact_kubeconfig(config)

    assert yaml.safe_dump(config) == original, 'input must not be modified'
    dump = yaml.safe_dump(red)
    for secret in ('tok-two-secret', 'KEYDATA', 'pw', 'cs', 'idt', 'rt', 'xs', 'tt', 'envs'):
        assert ': %s\n' % secret not in dump and "'%s'" % secret not in dump and '=%s' % secret not in dump
    u1 = red['users'][0]['user']
    assert u1['client-key-data'] == REDACTED and u1['password'] == REDACTED
    assert u1['client-certificate-data'] == 'CERTDATA' and u1['username'] == 'admin'
    provider = red['users'][2]['user']['auth-provider']['config']
    assert provider == {'client-id': 'kubectl', 'client-secret': REDACTED, 'id-token': REDACTED,
                        'refresh-token': REDACTED, 'idp-issuer-url': 'https://issuer'}
    exec_cfg = red['users'][3]['user']['exec']
    assert exec_cfg['args'] == ['get-token', '--server-id', 'abc', '--client-secret', REDACTED,
                                '--token=' + REDACTED, '--login', 'spn']
    assert exec_cfg['env'] == [{'name': 'AAD_SERVICE_PRINCIPAL_CLIENT_SECRET', 'value': REDACTED}]
    assert red['clusters'] == config['clusters']


def test_secret_values_match_redaction():
    config = kubeconfig(**{'token': 'abc123', 'client-key-data': 'KEY'})
    assert kubeconfig_secret_values(config) == {'abc123', 'KEY', 'tok-two-secret'}


@pytest.mark.parametrize('value', [None, 'a/path', [], {'users': 'notalist'}, {'users': [None, {'user': None}]}])
def test_redaction_tolerates_odd_shapes(value):
    assert redact_kubeconfig(value) == value
    assert kubeconfig_secret_values(value) == set()


class FakeModule:
    def __init__(self, module_params):
        self.params = module_params
        self.no_log_values = set()
        self.failed = None

    def fail_json(self, **kwargs):
        self.failed = kwargs
        raise SystemExit(1)


@pytest.mark.usefixtures('output_profile')
def test_register_kubeconfig_secrets_masks_output(capsys):
    """What a real AnsibleModule prints after registering a dict kubeconfig's secrets: ansible-core masks them in
    the whole result (here the kubeconfig returned as is, and the ``invocation`` where the release still adds one),
    not only in a copy we mask ourselves (ansible-core 2.22 deprecates ``remove_values``)."""
    from ansible.module_utils.basic import AnsibleModule
    with patch_module_args({'kubeconfig': kubeconfig()}):
        module = AnsibleModule(dict(KUBE_AUTH_ARGSPEC))
    register_kubeconfig_secrets(module)
    shown, code = exit_of(capsys, lambda: module.exit_json(kubeconfig=module.params['kubeconfig']))
    text = json.dumps(shown)
    assert code == 0
    assert 'tok-one-secret' not in text and 'tok-two-secret' not in text
    assert shown['kubeconfig']['apiVersion'] == 'v1'  # harmless words stay readable


def test_register_ignores_path():
    module = FakeModule(params(kubeconfig='/some/path'))
    register_kubeconfig_secrets(module)
    assert module.no_log_values == set()


# ---- client building ---------------------------------------------------------

def test_dict_kubeconfig_current_context_and_private_files(tmp_path):
    client = build_api_client(params(kubeconfig=kubeconfig()))
    cfg = client.configuration
    assert cfg.host == 'https://127.0.0.1:6443'
    assert bearer(cfg) == 'Bearer tok-one-secret'
    ca_file = cfg.ssl_ca_cert
    assert os.path.isfile(ca_file)
    mode = stat.S_IMODE(os.stat(ca_file).st_mode)
    assert mode & 0o077 == 0, oct(mode)
    assert stat.S_IMODE(os.stat(os.path.dirname(ca_file)).st_mode) == 0o700


def test_dict_kubeconfig_named_context():
    cfg = build_api_client(params(kubeconfig=kubeconfig(), context='two')).configuration
    assert cfg.host == 'https://10.0.0.2:443'
    assert cfg.verify_ssl is False
    assert bearer(cfg) == 'Bearer tok-two-secret'


def test_kubeconfig_without_current_context_says_how_to_choose_one(tmp_path):
    cfg = kubeconfig()
    del cfg['current-context']
    path = tmp_path / 'config'
    path.write_text(yaml.safe_dump(cfg))
    with pytest.raises(KueueOpsError) as err:
        build_api_client(params(kubeconfig=str(path)))
    assert err.value.field == 'kubeconfig'
    assert 'current-context' in str(err.value) and 'set context' in str(err.value)
    assert 'use-context' in str(err.value)
    # with a context named, the same file works
    assert build_api_client(params(kubeconfig=str(path), context='one')).configuration.host == 'https://127.0.0.1:6443'


def test_path_kubeconfig_and_explicit_overrides(tmp_path):
    path = tmp_path / 'config'
    path.write_text(yaml.safe_dump(kubeconfig()))
    for name in ('ca.pem', 'cert.pem', 'key.pem'):
        (tmp_path / name).write_text(CA_PEM)
    cfg = build_api_client(params(
        kubeconfig=str(path), host='https://override:6443/', api_key='explicit',
        ca_cert=str(tmp_path / 'ca.pem'), client_cert=str(tmp_path / 'cert.pem'),
        client_key=str(tmp_path / 'key.pem'), validate_certs=False, proxy='http://proxy:3128')).configuration
    assert bearer(cfg) == 'Bearer explicit'
    assert cfg.host == 'https://override:6443'
    assert cfg.ssl_ca_cert.endswith('ca.pem') and cfg.cert_file.endswith('cert.pem') and cfg.key_file.endswith('key.pem')
    assert cfg.verify_ssl is False and cfg.proxy == 'http://proxy:3128'


def test_host_and_token_without_kubeconfig():
    cfg = build_api_client(params(host='https://127.0.0.1:6443', api_key='t')).configuration
    assert cfg.host == 'https://127.0.0.1:6443' and bearer(cfg) == 'Bearer t'


def test_default_kubeconfig_from_env(monkeypatch, tmp_path):
    path = tmp_path / 'kc'
    path.write_text(yaml.safe_dump(kubeconfig(server='https://default:6443')))
    monkeypatch.setenv('KUBECONFIG', str(path))
    assert build_api_client(params()).configuration.host == 'https://default:6443'


@pytest.mark.parametrize('kw,field,words', [
    (dict(kubeconfig='/does/not/exist'), 'kubeconfig', 'does not exist'),
    (dict(kubeconfig=kubeconfig(), context='nope'), 'context', 'nope'),
    (dict(kubeconfig={'apiVersion': 'v1', 'kind': 'Config'}), 'kubeconfig', 'invalid kubeconfig'),
    (dict(kubeconfig=42), 'kubeconfig', 'path or a dictionary'),
    (dict(), 'kubeconfig', 'no Kubernetes connection configured'),
    (dict(host='https://h:6443', ca_cert='/no/ca.pem'), 'ca_cert', 'does not exist'),
    (dict(host='https://h:6443', impersonate_groups=['g']), 'impersonate_groups', 'requires a user'),
])
def test_config_errors_name_the_option(kw, field, words):
    with pytest.raises(KueueOpsError) as info:
        build_api_client(params(**kw))
    assert info.value.field == field
    assert words in info.value.message()
    assert info.value.message().startswith(field + ': ')


def test_kubeconfig_file_that_is_not_yaml(tmp_path):
    path = tmp_path / 'bad'
    path.write_text('users: [\n')
    with pytest.raises(KueueOpsError) as info:
        build_api_client(params(kubeconfig=str(path)))
    assert info.value.field == 'kubeconfig'


class RecordingPool:
    def __init__(self):
        self.calls = []

    def request(self, method, url, **kwargs):
        self.calls.append((method, url, kwargs))

        class Response:
            status = 200
            reason = 'OK'
            data = b'{"major": "1", "minor": "33", "gitVersion": "v1.33.0"}'

            def getheaders(self):
                return {'Content-Type': 'application/json'}

            def getheader(self, name, default=None):
                return self.getheaders().get(name, default)

            headers = {'Content-Type': 'application/json'}

        return Response()


def test_impersonation_headers_on_the_wire():
    client = build_api_client(params(host='https://127.0.0.1:6443', api_key='t',
                                     impersonate_user='alice', impersonate_groups=['dev', 'ops']))
    pool = RecordingPool()
    client.rest_client.pool_manager = pool
    assert check_connection(client) == 'v1.33.0'
    headers = pool.calls[0][2]['headers']
    assert headers['Impersonate-User'] == 'alice'
    assert [v for k, v in headers.items() if k == 'Impersonate-Group'] == ['dev', 'ops']
    assert headers['authorization'] == 'Bearer t'


def test_unreachable_host_is_a_clear_error():
    client = build_api_client(params(host='http://127.0.0.1:1', api_key='t'))
    client.configuration.retries = False
    client.rest_client.pool_manager.connection_pool_kw['retries'] = False
    with pytest.raises(KueueOpsError) as info:
        check_connection(client)
    assert info.value.field == 'host'
    assert 'cannot reach the Kubernetes API server http://127.0.0.1:1' in info.value.message()


def test_describe_api_exceptions():
    exc = ApiException(status=403, reason='Forbidden')
    exc.body = '{"message": "User \\"x\\" cannot create resource \\"clusterqueues\\" in API group \\"kueue.x-k8s.io\\" at the cluster scope"}'
    err = describe_kube_error(exc)
    assert err.field == 'impersonate_user'
    assert 'cannot create clusterqueues.kueue.x-k8s.io' in err.message()
    exc401 = ApiException(status=401, reason='Unauthorized')
    assert describe_kube_error(exc401).field == 'api_key'
    assert describe_kube_error(ApiException(status=409, reason='Conflict')).field is None
    same = KueueOpsError('x')
    assert describe_kube_error(same) is same
    assert describe_kube_error(RuntimeError('odd')).message() == 'RuntimeError: odd.'


def test_tls_failure_points_at_ca_cert():
    import ssl
    from urllib3.exceptions import MaxRetryError, SSLError
    exc = MaxRetryError(None, '/version', reason=SSLError(ssl.SSLError('CERTIFICATE_VERIFY_FAILED')))
    assert describe_kube_error(exc, host='https://h').field == 'ca_cert'


def test_get_api_client_fails_cleanly():
    module = FakeModule(params(kubeconfig='/does/not/exist'))
    with pytest.raises(SystemExit):
        get_api_client(module)
    assert module.failed['msg'].startswith('kubeconfig: file /does/not/exist does not exist.')


def test_get_api_client_masks_and_builds():
    module = FakeModule(params(kubeconfig=kubeconfig()))
    client = get_api_client(module)
    assert client.configuration.host == 'https://127.0.0.1:6443'
    assert 'tok-one-secret' in module.no_log_values


def test_require_kubernetes_message(monkeypatch):
    module = FakeModule(params())
    require_kubernetes(module)
    assert module.failed is None
    monkeypatch.setattr(kube_client, 'HAS_KUBERNETES', False)
    monkeypatch.setattr(kube_client, 'KUBERNETES_IMPORT_ERROR', 'Traceback: ImportError')
    with pytest.raises(SystemExit):
        require_kubernetes(module)
    assert 'kubernetes' in module.failed['msg'] and 'pip install kubernetes' in module.failed['msg']
    assert 'requirements.txt' in module.failed['msg']
    assert module.failed['exception'] == 'Traceback: ImportError'


def test_kubernetes_missing_is_require_kubernetes_without_the_module(monkeypatch):
    """The fail_json arguments that module_utils code raises as ModuleFailure (extension_arm's preflight) are the
    ones require_kubernetes fails the module with."""
    assert kube_client.kubernetes_missing() is None
    monkeypatch.setattr(kube_client, 'HAS_KUBERNETES', False)
    missing = kube_client.kubernetes_missing()
    assert set(missing) == {'msg', 'exception'} and missing['exception'] == kube_client.KUBERNETES_IMPORT_ERROR
    assert 'kubernetes' in missing['msg'] and 'pip install kubernetes' in missing['msg']

    class Module:
        def fail_json(self, **kwargs):
            raise SystemExit(kwargs)

    with pytest.raises(SystemExit) as exc:
        kube_client.require_kubernetes(Module())
    assert exc.value.args[0] == missing
    assert kube_client.missing_library('PyYAML', reason='to read it') == {'msg': missing_required_lib(
        'PyYAML', reason='to read it')}


def test_api_client_from_kubeconfig_text_masks_before_it_builds():
    masked = set()
    text = yaml.safe_dump(kubeconfig())
    client = kube_client.api_client_from_kubeconfig_text(text, 'the kubeconfig of Secret ns/s', masked)
    assert client.configuration.host == 'https://127.0.0.1:6443'
    assert bearer(client.configuration) == 'Bearer tok-one-secret'
    assert {text, 'tok-one-secret'} <= masked
    for bad, words in (('{: nope', 'is not a YAML kubeconfig'), ('- a list', 'is not a kubeconfig (not a mapping)')):
        masked = set()
        with pytest.raises(KueueOpsError) as err:
            kube_client.api_client_from_kubeconfig_text(bad, 'the kubeconfig of Secret ns/s', masked)
        assert 'the kubeconfig of Secret ns/s %s' % words in err.value.message() and bad in masked
