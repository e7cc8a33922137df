# Copyright: (c) 2026, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Drift: the declared configuration against the cluster, read-only (kueue_drift_info).

Two halves, both reported per object or per key with the declared and the live value:

- **Queue objects**: the declared Kueue objects (``kueue_resources`` / ``kueue_resources_src`` / ``kueue_secrets``,
  loaded, normalised and validated as kueue_queues does, without its server-side dry-run, which needs write
  permissions) against one LIST per kind, as kueue_queues' plan (kueue/plan.py) judged by declared field
  (``by_fields``) and read without writing: ``missing`` (declared, not in the cluster), ``changed`` (each declared
  field whose live value differs, quantities compared by amount), ``extra`` (applied by this collection's field
  manager, no longer declared: what ``prune`` would delete) and ``undeclared`` (Kueue objects nobody declared here).
  Secret values are never shown (``errors.REDACTED``).
- **The install**: on Helm, the release's values (Helm's own record, no helm binary) against the values the
  ``kueue_*`` variables render (``helm_values.render_values``, as kueue_helm renders them, with the chart default
  Configuration of the installed chart), the manager's live Configuration (its ConfigMap, parsed) against the one
  those values render, and the effective feature gates of the Deployment; on the AKS managed extension, the
  extension's configuration settings (ARM JSON read by kueue_extension in check mode) against the declared ones.

The comparisons are pure functions (unit-tested); ``run`` reads the cluster through ``Cluster`` only and writes
nothing.
"""

import base64
import binascii
import copy

from ansible_collections.kueueops.aks.plugins.module_utils.common.yaml_docs import yaml

from ansible_collections.kueueops.aks.plugins.module_utils.kueue.declared import (
    QueueProblems, configuration_of, load_declared, normalise_declared, scrub_problems)
from ansible_collections.kueueops.aks.plugins.module_utils.azure import extension_settings as ext
from ansible_collections.kueueops.aks.plugins.module_utils.helm import helm_values as hv
from ansible_collections.kueueops.aks.plugins.module_utils.kueue import kueue_api as api
from ansible_collections.kueueops.aks.plugins.module_utils.kueue import managed_fields
from ansible_collections.kueueops.aks.plugins.module_utils.kueue import manager_config as mc
from ansible_collections.kueueops.aks.plugins.module_utils.kueue import plan
from ansible_collections.kueueops.aks.plugins.module_utils.kueue import queues as q
from ansible_collections.kueueops.aks.plugins.module_utils.kueue.reader import KueueReader
from ansible_collections.kueueops.aks.plugins.module_utils.common import versions
from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import REDACTED, KueueOpsError
from ansible_collections.kueueops.aks.plugins.module_utils.kube.kube_import import ApiException
from ansible_collections.kueueops.aks.plugins.module_utils.kube.kueue_cluster import Cluster
from ansible_collections.kueueops.aks.plugins.module_utils.helm.helm_storage import decode_helm_release, latest_release_secret
from ansible_collections.kueueops.aks.plugins.module_utils.common import yaml_docs

ABSENT = '(absent)'
_MISSING = object()


# ------------------------------------------------------------------ paths and values
def path_text(parts):
    """``('spec', 'resourceGroups', 0, 'flavors')`` -> ``spec.resourceGroups[0].flavors``."""
    out = ''
    for part in parts:
        if isinstance(part, int):
            out += '[%d]' % part
        else:
            out += ('.' if out else '') + str(part)
    return out


def _at(obj, parts):
    for part in parts:
        if isinstance(part, int):
            if not isinstance(obj, list) or part >= len(obj):
                return _MISSING
        elif not isinstance(obj, dict) or part not in obj:
            return _MISSING
        obj = obj[part]
    return obj


def _shown(value):
    return ABSENT if value is _MISSING else value


def differing_paths(declared, live, parts=()):
    """The paths of ``declared``'s leaves whose value in ``live`` differs (a list of another length, or a value of
    another type, is one difference at its own path). Only what ``declared`` holds is compared: fields the API
    server or a webhook added on its own are not drift."""
    if isinstance(declared, dict):
        if not isinstance(live, dict):
            return [parts]
        out = []
        for key in declared:
            out.extend(differing_paths(declared[key], live.get(key, _MISSING), parts + (key,)))
        return out
    if isinstance(declared, list):
        if not isinstance(live, list) or len(live) != len(declared):
            return [parts]
        out = []
        for index, item in enumerate(declared):
            out.extend(differing_paths(item, live[index], parts + (index,)))
        return out
    return [] if declared == live else [parts]


def all_differing_paths(declared, live, parts=()):
    """Like ``differing_paths``, both ways: keys only one side has are differences too (install values)."""
    if isinstance(declared, dict) and isinstance(live, dict):
        out = []
        for key in sorted(set(declared) | set(live), key=str):
            out.extend(all_differing_paths(declared.get(key, _MISSING), live.get(key, _MISSING), parts + (key,)))
        return out
    return [] if declared == live else [parts]


# ------------------------------------------------------------------ queue objects
def _secret_data(obj):
    """{key: bytes} of a Secret's ``data`` (base64) and ``stringData``; None for a value that is not readable."""
    out = {}
    for key, value in ((obj or {}).get('data') or {}).items():
        try:
            out[key] = base64.b64decode(value or '', validate=True)
        except (binascii.Error, TypeError, ValueError):
            out[key] = None
    for key, value in ((obj or {}).get('stringData') or {}).items():
        out[key] = str(value).encode('utf-8')
    return out


