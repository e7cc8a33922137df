# Copyright: (c) 2026, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The worker side of MultiKueue (issue 18): what ``kueueops.aks.kueue_multikueue_worker`` does on one worker cluster.

Kueue's MultiKueue manager reaches each worker with a kubeconfig kept in a Secret on the manager, and refuses
kubeconfigs with exec plugins, ``tokenFile``, insecure TLS, CA file paths, basic auth and auth providers
(``validateKubeconfig``/``validateRestConfig``, pkg/controller/admissionchecks/multikueue/multikueuecluster.go,
v0.19.2). AKS kubeconfigs of Entra ID clusters use kubelogin (exec), so the worker gets a ServiceAccount of its own
with exactly the permissions Kueue documents (``WORKER_RULES``), a token for it and a kubeconfig made of the server,
the CA data and that token.

* ``present``: the ServiceAccount, ClusterRole and ClusterRoleBinding by server-side apply (a re-run reads them and
  writes nothing when ``managed_fields`` says the apply would change nothing); the token, reused or issued
  (``reissue_reason``); the holder Secrets of earlier tokens deleted with ``revoke_previous``; the kubeconfig
  (``build_kubeconfig``).
* ``absent``: the holder Secrets (revoking their tokens), the ClusterRoleBinding, the ClusterRole and the
  ServiceAccount, each only if it carries this module's label, waited for until gone.

A token lives in a holder Secret, ``<service_account>-token-<5 characters>`` labelled ``TOKEN_LABEL``: for
``token_type=request`` an Opaque Secret holding a TokenRequest's token bound to that Secret (deleting the Secret
revokes the token), for ``token_type=secret`` a legacy ``kubernetes.io/service-account-token`` Secret that
kube-controller-manager fills. Every text this module builds but the kubeconfig is scrubbed of the tokens it saw
(``errors.scrub``); in check mode the kubeconfig holds ``errors.REDACTED`` in place of the token.

