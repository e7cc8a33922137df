"""The one translation of the Kubernetes options (issue 13, item 4): several kubeconfig paths merged as
kubectl merges them, proxy / no_proxy / proxy_headers, and what helm gets from the same translation
(helm_runner.helm_kube_env). Pure logic: files in tmp_path, no cluster."""

import json
import os
import stat

import pytest
import yaml

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.kueueops.aks.plugins.module_utils.helm import helm_runner as hr
from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import KueueOpsError
from ansible_collections.kueueops.aks.plugins.module_utils.kube.kube_client import (
    KUBE_AUTH_ARGSPEC,
    build_api_client,
    bypasses_proxy,
    effective_proxy,
    proxy_url_with_auth,
    resolve_kube_options,
)


def params(**kw):
    """Validated as a module would validate them (so proxy_headers has its three keys)."""
    result = ArgumentSpecValidator(KUBE_AUTH_ARGSPEC).validate(kw)
    assert result.error_messages == []
    return result.validated_parameters


pytestmark = pytest.mark.usefixtures('no_default_kubeconfig')


def write(path, data):
    path.write_text(yaml.safe_dump(data))
    return str(path)


@pytest.fixture
def split(tmp_path):
    """The user and context in one file, the cluster (with a relative CA path) in another, and a third
    file that defines the same names differently and a later current-context (kubectl ignores both)."""
    (tmp_path / 'clusters').mkdir()
    (tmp_path / 'clusters' / 'ca.pem').write_text('CA\n')
    users = write(tmp_path / 'users.yml', {
        'apiVersion': 'v1', 'kind': 'Config', 'current-context': 'work',
        'users': [{'name': 'me', 'user': {'token': 'tok-first'}}],
        'contexts': [{'name': 'work', 'context': {'cluster': 'aks', 'user': 'me'}}]})
    clusters = write(tmp_path / 'clusters' / 'config', {
        'apiVersion': 'v1', 'kind': 'Config',
        'clusters': [{'name': 'aks', 'cluster': {'server': 'https://127.0.0.1:6443',
                                                 'certificate-authority': 'ca.pem'}}]})
    later = write(tmp_path / 'later.yml', {
        'apiVersion': 'v1', 'kind': 'Config', 'current-context': 'other',
        'clusters': [{'name': 'aks', 'cluster': {'server': 'https://127.0.0.9:1'}},
                     {'name': 'o', 'cluster': {'server': 'https://127.0.0.8:1'}}],
        'users': [{'name': 'me', 'user': {'token': 'tok-later'}}],
        'contexts': [{'name': 'other', 'context': {'cluster': 'o', 'user': 'me'}}]})
    return users, clusters, later


# ---- several kubeconfig paths -------------------------------------------------------------

def test_several_paths_merge_as_kubectl(split, tmp_path):
    paths = os.pathsep.join(split)
    cfg = build_api_client(params(kubeconfig=paths)).configuration
    # The first file's current-context (the Python client's own merger would take the last: 'other'),
    # the cluster from the second file with its CA relative to that file, the first file's user.
    assert cfg.host == 'https://127.0.0.1:6443'
    assert cfg.ssl_ca_cert == str(tmp_path / 'clusters' / 'ca.pem')
    assert cfg.auth_settings()['BearerToken']['value'] == 'Bearer tok-first'
    assert resolve_kube_options(params(kubeconfig=paths))['context'] == 'work'
    # An explicit context still wins.
    assert build_api_client(params(kubeconfig=paths, context='other')).configuration.host == 'https://127.0.0.8:1'


def test_kubeconfig_env_with_several_paths_skips_missing_ones(split, tmp_path, monkeypatch):
    monkeypatch.setenv('KUBECONFIG', os.pathsep.join([str(tmp_path / 'missing'), split[0], split[1]]))
    options = resolve_kube_options(params())
    assert options['kubeconfig'] == [split[0], split[1]] and options['context'] == 'work'
    assert build_api_client(params()).configuration.host == 'https://127.0.0.1:6443'


def test_kubeconfig_option_with_a_missing_path_is_refused(split, tmp_path):
    missing = str(tmp_path / 'nope.yml')
    with pytest.raises(KueueOpsError) as err:
        resolve_kube_options(params(kubeconfig=os.pathsep.join([split[0], missing])))
    assert err.value.field == 'kubeconfig'
    assert missing in err.value.message() and 'joined by' in err.value.message()


def test_a_single_path_is_loaded_as_before(split):
    options = resolve_kube_options(params(kubeconfig=split[2]))
    assert options['kubeconfig'] == [split[2]] and options['context'] is None
    assert build_api_client(params(kubeconfig=split[2])).configuration.host == 'https://127.0.0.8:1'


# ---- proxy, no_proxy, proxy_headers ---------------------------------------------------------