def object_differences(declared, live, manager=q.FIELD_MANAGER):
    """``[{field, declared, live}]`` for one object declared and present: every declared field whose live value
    differs (quantities by amount). A Secret's values are never shown."""
    if declared.get('kind') == 'Secret':
        mine, theirs = _secret_data(declared), _secret_data(live)
        return [{'field': 'data.%s' % key, 'declared': REDACTED if key in mine else ABSENT,
                 'live': REDACTED if key in theirs else ABSENT}
                for key in sorted(set(mine) | set(theirs)) if mine.get(key, _MISSING) != theirs.get(key, _MISSING)]
    if managed_fields.unchanged_reason(declared, live, manager) is None:
        return []
    want = q.canonical_quantities(copy.deepcopy(declared))
    have = q.canonical_quantities(configuration_of(live))
    have.pop('apiVersion', None)
    want.pop('apiVersion', None)
    # Only what the declaration holds is compared. A field this manager applied earlier and no longer declares
    # is not reported: Kueue's defaulting webhook attributes the fields it sets to the applier too, so the
    # managedFields cannot tell such a field from a default (kueue_queues --check --diff, whose dry-run can, shows it).
    paths = differing_paths(want, have)
    out, seen = [], set()
    for parts in paths:
        text = path_text(parts)
        if text in seen:
            continue
        seen.add(text)
        out.append({'field': text, 'declared': _shown(_at(declared, parts)), 'live': _shown(_at(live, parts))})
    return out


def expected_view(declared, live):
    """What the object would look like with the declared fields applied (the diff's "after"): the live object's
    configuration with the declared values laid over it, list elements matched by position."""
    def overlay(base, top):
        if isinstance(top, dict) and isinstance(base, dict):
            out = copy.deepcopy(base)
            for key, value in top.items():
                out[key] = overlay(base.get(key), value)
            return out
        if isinstance(top, list) and isinstance(base, list):
            return [overlay(base[i] if i < len(base) else None, item) for i, item in enumerate(top)]
        return copy.deepcopy(top)

    return overlay(q.comparable(live) or {}, declared)


# How the drift's --diff heads its entries (plan.Plan.diff): the declared side, a missing object, an extra one.
DRIFT_LABELS = ('declared', '(missing)', '(no longer declared)')