Everything but ``MultiKueueWorker`` is pure (no client): ``tests/unit/plugins/module_utils/test_multikueue_worker.py``;
the class is tested on the local control plane by ``tests/integration/test_kueue_multikueue_worker.py``.
"""

import base64
import binascii
import datetime
import re
from urllib.parse import urlsplit

from ansible_collections.kueueops.aks.plugins.module_utils.common.yaml_docs import yaml

from ansible_collections.kueueops.aks.plugins.module_utils.kueue import managed_fields
from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import REDACTED, KueueOpsError, scrub
from ansible_collections.kueueops.aks.plugins.module_utils.kube.kube_client import describe_kube_error
from ansible_collections.kueueops.aks.plugins.module_utils.kube.kube_import import ApiException
from ansible_collections.kueueops.aks.plugins.module_utils.kube.kueue_cluster import MANAGER_DEPLOYMENT, Cluster, path
from ansible_collections.kueueops.aks.plugins.module_utils.kueue.kueue_api import GROUP
from ansible_collections.kueueops.aks.plugins.module_utils.kueue.multikueue import (
    WATCHED_KINDS, host_valid, kueue_problems, missing_kind_problem, missing_kinds, watched_kinds)
from ansible_collections.kueueops.aks.plugins.module_utils.kueue.queues import FIELD_MANAGER, apply_changes
from ansible_collections.kueueops.aks.plugins.module_utils.kube.wait import Deadline, poll_until

MANAGED_BY = 'app.kubernetes.io/managed-by'
WORKER_LABEL = 'kueueops.aks/multikueue-worker'
TOKEN_LABEL = 'kueueops.aks/multikueue-token'
EXPIRES_ANNOTATION = 'kueueops.aks/token-expires'
# When this module created a holder, to the microsecond: orders two holders created within the same second
# (creationTimestamp has whole seconds) before their random names would.
ISSUED_ANNOTATION = 'kueueops.aks/token-issued'
SA_NAME_ANNOTATION = 'kubernetes.io/service-account.name'
SECRET_TYPES = {'request': 'Opaque', 'secret': 'kubernetes.io/service-account-token'}
MIN_TOKEN_TTL = 600  # seconds: the API server's minimum expirationSeconds of a TokenRequest
POLL_PERIOD = 0.5
RBAC = 'rbac.authorization.k8s.io/v1'

# Why a token was (re)issued (``token.reason``); None when the newest one is reused.
NONE_YET, ROTATE, EXPIRES_SOON, INVALID, TYPE_CHANGED = 'none yet', 'rotate', 'expires soon', 'invalid', 'type changed'

_CRUD = ['create', 'delete', 'get', 'list', 'watch']


def _rule(group, resources, verbs):
    return {'apiGroups': [group], 'resources': list(resources), 'verbs': list(verbs)}


def _job_kind(group, plural, extra=()):
    """A job kind the manager creates on the worker: full access to it, read access to its status."""
    return [_rule(group, [plural], _CRUD + list(extra)), _rule(group, [plural + '/status'], ['get'])]


# The rules of the ClusterRole of a MultiKueue worker, exactly as Kueue documents them at v0.19.2 (no wider, no
# narrower): site/static/examples/multikueue/create-multikueue-kubeconfig.sh of kubernetes-sigs/kueue, tag v0.19.2,
# in its order. tests/unit/plugins/module_utils/test_multikueue_worker.py compares them with that script.
WORKER_RULES = (
    _job_kind('batch', 'jobs')
    + [_rule('', ['pods'], _CRUD)]
    + _job_kind('apps', 'statefulsets')
    + _job_kind('leaderworkerset.x-k8s.io', 'leaderworkersets')
    + _job_kind('jobset.x-k8s.io', 'jobsets')
    + [_rule('kueue.x-k8s.io', ['workloads'], _CRUD + ['update', 'patch']),
       _rule('kueue.x-k8s.io', ['clusterqueues', 'localqueues'], ['get', 'list', 'watch']),
       _rule('kueue.x-k8s.io', ['workloads/status'], ['get', 'patch', 'update'])]
    + _job_kind('kubeflow.org', 'tfjobs')
    + _job_kind('kubeflow.org', 'paddlejobs')
    + _job_kind('kubeflow.org', 'pytorchjobs')
    + _job_kind('kubeflow.org', 'xgboostjobs')
    + _job_kind('kubeflow.org', 'mpijobs')
    + _job_kind('ray.io', 'rayjobs')
    + _job_kind('ray.io', 'rayclusters', ['update', 'patch'])
    + _job_kind('ray.io', 'rayservices')
    + _job_kind('workload.codeflare.dev', 'appwrappers')
)


def _watched_beyond_script():
    """The rules of the kinds MultiKueue watches on a worker (multikueue.WATCHED_KINDS) that Kueue's script of v0.19.2
    omits - TrainJob and JAXJob: without them the manager's watch is forbidden and the worker never becomes Active
    (ClientConnectionFailed) once the manager enables trainer.kubeflow.org/trainjob (a chart default) or
    kubeflow.org/jaxjob. Each gets what the script gives every job kind (``_job_kind``)."""
    covered = set((g, r) for rule in WORKER_RULES for g in rule['apiGroups'] for r in rule['resources'])
    out = []
    for api_version, _kind, resource in sorted(WATCHED_KINDS.values()):
        group = api_version.rsplit('/', 1)[0] if '/' in api_version else ''
        if (group, resource) not in covered:
            out += _job_kind(group, resource)
            covered.add((group, resource))
    return out


# The worker's ClusterRole: Kueue's documented rules, then those of the watched kinds its script omits.
CLUSTER_ROLE_RULES = WORKER_RULES + _watched_beyond_script()


# ------------------------------------------------------------------------------------------- input
_CLUSTER_NAME_RE = re.compile(r'^(?=.{1,253}$)[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$')
_SERVER_EXAMPLE = 'https://myaks-dns-0123abcd.hcp.westeurope.azmk8s.io:443'


def server_error(server, field='server'):
    """A ``KueueOpsError`` naming ``field`` when ``server`` is not a URL Kueue accepts for a worker (https, a host
    that is an IP address or a DNS name: Kueue's ``isValidHostname``, no user or password), else None."""
    fix = ('give the https:// URL at which the manager cluster reaches this worker\'s API server, e.g. %s'
           % _SERVER_EXAMPLE)
    try:
        parts = urlsplit(server) if isinstance(server, str) else None
        host = parts.hostname if parts else None
        parts and parts.port  # pylint: disable=expression-not-assigned  # a bad port raises ValueError
    except ValueError:
        parts, host = None, None
    if not parts or parts.scheme != 'https' or not host:
        return KueueOpsError('%r is not a valid https:// URL with a host (MultiKueue requires TLS)' % (server,),
                             field=field, fix=fix)
    if parts.username or parts.password:
        return KueueOpsError('%r holds a user or password (MultiKueue refuses basic auth)' % (server,), field=field,
                             fix=fix)
    if not host_valid(server):
        return KueueOpsError('%r: %r is neither an IP address nor a DNS name (Kueue refuses it as an untrusted '
                             'server endpoint)' % (server, host), field=field, fix=fix)
    return None


def cluster_name_error(name, field='cluster_name'):
    """A ``KueueOpsError`` when ``name`` cannot name the cluster, the user and the context of a kubeconfig."""
    if isinstance(name, str) and _CLUSTER_NAME_RE.match(name):
        return None
    return KueueOpsError('%r is not a valid cluster name' % (name,), field=field,
                         fix='use letters, digits, "-", "_" and ".", starting and ending with a letter or digit '
                             '(the MultiKueueCluster\'s name, e.g. aks-worker-1)')


def token_ttl_error(ttl, field='token_ttl'):
    if isinstance(ttl, int) and ttl >= MIN_TOKEN_TTL:
        return None
    return KueueOpsError('%r seconds is shorter than %d seconds, the shortest a TokenRequest may ask for'
                         % (ttl, MIN_TOKEN_TTL),
                         field=field, fix='give at least %d seconds (the default 2592000 is 30 days)' % MIN_TOKEN_TTL)


_PEM_MARK = '-----BEGIN CERTIFICATE-----'


def normalise_ca(value, field='ca_data'):
    """``value`` (PEM text, or base64-encoded PEM as a kubeconfig's ``certificate-authority-data``) as base64 of the
    PEM; raises a ``KueueOpsError`` naming ``field`` when it is neither."""
    text = value.decode('utf-8', 'replace') if isinstance(value, bytes) else str(value or '')
    if _PEM_MARK in text:
        pem = text.strip() + '\n'
    else:
        try:
            pem = base64.b64decode(''.join(text.split()), validate=True).decode('utf-8')
        except (binascii.Error, ValueError):
            pem = ''
        if _PEM_MARK not in pem:
            raise KueueOpsError('is neither a PEM certificate nor base64-encoded PEM', field=field,
                                fix='give the worker cluster\'s CA certificate: its PEM text, or the '
                                    'certificate-authority-data of a kubeconfig of the cluster')
    return base64.b64encode(pem.encode('utf-8')).decode('ascii')


def choose_ca(option=None, connection_pem=None, configmap_pem=None):
    """The CA data of the worker's kubeconfig and where it came from: the ``ca_data`` option, else the CA of the
    connection (its PEM), else the ``kube-root-ca.crt`` ConfigMap's ``ca.crt``; ``(None, None)`` when none has a
    certificate. A bad ``ca_data`` raises; a connection or ConfigMap without a PEM certificate is passed over."""
    if option:
        return normalise_ca(option), 'ca_data'
    for source, pem in (('connection', connection_pem), ('kube-root-ca.crt', configmap_pem)):
        if pem:
            try:
                return normalise_ca(pem), source
            except KueueOpsError:
                continue
    return None, None


# -------------------------------------------------------------------------------------- kubeconfig
def user_name(cluster_name, service_account):
    return '%s-%s' % (cluster_name, service_account)


def build_kubeconfig(cluster_name, server, ca_data, service_account, token):
    """The kubeconfig the manager uses for this worker (a dict): one cluster, one token user, one context."""
    user = user_name(cluster_name, service_account)
    return {
        'apiVersion': 'v1',
        'kind': 'Config',
        'clusters': [{'name': cluster_name, 'cluster': {'server': server, 'certificate-authority-data': ca_data}}],
        'users': [{'name': user, 'user': {'token': token}}],
        'contexts': [{'name': cluster_name, 'context': {'cluster': cluster_name, 'user': user}}],
        'current-context': cluster_name,
        'preferences': {},
    }


def kubeconfig_text(config):
    """The kubeconfig as YAML."""
    return yaml.safe_dump(config, default_flow_style=False, sort_keys=False)


# ------------------------------------------------------------------------------------------ tokens
_TIME_RE = re.compile(r'^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$')


def parse_time(text):
    """An RFC 3339 time (``2026-01-02T03:04:05Z``, fractions and offsets too) as an aware UTC datetime, or None."""
    match = _TIME_RE.match(text) if isinstance(text, str) else None
    if not match:
        return None
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    fraction, zone = match.group(7), match.group(8)
    try:
        moment = datetime.datetime(year, month, day, hour, minute, second,
                                   int(round(float(fraction) * 1e6)) if fraction else 0, datetime.timezone.utc)
    except ValueError:
        return None
    if zone not in ('Z', 'z'):
        sign = 1 if zone[0] == '+' else -1
        moment -= sign * datetime.timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6]))
    return moment