@pytest.mark.parametrize('server,no_proxy,bypass', [
    ('https://127.0.0.1:6443', '127.0.0.0/8', True),
    ('https://127.0.0.1:6443', '10.0.0.0/8,localhost', False),
    ('https://aks.example.com:443', '.example.com', True),
    ('https://aks.example.com:443', 'example.com', True),
    ('https://aks.example.com:443', 'aks.example.com:443', True),
    ('https://aks.example.com:443', 'ample.com', False),
    ('https://aks.example.com:443', '*', True),
    ('https://[::1]:6443', '::1', True),
    ('https://aks.example.com', None, False),
])
def test_no_proxy_matching(server, no_proxy, bypass):
    assert bypasses_proxy(server, no_proxy) is bypass


def test_proxy_applies_unless_no_proxy_exempts_the_server(split):
    base = dict(kubeconfig=os.pathsep.join(split), proxy='http://127.0.0.1:3128')
    cfg = build_api_client(params(**base)).configuration
    assert cfg.proxy == 'http://127.0.0.1:3128'
    exempt = build_api_client(params(no_proxy='localhost,127.0.0.1', **base)).configuration
    assert exempt.proxy is None
    options = resolve_kube_options(params(no_proxy='localhost,127.0.0.1', **base))
    assert effective_proxy(options, 'https://127.0.0.1:6443') is None
    assert effective_proxy(options, 'https://aks.example.com') == 'http://127.0.0.1:3128'


def test_proxy_headers_become_urllib3_headers(split):
    cfg = build_api_client(params(kubeconfig=split[0] + os.pathsep + split[1], proxy='http://127.0.0.1:3128',
                                  proxy_headers=dict(proxy_basic_auth='bob:s3cret', basic_auth='a:b',
                                                     user_agent='kueueops-test/1'))).configuration
    assert cfg.proxy_headers == {'proxy-authorization': 'Basic Ym9iOnMzY3JldA==', 'authorization': 'Basic YTpi',
                                 'user-agent': 'kueueops-test/1'}


def test_proxy_basic_auth_in_the_url_for_go_clients(split):
    options = resolve_kube_options(params(kubeconfig=split[0], proxy='http://127.0.0.1:3128',
                                          proxy_headers=dict(proxy_basic_auth='bob:p@ss:w/rd')))
    assert proxy_url_with_auth(options, 'https://127.0.0.1:6443') == 'http://bob:p%40ss%3Aw%2Frd@127.0.0.1:3128'


@pytest.mark.parametrize('kw,field,words', [
    (dict(proxy='127.0.0.1:3128'), 'proxy', 'not a proxy URL'),
    (dict(proxy='ftp://127.0.0.1:21'), 'proxy', 'schemes: http, https'),
    (dict(proxy='http://127.0.0.1:99999'), 'proxy', 'not a proxy URL'),
    (dict(proxy='http://127.0.0.1:3128', no_proxy="['localhost', '10.0.0.0/8']"), 'no_proxy',
     'one comma-separated string'),
    (dict(proxy='http://127.0.0.1:3128', no_proxy='localhost;10.0.0.0/8'), 'no_proxy', 'not a host'),
    (dict(proxy_headers=dict(user_agent='x')), 'proxy_headers', 'without a proxy'),
])
def test_proxy_options_refused_with_the_fix(kw, field, words):
    with pytest.raises(KueueOpsError) as err:
        resolve_kube_options(params(host='https://127.0.0.1:6443', **kw))
    assert err.value.field == field and words in err.value.message() and 'Fix:' in err.value.message()


# ---- helm from the same translation ----------------------------------------------------------

def overlay_of(env):
    first = env['KUBECONFIG'].split(os.pathsep)[0]
    assert stat.S_IMODE(os.stat(first).st_mode) == 0o600
    with open(first) as handle:
        return json.load(handle)


def test_helm_gets_the_paths_and_the_context_of_the_python_client(split):
    env = hr.helm_kube_env(resolve_kube_options(params(kubeconfig=os.pathsep.join(split))))
    assert env == {'KUBECONFIG': os.pathsep.join(split), 'HELM_KUBECONTEXT': 'work'}


def test_helm_gets_the_proxy_as_the_clusters_proxy_url(split, tmp_path):
    options = resolve_kube_options(params(kubeconfig=os.pathsep.join(split), proxy='http://127.0.0.1:3128',
                                          proxy_headers=dict(proxy_basic_auth='bob:s3cret')))
    env = hr.helm_kube_env(options, server='https://127.0.0.1:6443', private_dir=str(tmp_path))
    assert env['KUBECONFIG'].split(os.pathsep)[1:] == list(split) and env['HELM_KUBECONTEXT'] == 'work'
    overlay = overlay_of(env)
    # The whole cluster entry (kubectl takes an entry from the first file naming it), CA made absolute.
    assert overlay['clusters'] == [{'name': 'aks', 'cluster': {
        'server': 'https://127.0.0.1:6443', 'certificate-authority': str(tmp_path / 'clusters' / 'ca.pem'),
        'proxy-url': 'http://bob:s3cret@127.0.0.1:3128'}}]
    assert overlay['users'] == []
    # no_proxy exempting the server: the same decision as the Python client's, and no proxy-url at all.
    options = resolve_kube_options(params(kubeconfig=os.pathsep.join(split), proxy='http://127.0.0.1:3128',
                                          no_proxy='127.0.0.0/8'))
    env = hr.helm_kube_env(options, server='https://127.0.0.1:6443', private_dir=str(tmp_path))
    assert 'proxy-url' not in overlay_of(env)['clusters'][0]['cluster']