def by_fields(manager=q.FIELD_MANAGER):
    """kueue_drift_info's judgement of each declared object, for plan.build: missing (``created``), or its declared
    fields whose live value differs (``updated``, with ``fields``; object_differences), else ``unchanged``. Nothing
    is dry-run: that needs write permissions."""
    def judge(obj, key, current):
        if current is None:
            return plan.entry(key, plan.CREATED, obj, None, reason='declared, not in the cluster')
        fields = object_differences(obj, current, manager)
        if not fields:
            return plan.entry(key, plan.UNCHANGED, obj, current, reason='every declared field has its live value')
        return plan.Entry(key, plan.UPDATED, '%d declared field(s) differ from the live object' % len(fields), obj,
                          current, expected_view(obj, current), fields)
    return judge


def object_drift(objects, live, manager=q.FIELD_MANAGER, aks_managed=False, kueue_namespace='kueue-system',
                 diff=False):
    """The queue-object half of the report (see the module docstring): the plan kueue_queues would make, judged by
    declared field (``by_fields``) and read without writing, with the objects nobody declared here. ``objects``: the
    declared objects, normalised; ``live``: kind -> {key: live object} (Secrets: only those read by name)."""
    declared_keys = set(api.obj_key(o) for o in objects)
    extra_keys = q.prune_candidates(live, declared_keys, manager, aks_managed, objects, kueue_namespace)
    found = plan.build(objects, live, by_fields(manager), sorted(extra_keys, key=_order),
                       prune_reason='applied by this field manager, no longer declared: what prune would delete')
    out = {'missing': [plan.ref(e.key) for e in found.objects if e.action == plan.CREATED],
           'changed': [dict(plan.ref(e.key), fields=e.fields) for e in found.objects if e.action == plan.UPDATED],
           'extra': [plan.ref(k) for k in found.pruned],
           'undeclared': undeclared(live, declared_keys | set(extra_keys), manager, aks_managed),
           'declared': len(objects)}
    if diff:
        out['diff'] = found.diff(labels=DRIFT_LABELS)
    return out


def undeclared(live, known, manager=q.FIELD_MANAGER, aks_managed=False):
    """The Kueue objects of ``live`` nobody declared here: not ``known`` (declared or extra), not applied by
    ``manager``, not the AKS managed extension's own ``aks-*``; each with the managers that wrote it."""
    out = []
    for kind in api.KIND_ORDER:
        if kind in api.CORE_KINDS:
            continue
        for key, item in sorted((live.get(kind) or {}).items()):
            if key in known or q.managed_by(item, manager):
                continue
            if aks_managed and key[2].startswith(q.AKS_PREFIX):
                continue  # the AKS managed extension's own objects
            out.append(dict(plan.ref(key), managers=sorted(set(
                e.get('manager') for e in (item.get('metadata') or {}).get('managedFields') or []
                if e.get('manager') and not e.get('subresource')))))
    return out


def _order(key):
    return (api.kind_rank(key[0]) if key[0] in api.PLURALS else 99, key[1], key[2])


# ------------------------------------------------------------------ install: Helm
def rendered_configuration(manifest):
    """The Configuration of the manager ConfigMap in a release's rendered manifest (parsed), or None."""
    if not isinstance(manifest, str) or yaml is None:
        return None
    try:
        docs = yaml_docs.load_all(manifest)
    except yaml.YAMLError:
        return None
    for doc in docs:
        if isinstance(doc, dict) and doc.get('kind') == 'ConfigMap' and mc.CONFIG_KEY in (doc.get('data') or {}):
            return hv.yaml_mapping(doc['data'][mc.CONFIG_KEY])
    return None


