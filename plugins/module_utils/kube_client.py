# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Kubernetes API client and authentication shared by the kueueops.aks modules.

Option names and K8S_AUTH_* environment fallbacks follow kubernetes.core.
"""

import atexit
import copy
import json
import os
import re
import shutil
import tempfile
import traceback

from ansible.module_utils.basic import env_fallback, missing_required_lib

from ansible_collections.kueueops.aks.plugins.module_utils.errors import (
    KueueOpsError,
    api_exception_message,
)

try:
    from kubernetes import client as k8s_client
    from kubernetes import config as k8s_config
    from kubernetes.client.exceptions import ApiException
    from kubernetes.config.config_exception import ConfigException
    import yaml
    from urllib3._collections import HTTPHeaderDict
    from urllib3.exceptions import HTTPError as Urllib3HTTPError
except ImportError:
    HAS_KUBERNETES = False
    KUBERNETES_IMPORT_ERROR = traceback.format_exc()
else:
    HAS_KUBERNETES = True
    KUBERNETES_IMPORT_ERROR = None


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
    impersonate_user=dict(type='str', fallback=(env_fallback, ['K8S_AUTH_IMPERSONATE_USER'])),
    impersonate_groups=dict(type='list', elements='str', fallback=(env_fallback, ['K8S_AUTH_IMPERSONATE_GROUPS'])),
)

REDACTED = 'VALUE_REDACTED_BY_KUEUEOPS'

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


def require_kubernetes(module):
    """Fail the module with installation advice when the kubernetes library is missing."""
    if not HAS_KUBERNETES:
        module.fail_json(
            msg=missing_required_lib(
                'kubernetes',
                reason='to talk to the Kubernetes API; run `pip install kubernetes` '
                       '(or `pip install -r requirements.txt` from the kueueops.aks collection) '
                       'in the Python that runs the module',
            ),
            exception=KUBERNETES_IMPORT_ERROR,
        )


_PRIVATE_DIR = []


def _private_temp_dir():
    """A 0700 directory for certificate data of a dict kubeconfig, removed at exit."""
    if not _PRIVATE_DIR:
        path = tempfile.mkdtemp(prefix='kueueops-kubeconfig-')
        os.chmod(path, 0o700)
        atexit.register(shutil.rmtree, path, True)
        _PRIVATE_DIR.append(path)
    return _PRIVATE_DIR[0]


def _load_kubeconfig(params, configuration):
    kubeconfig = params.get('kubeconfig')
    context = params.get('context')
    if isinstance(kubeconfig, dict):
        option = 'kubeconfig'
        loader = k8s_config.load_kube_config_from_dict
        kwargs = dict(config_dict=kubeconfig, context=context, client_configuration=configuration,
                      persist_config=False, temp_file_path=_private_temp_dir())
    elif kubeconfig is not None:
        if not isinstance(kubeconfig, str):
            raise KueueOpsError('must be a path or a dictionary, got %s' % type(kubeconfig).__name__,
                                field='kubeconfig', fix='pass the path of a kubeconfig file or its parsed content')
        path = os.path.expanduser(kubeconfig)
        if not os.path.isfile(path):
            raise KueueOpsError('file %s does not exist' % path, field='kubeconfig',
                                fix='give the path of an existing kubeconfig, or unset K8S_AUTH_KUBECONFIG')
        option = 'kubeconfig'
        loader = k8s_config.load_kube_config
        kwargs = dict(config_file=path, context=context, client_configuration=configuration,
                      persist_config=False, temp_file_path=_private_temp_dir())
    else:
        default = os.path.expanduser(os.environ.get('KUBECONFIG', '~/.kube/config').split(os.pathsep)[0])
        if os.path.isfile(default):
            option = 'kubeconfig'
            loader = k8s_config.load_kube_config
            kwargs = dict(config_file=default, context=context, client_configuration=configuration,
                          persist_config=False, temp_file_path=_private_temp_dir())
        elif params.get('host'):
            return
        elif os.environ.get('KUBERNETES_SERVICE_HOST'):
            try:
                k8s_config.load_incluster_config(client_configuration=configuration)
            except ConfigException as exc:
                raise KueueOpsError('in-cluster configuration failed: %s' % exc, field='kubeconfig',
                                    fix='set kubeconfig or host')
            return
        else:
            raise KueueOpsError('no Kubernetes connection configured (no kubeconfig at %s, no host)' % default,
                                field='kubeconfig',
                                fix='set kubeconfig (or K8S_AUTH_KUBECONFIG / KUBECONFIG), or host and api_key')

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
        configuration.proxy = params['proxy']


def build_api_client(params):
    """Return a ``kubernetes.client.ApiClient`` for the KUBE_AUTH_ARGSPEC ``params``.

    Loads the kubeconfig (path, dict, default file or in-cluster), then applies
    explicit options over it. Raises ``KueueOpsError`` naming the option at fault.
    """
    configuration = k8s_client.Configuration()
    _load_kubeconfig(params, configuration)
    for option in ('ca_cert', 'client_cert', 'client_key'):
        _check_file(params, option)
    _apply_overrides(params, configuration)

    # A kubeconfig token installs a hook that re-applies the kubeconfig's
    # settings before each request (to refresh expiring tokens); explicit
    # options must still win afterwards.
    hook = getattr(configuration, 'refresh_api_key_hook', None)
    if hook is not None:
        def refresh(config):
            hook(config)
            _apply_overrides(params, config)

        configuration.refresh_api_key_hook = refresh

    if not configuration.host or configuration.host == 'http://localhost':
        raise KueueOpsError('no API server URL', field='host',
                            fix='set host, or a kubeconfig whose context names a cluster server')

    api_client = k8s_client.ApiClient(configuration=configuration)
    _add_impersonation(api_client, params.get('impersonate_user'), params.get('impersonate_groups'))
    return api_client


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
        # Raw JSON: typed models of some client versions reject servers that omit fields.
        response = k8s_client.VersionApi(api_client).get_code(_request_timeout=(10, 30), _preload_content=False)
        return json.loads(response.data).get('gitVersion')
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
