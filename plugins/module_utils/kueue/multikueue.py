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
import re

from urllib.parse import urlsplit

from ansible_collections.kueueops.aks.plugins.module_utils.common.yaml_docs import yaml

from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import KueueOpsError, is_dns_subdomain
from ansible_collections.kueueops.aks.plugins.module_utils.kueue.kueue_api import GROUP

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


# ------------------------------------------------------------------ the preflight (issue 44)
# The kinds Kueue's MultiKueue watches on EVERY worker, per integration enabled on the manager. Source: Kueue v0.19.2
# (sigs.k8s.io/kueue@v0.19.2, the module the local control plane builds):
#   * cmd/kueue/main.go: jobframework.GetMultiKueueAdapters(sets.New(cfg.Integrations.Frameworks...)) - the adapters
#     of the integrations listed in the manager's Configuration (integrations.frameworks);
#   * pkg/controller/jobframework/integrationmanager.go GetMultiKueueAdapters: an integration registered with a
#     MultiKueueAdapter (jobframework.RegisterIntegration(FrameworkName, IntegrationCallbacks{MultiKueueAdapter: ...}),
#     pkg/controller/jobs/*/..._controller.go), keyed by the adapter's GVK();
#   * pkg/controller/admissionchecks/multikueue/multikueuecluster.go updateConfigAndRefreshWatchers: a watch of
#     kueue.x-k8s.io Workload, then one per adapter implementing jobframework.MultiKueueWatcher (every built-in one
#     does); a watch that cannot be established ("no matches for kind") fails the connection: the MultiKueueCluster
#     stays Active=False, ClientConnectionFailed, naming the first kind of a Go map's random order.
# The group/version of each kind is the API package its controller imports (go.mod of v0.19.2: kuberay ray-operator
# v1.6.2, jobset v0.12.0, lws v0.9.0, trainer v2.2.1, training-operator v1.9.3, mpi-operator v0.8.2, appwrapper
# v1.2.2). Integrations without a MultiKueueAdapter (deployment, sparkoperator.k8s.io/sparkapplication) make the
# manager watch nothing on a worker. tests/unit/plugins/module_utils/test_multikueue.py checks the names against the
# catalog's frameworks.
WATCHED_KINDS = {
    # integration: (apiVersion, kind, resource) of the kind its MultiKueue adapter watches on every worker
    'batch/job': ('batch/v1', 'Job', 'jobs'),
    'pod': ('v1', 'Pod', 'pods'),
    'statefulset': ('apps/v1', 'StatefulSet', 'statefulsets'),
    'jobset.x-k8s.io/jobset': ('jobset.x-k8s.io/v1alpha2', 'JobSet', 'jobsets'),
    'leaderworkerset.x-k8s.io/leaderworkerset': ('leaderworkerset.x-k8s.io/v1', 'LeaderWorkerSet', 'leaderworkersets'),
    'kubeflow.org/mpijob': ('kubeflow.org/v2beta1', 'MPIJob', 'mpijobs'),
    'kubeflow.org/pytorchjob': ('kubeflow.org/v1', 'PyTorchJob', 'pytorchjobs'),
    'kubeflow.org/tfjob': ('kubeflow.org/v1', 'TFJob', 'tfjobs'),
    'kubeflow.org/paddlejob': ('kubeflow.org/v1', 'PaddleJob', 'paddlejobs'),
    'kubeflow.org/xgboostjob': ('kubeflow.org/v1', 'XGBoostJob', 'xgboostjobs'),
    'kubeflow.org/jaxjob': ('kubeflow.org/v1', 'JAXJob', 'jaxjobs'),
    'trainer.kubeflow.org/trainjob': ('trainer.kubeflow.org/v1alpha1', 'TrainJob', 'trainjobs'),
    'ray.io/rayjob': ('ray.io/v1', 'RayJob', 'rayjobs'),
    'ray.io/raycluster': ('ray.io/v1', 'RayCluster', 'rayclusters'),
    'ray.io/rayservice': ('ray.io/v1', 'RayService', 'rayservices'),
    'workload.codeflare.dev/appwrapper': ('workload.codeflare.dev/v1beta2', 'AppWrapper', 'appwrappers'),
}
# Who serves each group on a worker: the CRDs to install there (the second fix of a missing kind).
OPERATORS = {
    'jobset.x-k8s.io': 'JobSet', 'leaderworkerset.x-k8s.io': 'LeaderWorkerSet (lws)',
    'kubeflow.org': 'the Kubeflow Training Operator (MPIJob: the MPI Operator)',
    'trainer.kubeflow.org': 'Kubeflow Trainer', 'ray.io': 'KubeRay',
    'workload.codeflare.dev': 'AppWrapper (CodeFlare)',
}
ROLE_INTEGRATIONS = 'kueue_integrations'
# The frameworks Kueue v0.19.2 registers without a MultiKueueAdapter: the manager watches nothing on a worker for them.
WITHOUT_ADAPTER = ('deployment', 'sparkoperator.k8s.io/sparkapplication')