def declared_values(release, params):
    """The Helm values the declared ``kueue_*`` variables render for the installed chart: what kueue_helm would
    hand helm (``normalize``d as helm records them). The chart default Configuration is the installed chart's own
    (from the release record): no helm binary, no registry."""
    chart = release.get('chart') or {}
    version = (chart.get('metadata') or {}).get('version')
    gates = params.get('feature_gates') or None
    integrations = params.get('integrations')
    hv.check_catalog(version, gates, integrations)
    user_values = hv.deep_merge(hv.load_values_files(params.get('values_files') or []), params.get('values') or {})
    default_cfg = mc.get_path(chart.get('values') or {}, hv.CONFIG_PATH)
    return hv.normalize(hv.render_values(version, gates, integrations, user_values, default_cfg,
                                         option_params=params))


def _configuration_of_values(values, chart_values):
    return hv.yaml_mapping(mc.get_path(values, hv.CONFIG_PATH)) or \
        hv.yaml_mapping(mc.get_path(chart_values or {}, hv.CONFIG_PATH)) or {}


def expected_configuration(release, desired):
    """The Configuration the manager ConfigMap holds when the chart renders ``desired``: the Configuration string
    of those values (or the chart's default), plus what the chart's template adds on its own (the top-level keys
    the release's rendered ConfigMap has and its values' Configuration lacks, e.g. ``internalCertManagement``)."""
    chart_values = (release.get('chart') or {}).get('values') or {}
    rendered = rendered_configuration(release.get('manifest')) or {}
    source = _configuration_of_values(release.get('config') or {}, chart_values)
    additions = dict((k, v) for k, v in rendered.items() if k not in source)
    return hv.deep_merge(additions, _configuration_of_values(desired, chart_values))


def _difference(source, parts, declared, live):
    return {'source': source, 'key': path_text(parts), 'declared': _shown(_at(declared, parts)),
            'live': _shown(_at(live, parts))}


def helm_differences(release, desired, live_args, live_config_yaml, declared_version=None):
    """``[{source, key, declared, live}]`` of the Helm path: the chart version, the release's values, the live
    Configuration, the effective feature gates."""
    out = []
    chart_version = ((release.get('chart') or {}).get('metadata') or {}).get('version')
    if declared_version and str(declared_version).strip().lower() != 'latest':
        want, have = versions.parse(declared_version, patch=True), versions.parse(chart_version or '', patch=True)
        if want is None or have is None or want.release_text != have.release_text:
            out.append({'source': 'chart version', 'key': 'kueue_version', 'declared': declared_version,
                        'live': chart_version})
    have_values = hv.normalize(release.get('config') or {})
    for parts in all_differing_paths(desired, have_values):
        if path_text(parts) == hv.CONFIG_PATH:
            want_cfg, have_cfg = hv.yaml_mapping(_at(desired, parts)), hv.yaml_mapping(_at(have_values, parts))
            if want_cfg is not None and have_cfg is not None:
                for sub in all_differing_paths(want_cfg, have_cfg):
                    item = _difference('helm values', sub, want_cfg, have_cfg)
                    item['key'] = '%s: %s' % (hv.CONFIG_PATH, item['key'])
                    out.append(item)
                continue
        out.append(_difference('helm values', parts, desired, have_values))
    want_cfg = expected_configuration(release, desired)
    live_cfg = hv.yaml_mapping(live_config_yaml) or {}
    for parts in all_differing_paths(want_cfg, live_cfg):
        out.append(_difference('manager configuration', parts, want_cfg, live_cfg))
    want_gates = dict((g['name'], g['enabled']) for g in mc.get_path(desired, hv.GATES_PATH) or []
                      if isinstance(g, dict) and 'name' in g)
    if not want_gates:
        want_gates = dict((str(k), bool(v)) for k, v in (want_cfg.get('featureGates') or {}).items())
    try:
        live_gates = mc.effective_from_deployment(live_args, live_config_yaml)[0]
    except (ValueError, yaml.YAMLError) as exc:
        out.append({'source': 'feature gates', 'key': '--feature-gates', 'declared': want_gates,
                    'live': 'unreadable: %s' % exc})
        return out
    for name in sorted(set(want_gates) | set(live_gates)):
        if want_gates.get(name, _MISSING) != live_gates.get(name, _MISSING):
            out.append({'source': 'feature gates', 'key': name, 'declared': _shown(want_gates.get(name, _MISSING)),
                        'live': _shown(live_gates.get(name, _MISSING))})
    return out


