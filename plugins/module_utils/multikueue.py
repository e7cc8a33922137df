# Copyright: (c) 2026, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The manager side of MultiKueue (issue 18): the ``multikueue`` option of kueue_queues, and the one check of a
worker kubeconfig.

From one option (a MultiKueueConfig name, an AdmissionCheck name, the workers' names and kubeconfigs, the
ClusterQueues that dispatch) this builds the whole wiring as ordinary input documents, which kueue_queues then
validates, dry-runs, applies and diffs like any other:

* per worker a Secret ``<config>-<name>`` in the Kueue namespace (key ``kubeconfig``) and a MultiKueueCluster
  ``<name>`` reading it (``spec.clusterSource.kubeConfig``, ``locationType: Secret``);
* a MultiKueueConfig ``<config>`` listing the workers in the given order;
* an AdmissionCheck of controller ``kueue.x-k8s.io/multikueue`` whose parameters name the MultiKueueConfig;
* that AdmissionCheck added to the named ClusterQueues of the input.

Every generated object carries ``app.kubernetes.io/managed-by: kueueops`` and ``kueueops.aks/multikueue:
<config>``; the live objects with that label which a run no longer generates are its to delete (``owned``).
The documents are written at ``v1beta2``; queues.normalise converts them for a cluster serving only ``v1beta1``.

``kubeconfig_problems`` is what Kueue's MultiKueue controller checks before it uses a kubeconfig
(``validateKubeconfig`` and ``validateRestConfig`` in
``pkg/controller/admissionchecks/multikueue/multikueuecluster.go`` of Kueue 0.19.2): a kubeconfig it refuses
leaves the MultiKueueCluster inactive with reason ``InsecureKubeConfig``. No text here ever holds a value of a
kubeconfig: problems name fields by their place (``users[0].user.exec``).