def manager_error(state, manager):
    """The ``KueueOpsError`` of kueue_multikueue_worker's ``manager`` option (None when fine): required with
    ``state=preflight``; each integration a framework Kueue registers; ``api_version`` Kueue's group."""
    if state != 'preflight':
        return None if manager is None else KueueOpsError(
            'is used only with state=preflight (state is %s)' % state, field='manager',
            fix='remove manager, or set state: preflight')
    if manager is None:
        return KueueOpsError('is required with state=preflight', field='manager',
                             fix='give the manager\'s integrations, for example manager: {integrations: [batch/job]}')
    known = sorted(set(WATCHED_KINDS) | set(WITHOUT_ADAPTER))
    for idx, name in enumerate(manager.get('integrations') or []):
        if name not in known:
            return KueueOpsError('%r is not an integration framework of Kueue' % (name,),
                                 field='manager.integrations[%d]' % idx,
                                 fix='use a framework name of the manager\'s Configuration: %s' % ', '.join(known))
    version = manager.get('api_version')
    if version is not None and not re.match(r'^%s/v\d+((alpha|beta)\d+)?$' % re.escape(GROUP), version):
        return KueueOpsError('%r is not a version of the Kueue API' % (version,), field='manager.api_version',
                             fix='give it as %s/<version>, such as %s/v1beta2' % (GROUP, GROUP))
    return None


def watched_kinds(integrations):
    """``[(integration, api_version, kind)]`` MultiKueue watches on every worker for the manager's ``integrations``
    (their order; integrations without an adapter give nothing). Kueue's own Workload is not among them
    (``kueue_problems`` checks it)."""
    out, seen = [], set()
    for name in integrations or ():
        found = WATCHED_KINDS.get(name)
        if found and found not in seen:
            seen.add(found)
            out.append((name,) + found[:2])
    return out


def missing_kinds(integrations, served):
    """``[{integration, api_version, kind}]`` of ``watched_kinds(integrations)`` that a worker does not serve;
    ``served``: {api_version: set of kinds, or None when the group version is not served} (discovery)."""
    return [{'integration': name, 'api_version': version, 'kind': kind}
            for name, version, kind in watched_kinds(integrations) if kind not in (served.get(version) or ())]


def _minor(version):
    parts = str(version or '').lstrip('v').split('.')
    try:
        return int(parts[0]), int(parts[1])
    except (ValueError, IndexError):
        return None


def kueue_problems(worker, manager_version, manager_api_version, worker_version, workload_versions):
    """``(problems, warnings)`` of the Kueue on ``worker`` against the manager's: MultiKueue creates and watches
    Workloads on the worker at the API version the manager's Kueue reads (``manager_api_version``, such as
    ``kueue.x-k8s.io/v1beta2``), so the worker's Workload CRD must serve it (``workload_versions``: the versions it
    serves, None when Kueue is not installed there yet - the run installs it). Kueue publishes no version-skew policy
    for MultiKueue: another minor is a warning, not a refusal."""
    problems, warnings = [], []
    if manager_api_version and workload_versions is not None:
        version = manager_api_version.split('/')[-1]
        if version not in workload_versions:
            problems.append('worker %s: its Kueue (%s) serves the Workload API at %s only, but the manager\'s Kueue '
                            '(%s) creates and watches Workloads on workers at %s; MultiKueue cannot use this worker. '
                            'Fix: install the same Kueue version on the worker as on the manager (kueue_version).'
                            % (worker, worker_version or 'version unknown', ', '.join(workload_versions) or 'none',
                               manager_version or 'version unknown', manager_api_version))
    mine, theirs = _minor(manager_version), _minor(worker_version)
    if mine and theirs and mine != theirs:
        warnings.append('worker %s runs Kueue %s and the manager %s: Kueue publishes no version-skew policy for '
                        'MultiKueue; the collection checks only the Workload API version, so keep both on the same '
                        'minor.' % (worker, worker_version, manager_version))
    return problems, warnings


def missing_kind_problem(worker, missing, manager_integrations, source):
    """The one sentence of a worker that lacks ``missing`` (``missing_kinds``): every kind at once, and both fixes."""
    kinds = ', '.join('%s (%s, integration %s)' % (m['kind'], m['api_version'], m['integration']) for m in missing)
    operators = []
    for m in missing:
        group = m['api_version'].split('/')[0]
        op = OPERATORS.get(group, group)
        if op not in operators:
            operators.append(op)
    dropped = set(m['integration'] for m in missing)
    keep = [n for n in manager_integrations if n not in dropped]
    return ('worker %s does not serve %d kind(s) that the manager\'s MultiKueue watches on every worker, for the '
            'integrations of %s: %s. Kueue would keep the worker inactive (MultiKueueCluster Active=False, '
            'ClientConnectionFailed: no matches for kind), naming one kind at a time. Fix, either: set the manager\'s '
            '%s to the frameworks the workers run (without these: %s); or install the CRDs of %s on worker %s.'
            % (worker, len(missing), source, kinds, ROLE_INTEGRATIONS, '[' + ', '.join(keep) + ']' if keep else
               '[batch/job]', ', '.join(operators), worker))
