# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Kubernetes API client and authentication shared by the kueueops.aks modules.

Option names and K8S_AUTH_* environment fallbacks follow kubernetes.core.
"""

import atexit
import copy
import ipaddress
import os
import re
import shutil
import tempfile
import traceback
from urllib.parse import quote, urlsplit

from ansible.module_utils.basic import missing_required_lib
from ansible.module_utils.common.parameters import env_fallback

from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import (
    REDACTED,
    KueueOpsError,
    api_exception_message,
)

from ansible_collections.kueueops.aks.plugins.module_utils.kube.kueue_cluster import Cluster
from ansible_collections.kueueops.aks.plugins.module_utils.kube.kube_import import (
    ApiException,
    ConfigException,
    HAS_KUBERNETES as _HAS_CLIENT,
    KUBERNETES_IMPORT_ERROR as _CLIENT_IMPORT_ERROR,
    k8s as k8s_client,
    k8s_config,
)

try:
    import yaml
    from urllib3 import util as urllib3_util
    from urllib3._collections import HTTPHeaderDict
    from urllib3.exceptions import HTTPError as Urllib3HTTPError
except ImportError:
    HAS_KUBERNETES = False
    KUBERNETES_IMPORT_ERROR = traceback.format_exc()
else:
    HAS_KUBERNETES = _HAS_CLIENT
    KUBERNETES_IMPORT_ERROR = _CLIENT_IMPORT_ERROR


KUBE_AUTH_ARGSPEC = dict(
    kubeconfig=dict(type='raw', fallback=(env_fallback, ['K8S_AUTH_KUBECONFIG'])),
    context=dict(type='str', fallback=(env_fallback, ['K8S_AUTH_CONTEXT'])),
    host=dict(type='str', fallback=(env_fallback, ['K8S_AUTH_HOST'])),
    api_key=dict(type='str', no_log=True, fallback=(env_fallback, ['K8S_AUTH_API_KEY'])),
    ca_cert=dict(type='path', aliases=['ssl_ca_cert'], fallback=(env_fallback, ['K8S_AUTH_SSL_CA_CERT'])),
    client_cert=dict(type='path', aliases=['cert_file'], fallback=(env_fallback, ['K8S_AUTH_CERT_FILE'])),
    client_key=dict(type='path', aliases=['key_file'], no_log=False, fallback=(env_fallback, ['K8S_AUTH_KEY_FILE'])),
    validate_certs=dict(type='bool', aliases=['verify_ssl'], fallback=(env_fallback, ['K8S_AUTH_VERIFY_SSL'])),
    proxy=dict(type='str', fallback=(env_fallback, ['K8S_AUTH_PROXY'])),
    no_proxy=dict(type='str', fallback=(env_fallback, ['K8S_AUTH_NO_PROXY'])),
    # apply_defaults: the K8S_AUTH_PROXY_HEADERS_* fallbacks apply without a proxy_headers option, as in
    # kubernetes.core; unset keys stay None.
    proxy_headers=dict(type='dict', apply_defaults=True, options=dict(
        proxy_basic_auth=dict(type='str', no_log=True,
                              fallback=(env_fallback, ['K8S_AUTH_PROXY_HEADERS_PROXY_BASIC_AUTH'])),
        basic_auth=dict(type='str', no_log=True, fallback=(env_fallback, ['K8S_AUTH_PROXY_HEADERS_BASIC_AUTH'])),
        user_agent=dict(type='str', fallback=(env_fallback, ['K8S_AUTH_PROXY_HEADERS_USER_AGENT'])),
    )),
    impersonate_user=dict(type='str', fallback=(env_fallback, ['K8S_AUTH_IMPERSONATE_USER'])),
    impersonate_groups=dict(type='list', elements='str', fallback=(env_fallback, ['K8S_AUTH_IMPERSONATE_GROUPS'])),
)


# users[].user keys that hold a secret (paths such as tokenFile are not secrets).
_USER_SECRET_KEYS = frozenset(['token', 'client-key-data', 'password'])
# auth-provider config keys and exec argument flags that carry secrets.
_SECRET_NAME_RE = re.compile(r'(token|secret|password|passwd|key)', re.IGNORECASE)


def _redact_exec(exec_cfg, found):
    env = exec_cfg.get('env')
    if isinstance(env, list):
        for item in env:
            if isinstance(item, dict) and item.get('value') not in (None, ''):
                found.append(str(item['value']))
                item['value'] = REDACTED
    args = exec_cfg.get('args')
    if isinstance(args, list):
        redact_next = False
        for idx, arg in enumerate(args):
            text = str(arg)
            if redact_next:
                found.append(text)
                args[idx] = REDACTED
                redact_next = False
            elif text.startswith('-') and _SECRET_NAME_RE.search(text.split('=', 1)[0]):
                if '=' in text:
                    flag, value = text.split('=', 1)
                    if value:
                        found.append(value)
                    args[idx] = '%s=%s' % (flag, REDACTED)
                else:
                    redact_next = True


def _redact_in_place(config, found):
    users = config.get('users') if isinstance(config, dict) else None
    if not isinstance(users, list):
        return
    for entry in users:
        user = entry.get('user') if isinstance(entry, dict) else None
        if not isinstance(user, dict):
            continue
        for key in _USER_SECRET_KEYS:
            if user.get(key) not in (None, ''):
                found.append(str(user[key]))
                user[key] = REDACTED
        provider = user.get('auth-provider')
        if isinstance(provider, dict) and isinstance(provider.get('config'), dict):
            for key, value in provider['config'].items():
                if _SECRET_NAME_RE.search(key) and value not in (None, ''):
                    found.append(str(value))
                    provider['config'][key] = REDACTED
        if isinstance(user.get('exec'), dict):
            _redact_exec(user['exec'], found)


def redact_kubeconfig(config):
    """Return a deep copy of a kubeconfig dict with every secret replaced by ``REDACTED``.

    Redacts users[].user token, client-key-data and password, auth-provider
    config entries named like a token/secret/password/key, exec env values and
    the values of exec arguments such as ``--token``/``--client-secret``.
    Certificates and CA data are public and kept.
    """
    redacted = copy.deepcopy(config)
    _redact_in_place(redacted, [])
    return redacted


def kubeconfig_secret_values(config):
    """The secret strings held in a kubeconfig dict (what ``redact_kubeconfig`` removes)."""
    found = []
    _redact_in_place(copy.deepcopy(config), found)
    return set(value for value in found if value)


def register_kubeconfig_secrets(module):
    """Mask the secrets of a dict ``kubeconfig`` everywhere in the module's output.

    Ansible masks ``no_log_values`` in results, warnings and the returned
    ``invocation``; a dict kubeconfig cannot be ``no_log`` as a whole without
    also masking harmless words such as ``v1`` everywhere.
    """
    kubeconfig = module.params.get('kubeconfig')
    if isinstance(kubeconfig, dict):
        module.no_log_values.update(kubeconfig_secret_values(kubeconfig))


def missing_library(library, reason):
    """``fail_json``'s arguments for a missing Python library (Ansible's missing_required_lib text), for the
    module_utils code that runs without the AnsibleModule: it raises ``errors.ModuleFailure(**them)``."""
    return dict(msg=missing_required_lib(library, reason=reason))


def kubernetes_missing():
    """``fail_json``'s arguments when the kubernetes library is missing (the import error as ``exception``),
    else None."""
    if HAS_KUBERNETES:
        return None
    return dict(missing_library('kubernetes', reason='to talk to the Kubernetes API; run `pip install kubernetes` '
                                                     '(or `pip install -r requirements.txt` from the kueueops.aks '
                                                     'collection) in the Python that runs the module'),
                exception=KUBERNETES_IMPORT_ERROR)


def require_kubernetes(module):
    """Fail the module with installation advice when the kubernetes library is missing."""
    missing = kubernetes_missing()
    if missing:
        module.fail_json(**missing)


_PRIVATE_DIR = []


def _private_temp_dir():
    """A 0700 directory for certificate data of a dict kubeconfig, removed at exit."""
    if not _PRIVATE_DIR:
        path = tempfile.mkdtemp(prefix='kueueops-kubeconfig-')
        os.chmod(path, 0o700)
        atexit.register(shutil.rmtree, path, True)
        _PRIVATE_DIR.append(path)
    return _PRIVATE_DIR[0]


def _split_paths(value):
    return [os.path.expanduser(part) for part in value.split(os.pathsep) if part]


def _kubeconfig_source(params):
    """What the kubeconfig comes from: a dict, a list of paths, or None.

    A path option may hold several paths joined by os.pathsep (':'), as KUBECONFIG does; each one must
    exist. Without the option, KUBECONFIG's paths are read the way kubectl reads them: missing ones are
    skipped (~/.kube/config when KUBECONFIG is unset)."""
    kubeconfig = params.get('kubeconfig')
    if isinstance(kubeconfig, dict):
        return kubeconfig
    if kubeconfig not in (None, ''):  # '' (an empty K8S_AUTH_KUBECONFIG) is unset, as in kubernetes.core
        if not isinstance(kubeconfig, str):
            raise KueueOpsError('must be a path or a dictionary, got %s' % type(kubeconfig).__name__,
                                field='kubeconfig', fix='pass the path of a kubeconfig file (several joined by '
                                                        '%r) or its parsed content' % os.pathsep)
        paths = _split_paths(kubeconfig)
        missing = [path for path in paths if not os.path.isfile(path)]
        if missing or not paths:
            several = ' (of %s)' % kubeconfig if len(paths) > 1 else ''
            raise KueueOpsError('file %s does not exist%s' % (', '.join(missing) or repr(kubeconfig), several),
                                field='kubeconfig',
                                fix='give the path of an existing kubeconfig (several joined by %r), or unset '
                                    'K8S_AUTH_KUBECONFIG' % os.pathsep)
        return paths
    paths = [path for path in _split_paths(os.environ.get('KUBECONFIG') or '~/.kube/config') if os.path.isfile(path)]
    return paths or None


def read_kubeconfig_file(path):
    try:
        with open(path) as handle:
            data = yaml.safe_load(handle)
    except (OSError, yaml.YAMLError) as exc:
        raise KueueOpsError('cannot load the kubeconfig %s: %s: %s' % (path, type(exc).__name__, exc),
                            field='kubeconfig',
                            fix='check that the kubeconfig is valid YAML with clusters, users and contexts')
    return data if isinstance(data, dict) else {}


def first_current_context(paths):
    """The current-context of several kubeconfig files merged as kubectl merges them: the first file that
    sets one wins (the kubernetes Python client's merger lets the last one win; the collection passes this
    context explicitly, so the Python client and helm use the same)."""
    for path in paths:
        name = read_kubeconfig_file(path).get('current-context')
        if name:
            return name
    return None


def resolve_kube_options(params):
    """The one translation of the Kubernetes options (KUBE_AUTH_ARGSPEC ``params``) for every client: the
    Python client (``build_api_client``) and helm (``helm_runner.helm_kube_env``) both start from it.

    Returns a dict: ``kubeconfig`` (a dict, a list of existing paths, or None), ``context`` (the option, else
    the current-context the first kubeconfig file sets, as kubectl), ``in_cluster`` (no kubeconfig and no
    host, inside a pod), the other options as given, ``proxy`` and ``no_proxy`` checked, and
    ``proxy_headers`` without its unset keys. Raises ``KueueOpsError`` naming the option at fault."""
    options = dict((key, params.get(key)) for key in KUBE_AUTH_ARGSPEC)
    source = _kubeconfig_source(params)
    options['kubeconfig'] = source
    options['in_cluster'] = False
    if isinstance(source, list) and not options.get('context') and len(source) > 1:
        options['context'] = first_current_context(source)
    if source is None and not params.get('host'):
        if os.environ.get('KUBERNETES_SERVICE_HOST'):
            options['in_cluster'] = True
        else:
            default = os.environ.get('KUBECONFIG') or '~/.kube/config'
            raise KueueOpsError('no Kubernetes connection configured (no kubeconfig at %s, no host)'
                                % os.path.expanduser(default), field='kubeconfig',
                                fix='set kubeconfig (or K8S_AUTH_KUBECONFIG / KUBECONFIG), or host and api_key')
    options['proxy'] = _check_proxy(params.get('proxy'))
    options['no_proxy'] = _check_no_proxy(params.get('no_proxy'))
    headers = dict((key, value) for key, value in (params.get('proxy_headers') or {}).items() if value is not None)
    if headers and not options['proxy']:
        raise KueueOpsError('proxy_headers (%s) are set without a proxy' % ', '.join(sorted(headers)),
                            field='proxy_headers', fix='set proxy (or K8S_AUTH_PROXY), or drop proxy_headers')
    options['proxy_headers'] = headers
    return options


_PROXY_SCHEMES = ('http', 'https', 'socks5', 'socks5h')


def context_name(params):
    """The name of the kubeconfig context the options use (the ``context`` option, else the kubeconfig's
    current-context), or None (``host``/``api_key``, in-cluster, or a kubeconfig that names none). A readable name
    of the cluster (cluster_identity), never used to decide anything."""
    try:
        options = resolve_kube_options(params)
    except KueueOpsError:
        return None
    if options.get('context'):
        return options['context']
    source = options.get('kubeconfig')
    if isinstance(source, dict):
        return source.get('current-context') or None
    if isinstance(source, list):
        try:
            return first_current_context(source)
        except KueueOpsError:
            return None
    return None


def _check_proxy(proxy):
    if not proxy:
        return None
    try:
        parts = urlsplit(proxy)
        parts.port  # pylint: disable=pointless-statement  # raises ValueError for a bad port
    except ValueError as exc:
        parts, error = None, str(exc)
    else:
        error = None
    if parts is None or parts.scheme not in _PROXY_SCHEMES or not parts.hostname:
        raise KueueOpsError('%r is not a proxy URL%s' % (proxy, ' (%s)' % error if error else ''), field='proxy',
                            fix='give a URL such as http://proxy.example.com:3128 (schemes: %s)'
                                % ', '.join(_PROXY_SCHEMES))
    return proxy


_NO_PROXY_ENTRY_RE = re.compile(r'^(\*|\.?[a-z0-9]([-a-z0-9_.]*[a-z0-9])?(:[0-9]{1,5})?|[0-9a-f:.]+(/[0-9]{1,3})?'
                                r'|\[[0-9a-f:.]+\](:[0-9]{1,5})?)$', re.IGNORECASE)


def _check_no_proxy(no_proxy):
    if not no_proxy:
        return None
    if not isinstance(no_proxy, str):
        no_proxy = str(no_proxy)
    bad = [entry for entry in (e.strip() for e in no_proxy.split(',')) if entry and not _NO_PROXY_ENTRY_RE.match(entry)]
    if bad:
        raise KueueOpsError('%s: not a host, domain, IP address or CIDR range' % ', '.join(repr(b) for b in bad),
                            field='no_proxy', fix='give one comma-separated string, for example '
                                                  '"localhost,.example.com,10.0.0.0/8"')
    return no_proxy


def bypasses_proxy(server, no_proxy):
    """Whether the API server URL ``server`` matches a ``no_proxy`` entry (the rules of the kubernetes Python
    client and curl: ``*``, a host or domain suffix with or without a leading dot, host:port, an IP address
    or a CIDR range). Decided once here for the Python client and for helm."""
    parts = urlsplit(server or '')
    if not parts.hostname or not no_proxy:
        return not parts.hostname
    host = parts.hostname.lower()
    host_and_port = parts.netloc.lower().rsplit('@', 1)[-1]
    try:
        host_ip = ipaddress.ip_address(host)
    except ValueError:
        host_ip = None
    for entry in (e.strip().lower() for e in no_proxy.split(',')):
        if not entry:
            continue
        if entry == '*':
            return True
        if host_ip is not None:
            try:
                if host_ip in ipaddress.ip_network(entry.strip('[]'), strict=False):
                    return True
            except ValueError:
                pass
        entry = entry.lstrip('.')
        if host in (entry, entry.strip('[]')) or host.endswith('.' + entry) or host_and_port == entry \
                or host_and_port.endswith('.' + entry):
            return True
    return False


def effective_proxy(options, server):
    """The proxy to reach ``server`` with under the resolved ``options`` (None: connect directly)."""
    if not options.get('proxy') or bypasses_proxy(server, options.get('no_proxy')):
        return None
    return options['proxy']


def proxy_url_with_auth(options, server):
    """``effective_proxy`` with proxy_headers.proxy_basic_auth as the URL's user:password (how Go, hence
    helm, sends Proxy-Authorization), or None."""
    proxy = effective_proxy(options, server)
    auth = (options.get('proxy_headers') or {}).get('proxy_basic_auth')
    if not proxy or not auth:
        return proxy
    user, _sep, password = auth.partition(':')
    parts = urlsplit(proxy)
    netloc = '%s:%s@%s' % (quote(user, safe=''), quote(password, safe=''), parts.netloc.rsplit('@', 1)[-1])
    return parts._replace(netloc=netloc).geturl()


def _load_kubeconfig(options, configuration):
    kubeconfig = options['kubeconfig']
    context = options.get('context')
    if options['in_cluster']:
        try:
            k8s_config.load_incluster_config(client_configuration=configuration)
        except ConfigException as exc:
            raise KueueOpsError('in-cluster configuration failed: %s' % exc, field='kubeconfig',
                                fix='set kubeconfig or host')
        return
    if kubeconfig is None:
        return
    option = 'kubeconfig'
    if isinstance(kubeconfig, dict):
        loader = k8s_config.load_kube_config_from_dict
        kwargs = dict(config_dict=kubeconfig, context=context, client_configuration=configuration,
                      persist_config=False, temp_file_path=_private_temp_dir())
    else:
        # KubeConfigMerger reads every path of the list (clusters, users and contexts: the first of a name wins).
        loader = k8s_config.load_kube_config
        kwargs = dict(config_file=os.pathsep.join(kubeconfig), context=context, client_configuration=configuration,
                      persist_config=False, temp_file_path=_private_temp_dir())

    try:
        loader(**kwargs)
    except ConfigException as exc:
        text = str(exc)
        if context and 'context' in text.lower():
            raise KueueOpsError('context %s was not found in the kubeconfig (%s)' % (context, text), field='context',
                                fix='use one of the contexts the kubeconfig defines, or omit context for its current-context')
        if not context and 'current-context' in text.lower():
            raise KueueOpsError('invalid kubeconfig: %s' % text, field=option,
                                fix='set context to one of the contexts the kubeconfig defines, or give the '
                                    'kubeconfig a current-context (kubectl config use-context <name>)')
        raise KueueOpsError('invalid kubeconfig: %s' % text, field=option,
                            fix='check the kubeconfig (clusters, users, contexts, current-context)')
    except (OSError, ValueError, TypeError, KeyError, AttributeError, yaml.YAMLError) as exc:
        # The client raises these for malformed YAML or entries of the wrong shape.
        raise KueueOpsError('cannot load the kubeconfig: %s: %s' % (type(exc).__name__, exc), field=option,
                            fix='check that the kubeconfig is valid YAML with clusters, users and contexts')


def _check_file(params, option):
    path = params.get(option)
    if path and not os.path.isfile(path):
        raise KueueOpsError('file %s does not exist' % path, field=option, fix='give the path of an existing PEM file')


def _add_impersonation(api_client, user, groups):
    if groups and not user:
        raise KueueOpsError('impersonating groups requires a user', field='impersonate_groups',
                            fix='also set impersonate_user')
    if user:
        api_client.set_default_header('Impersonate-User', user)
    if groups:
        # One Impersonate-Group header per group: the API server does not split
        # a comma-separated value, and ApiClient's default headers hold one value.
        rest = api_client.rest_client
        original = rest.request
        group_list = list(groups)
        api_client.kueueops_impersonate_groups = group_list  # kueue_cluster's watch sends them too

        def request(*args, **kwargs):
            headers = HTTPHeaderDict(kwargs.get('headers') or {})
            for group in group_list:
                headers.add('Impersonate-Group', group)
            kwargs['headers'] = headers
            return original(*args, **kwargs)

        rest.request = request


def _apply_overrides(params, configuration):
    """Apply explicit options over what the kubeconfig set."""
    if params.get('host'):
        configuration.host = params['host'].rstrip('/')
    if params.get('api_key'):
        # 'authorization' is the key older clients read and newer ones accept as an alias.
        configuration.api_key = {'authorization': 'Bearer %s' % params['api_key']}
        configuration.api_key_prefix = {}
    for option, attribute in (('ca_cert', 'ssl_ca_cert'), ('client_cert', 'cert_file'), ('client_key', 'key_file')):
        if params.get(option):
            setattr(configuration, attribute, params[option])
    if params.get('validate_certs') is not None:
        configuration.verify_ssl = params['validate_certs']
    if params.get('proxy'):
        # No proxy when no_proxy matches the server: the same decision helm gets (effective_proxy).
        configuration.proxy = effective_proxy(params, configuration.host)
        configuration.no_proxy = None  # decided above; the client must not re-decide from NO_PROXY
        if params.get('proxy_headers') and configuration.proxy:
            configuration.proxy_headers = urllib3_util.make_headers(**params['proxy_headers'])


def build_api_client(params):
    """Return a ``kubernetes.client.ApiClient`` for the KUBE_AUTH_ARGSPEC ``params``.

    Loads the kubeconfig (path, dict, default file or in-cluster), then applies
    explicit options over it. Raises ``KueueOpsError`` naming the option at fault.
    """
    options = resolve_kube_options(params)
    configuration = k8s_client.Configuration()
    _load_kubeconfig(options, configuration)
    for option in ('ca_cert', 'client_cert', 'client_key'):
        _check_file(options, option)
    _apply_overrides(options, configuration)

    # A kubeconfig token installs a hook that re-applies the kubeconfig's
    # settings before each request (to refresh expiring tokens); explicit
    # options must still win afterwards.
    hook = getattr(configuration, 'refresh_api_key_hook', None)
    if hook is not None:
        def refresh(config):
            hook(config)
            _apply_overrides(options, config)

        configuration.refresh_api_key_hook = refresh

    if not configuration.host or configuration.host == 'http://localhost':
        raise KueueOpsError('no API server URL', field='host',
                            fix='set host, or a kubeconfig whose context names a cluster server')

    api_client = k8s_client.ApiClient(configuration=configuration)
    _add_impersonation(api_client, options.get('impersonate_user'), options.get('impersonate_groups'))
    return api_client


def api_client_from_kubeconfig_text(text, what, no_log_values):
    """A kubernetes ApiClient for a kubeconfig held as text (a MultiKueueCluster's Secret, for instance), through
    ``build_api_client`` like the module's own. ``what`` names where the text comes from in errors; the text and
    every secret it holds join ``no_log_values`` (a set) before anything else is done with them."""
    no_log_values.add(text)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise KueueOpsError('%s is not a YAML kubeconfig (%s)' % (what, type(exc).__name__))
    if not isinstance(data, dict):
        raise KueueOpsError('%s is not a kubeconfig (not a mapping)' % what)
    no_log_values.update(kubeconfig_secret_values(data))
    return build_api_client({'kubeconfig': data})


def describe_kube_error(exc, host=None):
    """Turn an exception from a Kubernetes call into a ``KueueOpsError``."""
    if isinstance(exc, KueueOpsError):
        return exc
    if isinstance(exc, ApiException):
        if exc.status in (401, 403):
            field = 'api_key' if exc.status == 401 else 'impersonate_user'
            fix = ('check the credentials of the kubeconfig user or api_key' if exc.status == 401
                   else 'grant the RBAC permission to the user (or the impersonated user)')
            return KueueOpsError(api_exception_message(exc), field=field, fix=fix)
        return KueueOpsError(api_exception_message(exc))
    if isinstance(exc, Urllib3HTTPError):
        reason = getattr(exc, 'reason', None) or exc
        text = str(reason)
        if 'CERTIFICATE_VERIFY_FAILED' in text or 'SSL' in type(reason).__name__:
            return KueueOpsError('TLS verification of the API server %s failed: %s' % (host or '', text),
                                 field='ca_cert', fix='give the cluster CA in ca_cert or the kubeconfig '
                                                      '(validate_certs=false only for throwaway test clusters)')
        return KueueOpsError('cannot reach the Kubernetes API server %s: %s' % (host or '', text), field='host',
                             fix='check host / the kubeconfig context server, the network path and proxy')
    return KueueOpsError('%s: %s' % (type(exc).__name__, exc))


def check_connection(api_client):
    """Return the server's ``gitVersion``; raise ``KueueOpsError`` if it cannot be reached."""
    host = api_client.configuration.host
    try:
        # JSON, not a typed model: typed models of some client versions reject servers that omit fields. request, not
        # get: a 404 (no Kubernetes API at that URL) is an error, as it was.
        return (Cluster(api_client, timeout=(10, 30)).request('GET', '/version') or {}).get('gitVersion')
    except Exception as exc:  # pylint: disable=broad-except
        raise describe_kube_error(exc, host=host)


def get_api_client(module):
    """Module entry point: guard the import, mask secrets, build the client or fail cleanly."""
    require_kubernetes(module)
    register_kubeconfig_secrets(module)
    try:
        return build_api_client(module.params)
    except KueueOpsError as exc:
        module.fail_json(msg=exc.message())