Pure: no cluster, no Ansible. Problems are ``(object, field, text, fix)`` tuples, which the caller makes
``queues.Problem``s (queues.py imports this file).
"""

import ipaddress
import json

from urllib.parse import urlsplit

try:
    import yaml
except ImportError:  # pragma: no cover - the module reports the missing library
    yaml = None

from ansible_collections.kueueops.aks.plugins.module_utils.errors import is_dns_subdomain
from ansible_collections.kueueops.aks.plugins.module_utils.kueue_api import GROUP

CONTROLLER = GROUP + '/multikueue'
SECRET_KEY = 'kubeconfig'
OWNER_LABEL = 'kueueops.aks/multikueue'
MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by'
MANAGED_BY = 'kueueops'
VERSION = GROUP + '/v1beta2'
GENERATED_KINDS = ('Secret', 'MultiKueueCluster', 'MultiKueueConfig', 'AdmissionCheck')
# A MultiKueueCluster's name and the MultiKueueConfig's (also a label value) are DNS-1123 subdomains of at most 63.
NAME_MAX = 63
ROLE_CLUSTER_QUEUES = 'kueue_multikueue_cluster_queues'

REFUSED = ('MultiKueue refuses such a kubeconfig: the MultiKueueCluster would stay inactive (Active=False, reason '
           'InsecureKubeConfig)')
KUBECONFIG_FIX = ('give a kubeconfig that authenticates with a ServiceAccount token (users[].user.token) and '
                  'trusts the worker\'s API server with certificate-authority-data, as '
                  'kueueops.aks.kueue_multikueue_worker issues')
_NAME_FIX = ('use a DNS-1123 subdomain of at most %d characters: lowercase letters, digits, "-" and ".", starting '
             'and ending with a letter or digit' % NAME_MAX)


# ------------------------------------------------------------------ kubeconfig
def host_valid(server):
    """Kueue's isValidHostname: the URL's host (port removed) is an IP address or a DNS-1123 subdomain."""
    try:
        parts = urlsplit(server.strip().lower())
        host = parts.hostname
    except ValueError:
        return False
    if not parts.scheme or not host:
        return False
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return is_dns_subdomain(host)


def _entries(doc, section, inner, problems):
    """{name: (index, inner mapping)} of a kubeconfig section (``clusters``/``users``/``contexts``)."""
    entries = doc.get(section)
    if not isinstance(entries, list) or not entries:
        problems.append((section, 'missing or empty: a kubeconfig lists its %s' % section))
        return {}
    named = {}
    for idx, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get('name'), str) or not entry['name'] \
                or not isinstance(entry.get(inner), dict):
            problems.append(('%s[%d]' % (section, idx), 'must be a mapping {name: <name>, %s: {...}}' % inner))
            continue
        named.setdefault(entry['name'], (idx, entry[inner]))
    return named


def kubeconfig_problems(text):
    """``[(kubeconfig field, why)]``: what makes MultiKueue refuse ``text`` as a worker kubeconfig (Kueue's
    validateKubeconfig and validateRestConfig); empty when it would use it. Never quotes a value."""
    if not isinstance(text, str) or not text.strip():
        return [('', 'is empty')]
    if yaml is None:  # pragma: no cover
        return [('', 'cannot be read: PyYAML is not installed')]
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, 'problem_mark', None)
        return [('', 'is not valid YAML%s' % (' (line %d)' % (mark.line + 1) if mark is not None else ''))]
    if not isinstance(doc, dict):
        return [('', 'is not a kubeconfig (a YAML mapping with clusters, users, contexts and current-context)')]
    problems = []
    clusters = _entries(doc, 'clusters', 'cluster', problems)
    users = _entries(doc, 'users', 'user', problems)
    contexts = _entries(doc, 'contexts', 'context', problems)
    for idx, user in sorted(users.values(), key=lambda v: v[0]):
        for field in ('tokenFile', 'token-file'):
            if user.get(field):
                problems.append(('users[%d].user.%s' % (idx, field), 'a token file is not allowed (the file would be '
                                 'read on the manager\'s disk); put the token itself in users[].user.token'))
    for idx, cluster in sorted(clusters.values(), key=lambda v: v[0]):
        field = 'clusters[%d].cluster.' % idx
        if cluster.get('insecure-skip-tls-verify') is True:
            problems.append((field + 'insecure-skip-tls-verify', 'skipping TLS verification is not allowed'))
        if cluster.get('certificate-authority'):
            problems.append((field + 'certificate-authority', 'a CA file path is not allowed (the file would be read '
                             'on the manager\'s disk); give the CA itself in certificate-authority-data'))
        if not cluster.get('server'):
            problems.append((field + 'server', 'missing: the URL of the worker\'s API server is required'))
    current = doc.get('current-context')
    if not isinstance(current, str) or not current:
        problems.append(('current-context', 'missing: name the context MultiKueue uses'))
        return problems
    if contexts and current not in contexts:
        problems.append(('current-context', 'names no context of contexts'))
        return problems
    if not contexts:
        return problems
    cidx, context = contexts[current]
    for ref, section, named in (('cluster', 'clusters', clusters), ('user', 'users', users)):
        name = context.get(ref)
        if not isinstance(name, str) or not name:
            problems.append(('contexts[%d].context.%s' % (cidx, ref), 'missing: the current context names its %s'
                             % ref))
        elif named and name not in named:
            problems.append(('contexts[%d].context.%s' % (cidx, ref), 'names no entry of %s' % section))
    cluster = clusters.get(context.get('cluster'))
    if cluster is not None and cluster[1].get('server') and not host_valid(str(cluster[1]['server'])):
        problems.append(('clusters[%d].cluster.server' % cluster[0], 'not a URL whose host is an IP address or a DNS '
                         'name (such as https://worker.example.com:443); MultiKueue calls it an untrusted server '
                         'endpoint'))
    user = users.get(context.get('user'))
    if user is not None:
        uidx, spec = user
        if spec.get('exec'):
            problems.append(('users[%d].user.exec' % uidx, 'exec plugins are not allowed (they would run a program '
                             'on the manager)'))
        if spec.get('auth-provider'):
            problems.append(('users[%d].user.auth-provider' % uidx, 'auth providers are not allowed'))
        if spec.get('username') or spec.get('password'):
            problems.append(('users[%d].user.%s' % (uidx, 'username' if spec.get('username') else 'password'),
                             'basic authentication (username/password) is not allowed'))
    return problems


def kubeconfig_text(field, why):
    """One problem of ``kubeconfig_problems`` as the text of a Problem: the field, why, and Kueue's reaction."""
    if not field:
        return 'the kubeconfig %s; %s' % (why, REFUSED)
    return '%s: %s; %s' % (field, why, REFUSED)