# ------------------------------------------------------------------ install: managed extension
def extension_differences(extension, settings, version=None):
    """``[{source, key, declared, live}]`` of the managed extension: each configuration setting whose value in ARM
    differs from the declared one (rendered as kueue_extension sends it), and the pinned version. ``extension``:
    the extension as ARM reports it ({} when it does not exist); protected settings are never compared (ARM never
    returns their values)."""
    props = (extension or {}).get('properties') or {}
    if not props:
        return [{'source': 'extension', 'key': 'extension', 'declared': 'present', 'live': ABSENT}]
    out = []
    want = ext.normalize_settings(settings or {}, 'configuration_settings') or {}
    have = props.get('configurationSettings') or {}
    for key in sorted(set(want) | set(have)):
        if want.get(key, _MISSING) != have.get(key, _MISSING):
            out.append({'source': 'extension settings', 'key': key, 'declared': _shown(want.get(key, _MISSING)),
                        'live': _shown(have.get(key, _MISSING))})
    if version and str(version).strip().lower() != 'latest':  # latest: the installed minor's newest (release_train)
        have_version = ext.normalize_version(props.get('version') or props.get('currentVersion'))
        if ext.normalize_version(version) != have_version:
            out.append({'source': 'extension version', 'key': 'kueue_extension_version', 'declared': version,
                        'live': have_version})
    return out


# ------------------------------------------------------------------ the cluster
def _latest_release(cluster, namespace, release_name):
    latest = latest_release_secret(cluster, namespace, release_name)
    return decode_helm_release((latest.get('data') or {}).get('release')) if latest else None


def install_drift(api_client, params, aks_managed):
    """The install half: ``{method, compared, differences, note}``."""
    namespace = params.get('kueue_namespace') or 'kueue-system'
    if aks_managed:
        if params.get('extension') is None:
            return {'method': 'extension', 'compared': False, 'differences': [],
                    'note': 'the AKS managed extension runs here; its settings are compared when the extension as '
                            'ARM reports it is given (status.yml reads it with kueue_aks_resource_group and '
                            'kueue_aks_cluster_name)'}
        return {'method': 'extension', 'compared': True, 'note': '',
                'differences': extension_differences(params.get('extension'),
                                                     params.get('configuration_settings'),
                                                     params.get('extension_version'))}
    cluster = Cluster(api_client)
    release = _latest_release(cluster, namespace, params.get('release_name') or 'kueue')
    if release is None:
        return {'method': 'none', 'compared': False, 'differences': [],
                'note': 'no Helm release %r in namespace %s: the install was not compared'
                        % (params.get('release_name') or 'kueue', namespace)}
    desired = declared_values(release, params)
    try:
        args, config_yaml, _image = mc.read_manager(cluster, namespace)
    except ApiException as exc:
        if exc.status != 404:
            raise
        args, config_yaml = [], ''
    return {'method': 'helm', 'compared': True, 'note': '', 'release': release.get('name'),
            'chart_version': ((release.get('chart') or {}).get('metadata') or {}).get('version'),
            'differences': helm_differences(release, desired, args, config_yaml, params.get('version'))}