def format_time(moment, micro=False):
    """An aware datetime as RFC 3339 UTC, to the second (or the microsecond)."""
    return moment.astimezone(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%S.%fZ' if micro else '%Y-%m-%dT%H:%M:%SZ')


def utcnow():
    return datetime.datetime.now(datetime.timezone.utc)


def holder_type(secret):
    """``request`` or ``secret`` by the holder Secret's type, else None."""
    kind = (secret or {}).get('type')
    for token_type, secret_type in SECRET_TYPES.items():
        if kind == secret_type:
            return token_type
    return None


def holder_token(secret):
    """The token a holder Secret holds (decoded), or None."""
    data = ((secret or {}).get('data') or {}).get('token')
    if not data:
        return None
    try:
        return base64.b64decode(data).decode('utf-8') or None
    except (binascii.Error, ValueError):
        return None


def holder_expires(secret):
    """When the token of a holder Secret expires (its annotation), or None."""
    return parse_time(_annotations(secret).get(EXPIRES_ANNOTATION))


def _annotations(secret):
    return ((secret or {}).get('metadata') or {}).get('annotations') or {}


def newest_holder(secrets):
    """The newest holder Secret (creation timestamp, then the time this module noted, then name), or None."""
    oldest = datetime.datetime.min.replace(tzinfo=datetime.timezone.utc)

    def key(secret):
        meta = secret.get('metadata') or {}
        return (parse_time(meta.get('creationTimestamp')) or oldest,
                parse_time(_annotations(secret).get(ISSUED_ANNOTATION)) or oldest, meta.get('name') or '')
    return max(secrets, key=key) if secrets else None


def reissue_reason(holder, token_type, rotate, token_ttl, now, authenticated):
    """Why the token of ``holder`` (the newest holder Secret, or None) cannot be reused, or None to reuse it.

    Reused when all hold: it is of ``token_type``, ``rotate`` is false, (request) more than a third of its lifetime
    remains (the lifetime is ``token_ttl``, or what the API server granted when it capped the request, so that a
    capped token is not replaced on every run), and ``authenticated(token)`` (a TokenReview) is true. That last
    call is made only when everything else holds."""
    if holder is None:
        return NONE_YET
    if holder_type(holder) != token_type:
        return TYPE_CHANGED
    if rotate:
        return ROTATE
    token = holder_token(holder)
    if not token:
        return INVALID
    if token_type == 'request':
        expires = holder_expires(holder)
        if expires is None:
            return INVALID
        issued = parse_time((holder.get('metadata') or {}).get('creationTimestamp'))
        lifetime = float(token_ttl)
        if issued is not None and expires > issued:
            lifetime = min(lifetime, (expires - issued).total_seconds())
        if (expires - now).total_seconds() <= lifetime / 3.0:
            return EXPIRES_SOON
    if not authenticated(token):
        return INVALID
    return None


def service_account_user(namespace, service_account):
    return 'system:serviceaccount:%s:%s' % (namespace, service_account)


# ------------------------------------------------------------------------------------- the cluster
class MultiKueueWorker:
    """One run of kueue_multikueue_worker on one worker cluster (``params``: the module's options)."""

    def __init__(self, api_client, params, check_mode=False, now=utcnow):
        self.cluster = Cluster(api_client)
        self.api_client = api_client
        self.p = params
        self.check_mode = check_mode
        self.now = now
        self.ns = params['namespace']
        self.sa = params['service_account']
        self.tokens = set()  # every token seen (and its base64): scrubbed from every text but the kubeconfig
        self.warnings = []

    # ------------------------------------------------------------------ objects
    def labels(self):
        return {MANAGED_BY: FIELD_MANAGER, WORKER_LABEL: self.sa}

    def rbac_objects(self):
        """The ServiceAccount, ClusterRole and ClusterRoleBinding, as applied."""
        meta = {'name': self.sa, 'labels': self.labels()}
        return [
            {'apiVersion': 'v1', 'kind': 'ServiceAccount', 'metadata': dict(meta, namespace=self.ns)},
            {'apiVersion': RBAC, 'kind': 'ClusterRole', 'metadata': dict(meta), 'rules': CLUSTER_ROLE_RULES},
            {'apiVersion': RBAC, 'kind': 'ClusterRoleBinding', 'metadata': dict(meta),
             'roleRef': {'apiGroup': 'rbac.authorization.k8s.io', 'kind': 'ClusterRole', 'name': self.sa},
             'subjects': [{'kind': 'ServiceAccount', 'name': self.sa, 'namespace': self.ns}]},
        ]

    def _path(self, kind, name=None):
        if kind == 'ServiceAccount':
            return path('v1', 'serviceaccounts', self.ns, name)
        if kind == 'Secret':
            return path('v1', 'secrets', self.ns, name)
        return path(RBAC, {'ClusterRole': 'clusterroles', 'ClusterRoleBinding': 'clusterrolebindings'}[kind], None,
                    name)

    # ------------------------------------------------------------------ running
    def run(self):
        """The module's result; every error is a ``KueueOpsError`` scrubbed of the tokens seen."""
        try:
            if self.p['state'] == 'preflight':
                return dict(preflight(self.cluster, self.p['cluster_name'], self.p.get('manager') or {}, self.ns),
                            service_account=self.sa)
            return self.present() if self.p['state'] == 'present' else self.absent()
        except Exception as exc:  # pylint: disable=broad-except
            error = exc if isinstance(exc, KueueOpsError) else describe_kube_error(exc, host=self.cluster.host)
            raise KueueOpsError(scrub(error.problem, self.tokens), field=error.field,
                                fix=scrub(error.fix, self.tokens) if error.fix else None)

    def _remember(self, token):
        if token:
            self.tokens.update([token, base64.b64encode(token.encode('utf-8')).decode('ascii')])
        return token

    # ------------------------------------------------------------------ present
    def present(self):
        server = self.server()
        self.require_namespace()
        ca_data, ca_source = self.find_ca()
        applied = [obj['kind'] for obj in self.rbac_objects() if self.ensure(obj)]
        holders = self.holders()
        holder = newest_holder(holders)
        for secret in holders:
            self._remember(holder_token(secret))
        token_type = self.p['token_type']
        reason = reissue_reason(holder, token_type, self.p['rotate'], self.p['token_ttl'], self.now(),
                                self.authenticated)
        current = holder if reason is None else None
        if reason is not None and not self.check_mode:
            current = self.issue_request() if token_type == 'request' else self.issue_secret()
        current_name = (current or {}).get('metadata', {}).get('name')
        revoked = []
        if self.p['revoke_previous']:
            revoked = sorted(s['metadata']['name'] for s in holders if s['metadata']['name'] != current_name)
            if revoked and not self.check_mode:
                self.delete_and_wait([('Secret', name) for name in revoked])
        token = REDACTED if self.check_mode else holder_token(current)
        expires = holder_expires(current) if token_type == 'request' else None
        config = build_kubeconfig(self.p['cluster_name'], server, ca_data, self.sa, token)
        return dict(
            changed=bool(applied or reason or revoked),
            kubeconfig=kubeconfig_text(config),
            server=server,
            ca_source=ca_source,
            service_account=self.sa,
            rbac_changed=applied,
            token=dict(name=current_name, type=token_type, expires=format_time(expires) if expires else None,
                       issued=reason is not None and not self.check_mode, reason=reason),
            would_issue=reason is not None,
            revoked=revoked,
        )

    def server(self):
        """The URL the manager reaches: the ``server`` option, else the server of this connection."""
        server = self.p.get('server')
        field = 'server'
        if not server:
            server = self.cluster.host
            field = 'server (the server of the connection, the default)'
        error = server_error(server, field)
        if error is not None:
            raise error
        return server

    def require_namespace(self):
        if self.cluster.get(path('v1', 'namespaces', name=self.ns)) is None:
            raise KueueOpsError('namespace %s does not exist on the worker cluster %s' % (self.ns, self.p['cluster_name']),
                                field='namespace', fix='install Kueue on the worker first (the kueue role, or '
                                                       'kueueops.aks.kueue_helm), or give the namespace it runs in')

    def find_ca(self):
        connection_pem = None
        ca_file = getattr(self.api_client.configuration, 'ssl_ca_cert', None)
        if ca_file and not self.p.get('ca_data'):
            try:
                with open(ca_file) as handle:
                    connection_pem = handle.read()
            except (OSError, UnicodeDecodeError):
                connection_pem = None
        configmap_pem = None
        if not self.p.get('ca_data') and not connection_pem:
            configmap = self.cluster.get(path('v1', 'configmaps', self.ns, 'kube-root-ca.crt')) or {}
            configmap_pem = (configmap.get('data') or {}).get('ca.crt')
        ca_data, source = choose_ca(self.p.get('ca_data'), connection_pem, configmap_pem)
        if ca_data is None:
            raise KueueOpsError(
                'cluster_name %s: no CA certificate for the worker\'s kubeconfig: the connection has none (it skips TLS '
                'verification?) and namespace %s has no kube-root-ca.crt ConfigMap; MultiKueue refuses insecure TLS'
                % (self.p['cluster_name'], self.ns), field='ca_data',
                fix='give ca_data: the worker cluster\'s CA certificate (PEM, or the certificate-authority-data of '
                    'a kubeconfig of the cluster)')
        return ca_data, source

    def ensure(self, obj):
        """Apply ``obj`` when that changes it (in check mode, say whether it would); True when it (would have)
        changed."""
        api_path = self._path(obj['kind'], obj['metadata']['name'])
        live = self.cluster.get(api_path)
        if managed_fields.unchanged_reason(obj, live) is None:
            return False
        try:
            # A dry-run decides what the managedFields could not; an object to create needs none but in check mode
            # (where it checks the object and the permissions).
            if live is not None or self.check_mode:
                dry = self.cluster.apply(api_path, obj, FIELD_MANAGER, dry_run=True)
                if apply_changes(dry, live) == 'unchanged':
                    return False
            if not self.check_mode:
                self.cluster.apply(api_path, obj, FIELD_MANAGER)
        except ApiException as exc:
            if exc.status == 409:
                raise KueueOpsError('%s %s exists and another field manager owns fields this module sets (%s)'
                                    % (obj['kind'], obj['metadata']['name'], describe_kube_error(exc).problem),
                                    field='service_account',
                                    fix='choose another service_account, or delete that %s if nothing else uses it'
                                        % obj['kind'])
            raise
        return True

    def holders(self):
        return self.cluster.items(self._path('Secret'), labelSelector='%s=%s' % (TOKEN_LABEL, self.sa))

    def authenticated(self, token):
        """Whether the API server still authenticates ``token`` as this ServiceAccount (a TokenReview)."""
        review = self.cluster.create(path('authentication.k8s.io/v1', 'tokenreviews'), {
            'apiVersion': 'authentication.k8s.io/v1', 'kind': 'TokenReview', 'spec': {'token': token}}) or {}
        status = review.get('status') or {}
        return bool(status.get('authenticated')) and (status.get('user') or {}).get('username') == \
            service_account_user(self.ns, self.sa)

    def _new_holder(self, token_type):
        meta = {'generateName': '%s-token-' % self.sa, 'namespace': self.ns,
                'labels': dict(self.labels(), **{TOKEN_LABEL: self.sa}),
                'annotations': {ISSUED_ANNOTATION: format_time(self.now(), micro=True)}}
        if token_type == 'secret':
            meta['annotations'][SA_NAME_ANNOTATION] = self.sa
        return self.cluster.create(self._path('Secret'), {'apiVersion': 'v1', 'kind': 'Secret', 'metadata': meta,
                                                          'type': SECRET_TYPES[token_type]})

    def _discard(self, holder):
        """Delete a holder Secret whose token could not be completed (its error is the one reported)."""
        try:
            self.cluster.delete(self._path('Secret', holder['metadata']['name']))
        except Exception:  # pylint: disable=broad-except
            self.warnings.append('the incomplete token Secret %s/%s could not be deleted; delete it'
                                 % (self.ns, holder['metadata']['name']))

    def issue_request(self):
        """A holder Secret, a TokenRequest bound to it, the token and its expiry stored in it; the holder."""
        holder = self._new_holder('request')
        name = holder['metadata']['name']
        try:
            answer = self.cluster.create(path('v1', 'serviceaccounts', self.ns, self.sa, 'token'), {
                'apiVersion': 'authentication.k8s.io/v1', 'kind': 'TokenRequest',
                'spec': {'expirationSeconds': self.p['token_ttl'],
                         'boundObjectRef': {'kind': 'Secret', 'apiVersion': 'v1', 'name': name,
                                            'uid': holder['metadata']['uid']}}}) or {}
            status = answer.get('status') or {}
            token = self._remember(status.get('token'))
            expires = parse_time(status.get('expirationTimestamp'))
            if not token or expires is None:
                raise KueueOpsError('the TokenRequest for ServiceAccount %s/%s returned no token or expiry'
                                    % (self.ns, self.sa), field='token_type',
                                    fix='check that the API server issues ServiceAccount tokens, or use '
                                        'token_type=secret')
            return self.cluster.patch(self._path('Secret', name), {
                'metadata': {'annotations': {EXPIRES_ANNOTATION: format_time(expires)}},
                'data': {'token': base64.b64encode(token.encode('utf-8')).decode('ascii')}})
        except Exception:
            self._discard(holder)
            raise

    def issue_secret(self):
        """A legacy service-account-token Secret, once kube-controller-manager has filled its token."""
        holder = self._new_holder('secret')
        name = holder['metadata']['name']
        try:
            filled, done = poll_until(lambda: self.cluster.get(self._path('Secret', name)),
                                      lambda secret: secret is None or holder_token(secret),
                                      Deadline(self.p['timeout']), POLL_PERIOD)
            if filled is None:
                raise KueueOpsError('the token Secret %s/%s was deleted before kube-controller-manager filled it '
                                    '(does ServiceAccount %s exist?)' % (self.ns, name, self.sa), field='token_type',
                                    fix='use token_type=request (the default)')
            if not done:
                raise KueueOpsError('kube-controller-manager\'s token controller did not fill the token of Secret '
                                    '%s/%s within %ss' % (self.ns, name, self.p['timeout']), field='timeout',
                                    fix='raise timeout, check that kube-controller-manager runs its token '
                                        'controller, or use token_type=request (the default)')
            self._remember(holder_token(filled))
            return filled
        except Exception:
            self._discard(holder)
            raise

    # ------------------------------------------------------------------ absent
    def absent(self):
        doomed = [('Secret', s['metadata']['name']) for s in self.holders()]
        for kind in ('ClusterRoleBinding', 'ClusterRole', 'ServiceAccount'):
            live = self.cluster.get(self._path(kind, self.sa))
            if live is None:
                continue
            if ((live.get('metadata') or {}).get('labels') or {}).get(WORKER_LABEL) != self.sa:
                where = ' in namespace %s' % self.ns if kind == 'ServiceAccount' else ''
                self.warnings.append('%s %s%s has no label %s=%s: left alone (this module did not create it)'
                                     % (kind, self.sa, where, WORKER_LABEL, self.sa))
                continue
            doomed.append((kind, self.sa))
        if doomed and not self.check_mode:
            self.delete_and_wait(doomed)
        return dict(changed=bool(doomed), deleted=['%s/%s' % item for item in doomed], service_account=self.sa)

    def delete_and_wait(self, objects):
        """Delete ``objects`` ((kind, name) pairs) and wait until they are gone, within ``timeout``."""
        for kind, name in objects:
            self.cluster.delete(self._path(kind, name))
        pending, done = poll_until(
            lambda: [(k, n) for k, n in objects if self.cluster.get(self._path(k, n)) is not None],
            lambda left: not left, Deadline(self.p['timeout']), POLL_PERIOD)
        if not done:
            raise KueueOpsError('still present %ss after their deletion: %s' % (
                self.p['timeout'], ', '.join('%s/%s' % item for item in pending)), field='timeout',
                fix='raise timeout, or look for a finalizer on them')


# ------------------------------------------------------------------ preflight (issue 44)
def kueue_on_worker(cluster, namespace):
    """``(version, workload_versions)`` of the Kueue on a worker: the tag of the image of the Deployment
    ``kueue-controller-manager`` in ``namespace`` (None when unknown or unreadable) and the versions its Workload API
    is served at (discovery; None when Kueue's group is not served: not installed yet)."""
    versions = None
    for group in (cluster.get('/apis') or {}).get('groups') or []:
        if group.get('name') == GROUP:
            versions = sorted(v.get('version') for v in group.get('versions') or []
                              if 'Workload' in (cluster.served_kinds(v.get('groupVersion') or '') or ()))
    try:
        deployment = cluster.deployment(namespace, MANAGER_DEPLOYMENT) or {}
    except ApiException:
        deployment = {}
    images = [c.get('image') or '' for c in ((deployment.get('spec') or {}).get('template') or {}).get(
        'spec', {}).get('containers') or []]
    tags = [i.split('@')[0].rsplit(':', 1)[-1] for i in images if ':' in i.split('@')[0].rsplit('/', 1)[-1]]
    return (tags[0] if tags else None), versions


def preflight(cluster, name, manager, namespace):
    """What MultiKueue needs of this worker, read and changing nothing (``state=preflight``): every kind the manager's
    MultiKueue watches for ``manager['integrations']`` served (each group version read once by discovery), and the
    Kueue Workload API at ``manager['api_version']``. ``problems``: one sentence per failed need, naming every missing
    kind at once and the fixes; empty when MultiKueue can use this worker."""
    integrations = manager.get('integrations')
    served = {}
    for version in sorted(set(v for _n, v, _k in watched_kinds(integrations or ()))):
        served[version] = cluster.served_kinds(version)
    missing = missing_kinds(integrations or (), served) if integrations is not None else []
    problems = [missing_kind_problem(name, missing, list(integrations), manager.get('source') or 'the manager')] \
        if missing else []
    version, workload_versions = kueue_on_worker(cluster, namespace)
    more, warnings = kueue_problems(name, manager.get('kueue_version'), manager.get('api_version'), version,
                                    workload_versions)
    return {'changed': False, 'worker': name, 'missing_kinds': missing, 'kueue_version': version,
            'workload_versions': workload_versions, 'problems': problems + more, 'skew_warnings': warnings,
            'checked_kinds': integrations is not None}