def kubeconfig_secrets(text):
    """The values of a kubeconfig that output must never show (tokens, keys, passwords), besides the whole text."""
    out = set()
    try:
        doc = yaml.safe_load(text) if yaml is not None and isinstance(text, str) else None
    except yaml.YAMLError:
        return out
    for entry in (doc.get('users') if isinstance(doc, dict) and isinstance(doc.get('users'), list) else []):
        user = entry.get('user') if isinstance(entry, dict) else None
        for field in ('token', 'client-key-data', 'password'):
            value = user.get(field) if isinstance(user, dict) else None
            if isinstance(value, str) and len(value) >= 4:
                out.add(value)
    return out


# ------------------------------------------------------------------ the option
def secret_name(config, cluster):
    return '%s-%s' % (config, cluster)


def labels(config):
    return {MANAGED_BY_LABEL: MANAGED_BY, OWNER_LABEL: config}


def _declared_names(items, kind, namespace=None):
    """{name: origin} of the input documents of ``kind`` (Secrets: in ``namespace``, the Kueue one)."""
    out = {}
    for origin, doc in items:
        if not isinstance(doc, dict) or doc.get('kind') != kind or not isinstance(doc.get('metadata'), dict):
            continue
        meta = doc['metadata']
        if namespace is not None and (meta.get('namespace') or namespace) != namespace:
            continue
        if isinstance(meta.get('name'), str):
            out.setdefault(meta['name'], origin)
    return out