def check_params(params):
    """What is refused before the cluster is read (KueueOpsError naming the option)."""
    settings = params.get('configuration_settings')
    if settings is not None:
        ext.normalize_settings(settings, 'configuration_settings')
    if params.get('extension') is not None:
        props = params['extension'].get('properties') if params['extension'] else {}
        if params['extension'] and not isinstance(props, dict):
            raise KueueOpsError('extension has no properties mapping: it is not an extension as ARM reports it',
                                field='extension',
                                fix='pass the extension result of kueueops.aks.kueue_extension (check mode), or {} '
                                    'when it does not exist')
    version = params.get('version')
    if version and str(version).strip().lower() != 'latest' and versions.parse(version, patch=True) is None:
        raise KueueOpsError('%r is not a Kueue version' % version, field='version',
                            fix='give the declared chart version (0.19.2), latest, or omit it')
    ext_version = params.get('extension_version')
    if ext_version and str(ext_version).strip().lower() != 'latest' and versions.parse(ext_version, patch=True) is None:
        raise KueueOpsError('%r is not a version of the extension' % ext_version, field='extension_version',
                            fix="give the pinned version in AKS's form (0.19.2-aks.0.4.4), latest, or omit it")
    if params.get('values_files'):
        hv.load_values_files(params['values_files'])
    problems = hv.detect_misnested_values(params.get('values') or {})
    if problems:
        raise KueueOpsError(' '.join(problems), field='values',
                            fix='put the Configuration under the top-level managerConfig.controllerManagerConfigYaml '
                                'string, or use the integrations and feature_gates options')


def run(api_client, params, diff=False, no_log_values=None):
    """One read-only drift report. Raises QueueProblems (the declared configuration is wrong) or KueueOpsError."""
    masked = no_log_values if no_log_values is not None else set()
    kueue_ns = params.get('kueue_namespace') or 'kueue-system'
    check_params(params)
    items, problems = load_declared(params, masked)
    engine = KueueReader(api_client, workers=8)
    engine.discover()
    aks_managed = engine.detect_aks_extension(kueue_ns)
    objects, _converted = normalise_declared(engine, items, problems, kueue_ns, masked)
    live = engine.list_live()
    secret_names = set(o['metadata']['name'] for o in objects if o['kind'] == 'Secret')
    secret_names.update(name for (_ns, name) in q.multikueue_secret_refs(
        [o for o in objects if o['kind'] == 'MultiKueueCluster'] + list((live.get('MultiKueueCluster') or {}).values()),
        kueue_ns))
    live['Secret'] = engine.get_secrets(kueue_ns, secret_names) if secret_names else {}
    masked.update(q.secret_values(live['Secret'].values()))
    # Namespaces are not read (the status role does not list them): a LocalQueue in a namespace that does not
    # exist is reported missing.
    namespaces = set([kueue_ns]) | set(o['metadata'].get('namespace') for o in objects if o['kind'] == 'LocalQueue')
    provisioning_api = engine.serves(*q.PROVISIONING_REQUEST_API) if q.provisioning_request_checks(objects) else None
    problems.extend(q.validate(objects, live, namespaces, create_namespaces=True, aks_managed=aks_managed,
                               kueue_namespace=kueue_ns, provisioning_request_api=provisioning_api))
    problems.extend(engine.schema_problems(objects, skip=set(p.obj for p in problems)))
    if problems:
        raise QueueProblems(scrub_problems(problems, masked),
                            'input and cross-reference checks of the declared configuration')
    objects_part = object_drift(objects, live, q.FIELD_MANAGER, aks_managed, kueue_ns, diff=diff)
    install = install_drift(api_client, params, aks_managed) if params.get('install', True) else {
        'method': 'not compared', 'compared': False, 'differences': [], 'note': 'install: false'}
    result = {
        'changed': False,
        'objects': dict((k, v) for k, v in objects_part.items() if k != 'diff'),
        'install': install,
        'aks_extension': bool(aks_managed),
    }
    counts = dict((k, len(result['objects'][k])) for k in ('missing', 'changed', 'extra', 'undeclared'))
    counts['install'] = len(install['differences'])
    result['counts'] = counts
    # Undeclared objects are drift too: the declared configuration is the whole of the cluster's (the AKS managed
    # extension's own aks-* objects excepted).
    result['drift'] = any(counts.values())
    if diff:
        result['diff'] = objects_part['diff']
    return result