def test_helm_gets_the_proxy_and_client_certificate_with_host_only(tmp_path):
    for name in ('c.pem', 'k.pem'):
        (tmp_path / name).write_text('x')
    options = resolve_kube_options(params(host='https://127.0.0.1:6443', proxy='http://127.0.0.1:3128',
                                          client_cert=str(tmp_path / 'c.pem'), client_key=str(tmp_path / 'k.pem')))
    env = hr.helm_kube_env(options, server='https://127.0.0.1:6443', private_dir=str(tmp_path))
    assert env['HELM_KUBECONTEXT'] == 'kueueops' and env['HELM_KUBEAPISERVER'] == 'https://127.0.0.1:6443'
    overlay = overlay_of(env)
    assert overlay['clusters'] == [{'name': 'kueueops', 'cluster': {'server': 'https://127.0.0.1:6443',
                                                                    'proxy-url': 'http://127.0.0.1:3128'}}]
    assert overlay['users'] == [{'name': 'kueueops', 'user': {'client-certificate': str(tmp_path / 'c.pem'),
                                                              'client-key': str(tmp_path / 'k.pem')}}]
    assert overlay['contexts'] == [{'name': 'kueueops', 'context': {'cluster': 'kueueops', 'user': 'kueueops'}}]


def test_helm_gets_the_client_certificate_for_the_contexts_user(split, tmp_path):
    (tmp_path / 'c.pem').write_text('x')
    options = resolve_kube_options(params(kubeconfig=os.pathsep.join(split), client_cert=str(tmp_path / 'c.pem')))
    env = hr.helm_kube_env(options, private_dir=str(tmp_path))
    assert overlay_of(env) == {'apiVersion': 'v1', 'kind': 'Config', 'clusters': [], 'users': [
        {'name': 'me', 'user': {'token': 'tok-first', 'client-certificate': str(tmp_path / 'c.pem')}}]}


@pytest.mark.parametrize('headers', [dict(user_agent='ua/1'), dict(basic_auth='a:b')])
def test_helm_refuses_proxy_headers_it_cannot_send(split, tmp_path, headers):
    options = resolve_kube_options(params(kubeconfig=split[0], proxy='http://127.0.0.1:3128', proxy_headers=headers))
    with pytest.raises(KueueOpsError) as err:
        hr.helm_kube_env(options, server='https://127.0.0.1:6443', private_dir=str(tmp_path))
    assert err.value.field == 'proxy_headers' and list(headers)[0] in err.value.message()


def test_helm_refuses_a_proxy_in_cluster(monkeypatch, tmp_path):
    monkeypatch.setenv('KUBERNETES_SERVICE_HOST', '10.0.0.1')
    options = resolve_kube_options(params(proxy='http://127.0.0.1:3128'))
    assert options['in_cluster']
    with pytest.raises(KueueOpsError) as err:
        hr.helm_kube_env(options, private_dir=str(tmp_path))
    assert err.value.field == 'proxy'


def test_helm_gets_a_dict_kubeconfig_as_a_private_file(tmp_path):
    config = yaml.safe_load(open(write(tmp_path / 'one.yml', {
        'apiVersion': 'v1', 'kind': 'Config', 'current-context': 'c',
        'clusters': [{'name': 'k', 'cluster': {'server': 'https://127.0.0.1:6443'}}],
        'users': [{'name': 'u', 'user': {'token': 'tok-dict'}}],
        'contexts': [{'name': 'c', 'context': {'cluster': 'k', 'user': 'u'}}]})))
    env = hr.helm_kube_env(resolve_kube_options(params(kubeconfig=config)), private_dir=str(tmp_path))
    assert env == {'KUBECONFIG': str(tmp_path / 'kubeconfig')}
    assert overlay_of(env) == config
    # With a proxy: the overlay first, then the same file; the context is the dict's current-context.
    env = hr.helm_kube_env(resolve_kube_options(params(kubeconfig=config, proxy='http://127.0.0.1:3128')),
                           server='https://127.0.0.1:6443', private_dir=str(tmp_path))
    assert env['KUBECONFIG'].split(os.pathsep)[1] == str(tmp_path / 'kubeconfig')
    assert overlay_of(env)['clusters'][0]['cluster']['proxy-url'] == 'http://127.0.0.1:3128'