def option_problems(mk, items, namespace, present=True):
    """Problems of the ``multikueue`` option itself and against the input documents ``items`` (``[(origin,
    document)]`` of resources, src and secrets), before the cluster is contacted: names, duplicates, clashes with
    declared objects, and (``present``: not for ``state=absent``, which only deletes) ClusterQueues not in the input
    and every kubeconfig (``kubeconfig_problems``)."""
    problems = []
    config, check = mk.get('config'), mk.get('admission_check')
    for field, value in (('multikueue.config', config), ('multikueue.admission_check', check)):
        if not is_dns_subdomain(value, NAME_MAX if field == 'multikueue.config' else 253):
            problems.append((None, field, '%r is not a valid name' % (value,),
                             _NAME_FIX if field == 'multikueue.config' else _NAME_FIX.replace(str(NAME_MAX), '253')))
    clusters = mk.get('clusters') or []
    if not clusters:
        problems.append((None, 'multikueue.clusters', 'is empty: MultiKueue needs at least one worker cluster',
                         'list each worker as {name, kubeconfig}, or remove the multikueue option'))
    declared = dict((kind, _declared_names(items, kind, namespace if kind == 'Secret' else None))
                    for kind in GENERATED_KINDS)
    clash_fix = ('remove it from resources/src (the multikueue option generates it), or give the option another '
                 'name')
    for field, kind, name in (('multikueue.config', 'MultiKueueConfig', config),
                              ('multikueue.admission_check', 'AdmissionCheck', check)):
        if name in declared[kind]:
            problems.append((None, field, 'the %s %r is also declared in %s' % (kind, name, declared[kind][name]),
                             clash_fix))
    seen = {}
    for idx, cluster in enumerate(clusters):
        name = cluster.get('name')
        field = 'multikueue.clusters[%d]' % idx
        if not is_dns_subdomain(name, NAME_MAX):
            problems.append((None, field + '.name', '%r is not a valid MultiKueueCluster name' % (name,), _NAME_FIX))
            continue
        if name in seen:
            problems.append((None, field + '.name', '%r is listed twice (multikueue.clusters[%d] and [%d])'
                             % (name, seen[name], idx), 'keep one entry per worker cluster'))
            continue
        seen[name] = idx
        if name in declared['MultiKueueCluster']:
            problems.append((None, field + '.name', 'the MultiKueueCluster %r is also declared in %s'
                             % (name, declared['MultiKueueCluster'][name]), clash_fix))
        if isinstance(config, str) and secret_name(config, name) in declared['Secret']:
            problems.append((None, field + '.name', 'the Secret %s/%s the option writes for this worker is also '
                             'declared in %s' % (namespace, secret_name(config, name),
                                                 declared['Secret'][secret_name(config, name)]), clash_fix))
        for kfield, why in kubeconfig_problems(cluster.get('kubeconfig')) if present else ():
            problems.append(('MultiKueueCluster %s' % name, field + '.kubeconfig', kubeconfig_text(kfield, why),
                             KUBECONFIG_FIX))
    cqs = _declared_names(items, 'ClusterQueue')
    listed = {}
    for idx, name in enumerate(mk.get('cluster_queues') or [] if present else ()):
        field = 'multikueue.cluster_queues[%d]' % idx
        if name in listed:
            problems.append((None, field, 'ClusterQueue %r is listed twice (multikueue.cluster_queues[%d] and [%d])'
                             % (name, listed[name], idx), 'keep one entry'))
        elif name not in cqs:
            problems.append((None, field, 'ClusterQueue %r is not a ClusterQueue of the input (the option adds its '
                             'AdmissionCheck to ClusterQueues this run applies)' % (name,),
                             'declare it in resources/src, or remove it from %s (multikueue.cluster_queues)'
                             % ROLE_CLUSTER_QUEUES))
        listed.setdefault(name, idx)
    return problems


def documents(mk, namespace):
    """The generated input documents ``[(origin, document)]``, at v1beta2 (the Secrets as core v1 with
    ``stringData``, which queues.normalise_secret encodes)."""
    config, check = mk['config'], mk['admission_check']
    meta_labels = labels(config)
    out = []
    names = []
    for idx, cluster in enumerate(mk.get('clusters') or []):
        origin = 'multikueue.clusters[%d]' % idx
        name = cluster['name']
        names.append(name)
        secret = secret_name(config, name)
        out.append((origin, {'apiVersion': 'v1', 'kind': 'Secret', 'type': 'Opaque',
                             'metadata': {'name': secret, 'namespace': namespace, 'labels': dict(meta_labels)},
                             'stringData': {SECRET_KEY: cluster['kubeconfig']}}))
        out.append((origin, {'apiVersion': VERSION, 'kind': 'MultiKueueCluster',
                             'metadata': {'name': name, 'labels': dict(meta_labels)},
                             'spec': {'clusterSource': {'kubeConfig': {'locationType': 'Secret',
                                                                       'location': secret}}}}))
    out.append(('multikueue.config', {'apiVersion': VERSION, 'kind': 'MultiKueueConfig',
                                      'metadata': {'name': config, 'labels': dict(meta_labels)},
                                      'spec': {'clusters': names}}))
    out.append(('multikueue.admission_check', {
        'apiVersion': VERSION, 'kind': 'AdmissionCheck', 'metadata': {'name': check, 'labels': dict(meta_labels)},
        'spec': {'controllerName': CONTROLLER,
                 'parameters': {'apiGroup': GROUP, 'kind': 'MultiKueueConfig', 'name': config}}}))
    return out


def _checks_of(spec):
    """``[(field, AdmissionCheck name, onFlavors)]`` a ClusterQueue spec lists (v1beta2 strategy, v1beta1 list)."""
    out = []
    strategy = spec.get('admissionChecksStrategy')
    rules = strategy.get('admissionChecks') if isinstance(strategy, dict) else None
    for idx, rule in enumerate(rules if isinstance(rules, list) else []):
        if isinstance(rule, dict) and isinstance(rule.get('name'), str):
            out.append(('spec.admissionChecksStrategy.admissionChecks[%d]' % idx, rule['name'], rule.get('onFlavors')))
    plain = spec.get('admissionChecks')
    for idx, name in enumerate(plain if isinstance(plain, list) else []):
        if isinstance(name, str):
            out.append(('spec.admissionChecks[%d]' % idx, name, None))
    return out


def attach(objects, mk, live, pruned=()):
    """Add the option's AdmissionCheck to each ClusterQueue of ``mk['cluster_queues']`` among the normalised
    ``objects`` (in place: appended to ``spec.admissionChecks`` when the ClusterQueue declares that v1beta1 list,
    else to ``spec.admissionChecksStrategy.admissionChecks``; kept once when it already lists it). Returns the
    problems: a ClusterQueue that lists another MultiKueue AdmissionCheck (of the input, or of the cluster and not
    pruned), or lists this one with ``onFlavors``; Kueue makes either ClusterQueue inactive."""
    check = mk['admission_check']
    declared = dict((o['metadata']['name'], o) for o in objects if o.get('kind') == 'AdmissionCheck')
    pruned = set(pruned or ())

    def multikueue_check(name):
        obj = declared.get(name)
        if obj is None:
            key = ('AdmissionCheck', '', name)
            obj = None if key in pruned else (live.get('AdmissionCheck') or {}).get(key)
        return ((obj or {}).get('spec') or {}).get('controllerName') == CONTROLLER

    cqs = dict((o['metadata']['name'], o) for o in objects if o.get('kind') == 'ClusterQueue')
    problems = []
    fix = 'or remove the ClusterQueue from %s (multikueue.cluster_queues)' % ROLE_CLUSTER_QUEUES
    for idx, name in enumerate(mk.get('cluster_queues') or []):
        obj = cqs.get(name)
        if obj is None:
            continue  # not in the input, or refused already
        field = 'multikueue.cluster_queues[%d]' % idx
        spec = obj.setdefault('spec', {})
        present = False
        refused = False
        for where, other, flavors in _checks_of(spec):
            if other == check:
                present = True
                if flavors:
                    refused = True
                    problems.append(('ClusterQueue %s' % name, field, 'lists the AdmissionCheck %r with onFlavors '
                                     '(%s); Kueue applies a MultiKueue AdmissionCheck to the whole ClusterQueue '
                                     'only (it would be inactive: MultiKueueAdmissionCheckAppliedPerFlavor)'
                                     % (check, where), 'remove onFlavors from that entry, ' + fix))
            elif multikueue_check(other):
                refused = True
                problems.append(('ClusterQueue %s' % name, field, 'already has the MultiKueue AdmissionCheck %r (%s); '
                                 'Kueue allows one per ClusterQueue (it would be inactive: '
                                 'MultipleMultiKueueAdmissionChecks)' % (other, where),
                                 'remove %r from the ClusterQueue, %s' % (other, fix)))
        if present or refused:
            continue
        if isinstance(spec.get('admissionChecks'), list) and spec['admissionChecks']:
            spec['admissionChecks'].append(check)
            continue
        strategy = spec.setdefault('admissionChecksStrategy', {})
        if not isinstance(strategy, dict):
            continue  # the schema check names it
        rules = strategy.setdefault('admissionChecks', [])
        if isinstance(rules, list):
            rules.append({'name': check})
    return problems


def owned(live, keys, config):
    """The ``keys`` (of ``live``, kind -> {key: object}) whose object carries ``kueueops.aks/multikueue: config``."""
    def label(key):
        meta = ((live.get(key[0]) or {}).get(key) or {}).get('metadata') or {}
        return (meta.get('labels') or {}).get(OWNER_LABEL)
    return [k for k in keys if label(k) == config]


def summary(mk, pruned_keys):
    """The ``multikueue`` key of kueue_queues' result (names only, never a kubeconfig)."""
    return {'config': mk['config'], 'admission_check': mk['admission_check'],
            'clusters': [c['name'] for c in mk.get('clusters') or []],
            'cluster_queues': list(mk.get('cluster_queues') or []),
            'pruned_clusters': [k[2] for k in pruned_keys if k[0] == 'MultiKueueCluster']}


# ------------------------------------------------------------------ the role's inventory (plugins/filter/multikueue_*)
MANAGER_GROUP = 'kueue_multikueue_manager'
WORKERS_GROUP = 'kueue_multikueue_workers'


def kubeconfig_string(value):
    """A kubeconfig given as text or as a mapping (an inventory's YAML), as the text a Secret holds. A mapping goes
    through JSON first: Ansible hands filters its own dict and str subclasses, which PyYAML's safe dumper refuses."""
    if isinstance(value, (dict, list)):
        return yaml.safe_dump(json.loads(json.dumps(value)), default_flow_style=False, sort_keys=False)
    return str(value)


def inventory_problems(managers, workers, cluster_queues, items):
    """What makes the MultiKueue inventory of the role entry point ``multikueue`` unusable, found before any cluster
    is touched: one sentence per problem, naming the host or variable and the fix (never a kubeconfig value).
    ``workers`` are ``{host, name, kubeconfig}`` (the filter multikueue_workers); ``items`` the manager's declared
    documents (``[(origin, document)]``), whose ClusterQueues ``cluster_queues`` must name."""
    problems = []
    if not managers:
        problems.append('No host is in the inventory group %s: put the manager cluster\'s host in it (exactly one).'
                        % MANAGER_GROUP)
    elif len(managers) > 1:
        problems.append('%s has %d hosts (%s): MultiKueue has one manager cluster; keep one host in it and put the '
                        'others in %s.' % (MANAGER_GROUP, len(managers), ', '.join(managers), WORKERS_GROUP))
    if not workers:
        problems.append('No host is in the inventory group %s: put one host per worker cluster in it.'
                        % WORKERS_GROUP)
    for worker in workers:
        if worker['host'] in managers:
            groups = (worker['host'], MANAGER_GROUP, WORKERS_GROUP)
            problems.append('%s is both the manager and a worker (in %s and %s): a cluster does not dispatch to '
                            'itself; remove it from one of the groups.' % groups)
    seen = {}
    for worker in workers:
        host, name = worker['host'], worker['name']
        if not is_dns_subdomain(name, NAME_MAX):
            problems.append('worker %s: %r is not a valid MultiKueueCluster name (kueue_multikueue_cluster_name, '
                            'else the inventory host name); %s.' % (host, name, _NAME_FIX))
        elif name in seen:
            problems.append('workers %s and %s both name the MultiKueueCluster %s: set kueue_multikueue_cluster_name '
                            'on one of them.' % (seen[name], host, name))
        seen.setdefault(name, host)
        if worker.get('kubeconfig') is not None:
            for field, why in kubeconfig_problems(kubeconfig_string(worker['kubeconfig'])):
                problems.append('worker %s: kueue_multikueue_worker_kubeconfig %s; %s, or leave it unset to let the '
                                'role issue a token.' % (host, kubeconfig_text(field, why), KUBECONFIG_FIX))
    if managers and not cluster_queues:
        problems.append('%s is empty: no ClusterQueue of the manager would dispatch to the workers; name the '
                        'manager\'s ClusterQueues that should.' % ROLE_CLUSTER_QUEUES)
    declared = _declared_names(items, 'ClusterQueue')
    for idx, name in enumerate(cluster_queues):
        if name not in declared:
            problems.append('%s[%d]: %r is not a ClusterQueue of the manager\'s kueue_resources or '
                            'kueue_resources_src; declare it there, or remove it from %s.'
                            % (ROLE_CLUSTER_QUEUES, idx, name, ROLE_CLUSTER_QUEUES))
    return problems
