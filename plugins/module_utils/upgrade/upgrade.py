# Copyright: (c) 2026, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The plan of a Kueue upgrade (issue 15): the hops from the installed version to the target, and what each
crossed minor requires of this cluster. Pure logic on the catalog (kueue_catalog), the live state the module reads
(``gather``) and the inventory; the module ``kueue_upgrade_plan`` prints it, the role ``upgrade`` executes it.

The hops. Kueue changes the storage version of its CRDs in one minor (0.16: v1beta1 -> v1beta2) and stops serving
the old version some minors later (0.20), so an object written before the first and not rewritten since cannot be
read after the second. The plan therefore:

* migrates first, at the installed version, when a Kueue CRD already stores another version than the installed
  Kueue writes (an earlier upgrade that skipped the migration);
* stops at the first published release of the minor that changes the storage version (or the first later minor
  published), and migrates there, before going further: the objects are converted by the release that introduced
  the new storage version, as Kueue's own upgrade notes for 0.16 do (upgrade, then hack/migrate-to-v1beta2.sh);
* otherwise goes straight to the target: Kueue publishes no rule against skipping minors, and every skipped minor's
  required actions are still listed and checked;
* refuses a hop to a release that does not serve a version some CRD still stores (nothing published in between).

The actions of each crossed minor come from the difference of two catalog records (gates removed, locked or with
a new default, frameworks removed or no longer on by default, API versions no longer served, the storage
version) and from the facts taken from Kueue's CHANGELOGs (``changelog`` of a record), each kept only when it
applies to this cluster: what the inventory sets, what the running manager has, which objects exist.
"""

import copy

from ansible_collections.kueueops.aks.plugins.module_utils.common.yaml_docs import yaml

from ansible_collections.kueueops.aks.plugins.module_utils.helm import helm_values
from ansible_collections.kueueops.aks.plugins.module_utils.kueue import manager_config
from ansible_collections.kueueops.aks.plugins.module_utils.kueue.queues import convert
from ansible_collections.kueueops.aks.plugins.module_utils.kueue import kueue_catalog as catalog
from ansible_collections.kueueops.aks.plugins.module_utils.common import versions
from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import KueueOpsError
from ansible_collections.kueueops.aks.plugins.module_utils.kube.kube_import import ApiException
from ansible_collections.kueueops.aks.plugins.module_utils.kueue.kueue_api import (
    GROUP, KUEUE_KINDS, PLURALS, key_label, obj_key)
from ansible_collections.kueueops.aks.plugins.module_utils.kube.kueue_cluster import path
from ansible_collections.kueueops.aks.plugins.module_utils.kueue.kueue_crds import crd_state, kueue_crds

REFUSED, ACTION, INFO = 'refused', 'action', 'info'


class Hop:
    """One ``helm upgrade`` (or extension version) of the plan."""

    def __init__(self, source, target, migrate, why):
        self.source = source
        self.target = target
        self.migrate = migrate
        self.why = why

    def as_dict(self):
        return {'from': self.source, 'to': self.target, 'minor': catalog.minor_of(self.target),
                'migrate_storage': self.migrate, 'why': self.why}


def crossed_minors(current, target):
    """The catalog's minors after ``current``'s, up to ``target``'s (both version texts)."""
    low, high = versions.minor_key(current), versions.minor_key(target)
    return [m for m in catalog.known_minors() if low < versions.minor_key(m) <= high]


def plan_hops(current, target, published, stored):
    """(migrate_first, hops, problems) from ``current`` to ``target`` (version texts, target newer).

    ``published(minor)``: the newest release of that minor the registry (or the extension's release train) offers,
    as a version text, or None. ``stored``: the versions listed in the Kueue CRDs' ``status.storedVersions``.
    """
    rec = catalog.catalog_for(current)
    storage = rec.kueue_api_storage
    stored = set(stored or ()) or {storage}
    problems = []
    migrate_first = stored != {storage}
    if migrate_first:
        stored = {storage}
    hops = []
    position = current
    minors = crossed_minors(current, target)
    index = 0
    while index < len(minors):
        minor = minors[index]
        new_storage = catalog.catalog_for(minor).kueue_api_storage
        if new_storage == storage:
            index += 1
            continue
        stop, stop_index = None, None
        for later in range(index, len(minors)):
            candidate = target if minors[later] == catalog.minor_of(target) else published(minors[later])
            if catalog.catalog_for(minors[later]).kueue_api_storage != new_storage:
                break
            if candidate:
                stop, stop_index = candidate, later
                break
        if stop is None:
            problems.append('no published Kueue release of %s stores %s/%s, which Kueue %s switched its storage to; '
                            'the objects stored as %s could not be migrated before a later release stops serving it'
                            % (', '.join(minors[index:]), GROUP, new_storage, minor, ', '.join(sorted(stored))))
            return migrate_first, hops, problems
        why = ('Kueue %s stores %s instead of %s: stop at %s, the first published release that does, and rewrite '
               'every object there before going further' % (minor, new_storage, storage, stop))
        hops.append(Hop(position, stop, True, why))
        _check_served(position, stop, stored, problems)
        position, storage, stored = stop, new_storage, {new_storage}
        index = stop_index + 1
    if versions.parse(position).core != versions.parse(target).core:
        target_storage = catalog.catalog_for(target).kueue_api_storage
        migrate = stored != {target_storage}
        hops.append(Hop(position, target, migrate, 'the target; no minor in between changes the storage version'
                        if not migrate else 'the target, which changes the storage version'))
        _check_served(position, target, stored, problems)
    return migrate_first, hops, problems


def _check_served(source, target, stored, problems):
    served = catalog.catalog_for(target).kueue_api_served
    missing = sorted(v for v in stored if v not in served)
    if missing:
        problems.append('Kueue %s does not serve %s/%s, which Kueue CRDs still store: the hop %s -> %s would make '
                        'those objects unreadable' % (target, GROUP, ', '.join(missing), source, target))


# ------------------------------------------------------------------ actions
def _onoff(value):
    return 'on' if value else 'off'


def minor_actions(prev, rec, inventory, live):
    """What Kueue ``rec.minor`` (after ``prev``) requires of this cluster: a list of
    {minor, kind, name, severity, text}. ``inventory``: {'feature_gates': {}, 'integrations': list or None};
    ``live``: {'feature_gates': {gate: bool} set on the running manager, 'frameworks': [...] it enables}."""
    out = []
    gates = inventory.get('feature_gates') or {}
    integrations = inventory.get('integrations')
    live_gates = live.get('feature_gates') or {}
    live_frameworks = live.get('frameworks') or []
    minor = rec.minor

    def add(kind, name, severity, text):
        out.append({'minor': minor, 'kind': kind, 'name': name, 'severity': severity, 'text': text})

    for name in sorted(set(prev.feature_gates) - set(rec.feature_gates)):
        if name in gates:
            add('gate_removed', name, REFUSED, 'feature gate %s is removed in Kueue %s, and kueue_feature_gates sets it '
                '(the manager would exit on an unknown gate): remove it from kueue_feature_gates' % (name, minor))
        elif name in live_gates:
            add('gate_removed', name, ACTION, 'feature gate %s is removed in Kueue %s; the running manager sets it '
                '(%s), the upgraded one will not' % (name, minor, _onoff(live_gates[name])))
    for name in sorted(set(prev.feature_gates) & set(rec.feature_gates)):
        old, new = prev.feature_gates[name], rec.feature_gates[name]
        if old.default != new.default:
            if name in gates:
                add('gate_default', name, INFO, 'feature gate %s defaults to %s from Kueue %s; kueue_feature_gates '
                    'keeps it %s' % (name, _onoff(new.default), minor, _onoff(gates[name])))
            else:
                add('gate_default', name, ACTION, 'feature gate %s turns %s on this cluster: its default changes '
                    'from %s to %s in Kueue %s (set it in kueue_feature_gates to keep it %s)'
                    % (name, _onoff(new.default), _onoff(old.default), _onoff(new.default), minor,
                       _onoff(old.default)))
        if new.locked and not old.locked:
            value = gates.get(name)
            if isinstance(value, bool) and value != new.default:
                add('gate_locked', name, REFUSED, 'feature gate %s is locked to %s from Kueue %s (%s), and '
                    'kueue_feature_gates sets it %s: remove it from kueue_feature_gates'
                    % (name, _onoff(new.default), minor, new.stage, _onoff(value)))
            elif name in live_gates and live_gates[name] != new.default:
                add('gate_locked', name, ACTION, 'feature gate %s is locked to %s from Kueue %s; the running '
                    'manager sets it %s' % (name, _onoff(new.default), minor, _onoff(live_gates[name])))
    for name in sorted(set(prev.frameworks) - set(rec.frameworks)):
        if integrations is not None and name in integrations:
            add('framework_removed', name, REFUSED, 'integration %s is removed in Kueue %s, and kueue_integrations '
                'lists it: remove it' % (name, minor))
        elif name in live_frameworks:
            add('framework_removed', name, ACTION, 'integration %s is removed in Kueue %s; the running manager '
                'enables it, and its Jobs will no longer be queued by Kueue' % (name, minor))
    for name in sorted(set(prev.default_frameworks) - set(rec.default_frameworks)):
        if name not in rec.frameworks:
            continue
        if integrations is None and name in live_frameworks:
            add('framework_default', name, ACTION, 'integration %s is no longer enabled by default from Kueue %s; '
                'the running manager enables it: list it in kueue_integrations to keep Kueue managing its Jobs'
                % (name, minor))
        elif integrations is not None and name in integrations:
            add('framework_default', name, INFO, 'integration %s is no longer enabled by default from Kueue %s; '
                'kueue_integrations lists it' % (name, minor))
    for version in sorted(set(prev.kueue_api_served) - set(rec.kueue_api_served)):
        add('api_not_served', version, ACTION, 'Kueue %s no longer serves %s/%s: manifests, GitOps repositories '
            'and scripts that use it must declare %s/%s' % (minor, GROUP, version, GROUP, rec.kueue_api_storage))
    if prev.kueue_api_storage != rec.kueue_api_storage:
        add('storage_version', rec.kueue_api_storage, INFO, 'Kueue %s stores %s/%s instead of %s: every object is '
            'rewritten (storage migration) and each CRD\'s storedVersions trimmed'
            % (minor, GROUP, rec.kueue_api_storage, prev.kueue_api_storage))
    _chart_value_actions(rec, inventory.get('values') or {}, add, values_origin(inventory))
    for fact in rec.changelog:
        applied = _changelog_fact(fact, inventory, live)
        if not applied:
            continue
        text = '%s (Kueue %s CHANGELOG)' % (applied[1], minor)
        same = next((a for a in out if a['name'] == fact['name'] and fact['kind'] == 'note'), None)
        if same is not None:  # what the catalog's difference already says (a gate's new default), with the notes' why
            same['text'] = '%s; %s' % (same['text'], text)
            continue
        add(fact['kind'], fact['name'], applied[0], text)
    return out


def values_origin(inventory):
    """``origin(key)``: the role variable that sets ``key`` of the Helm values the hops install (``values``: the
    files of kueue_helm_values_files, kueue_helm_values over them): kueue_helm_values when it sets the key (or when
    the inventory does not say what it gave), else kueue_helm_values_files."""
    given = inventory.get('values_given')

    def origin(key):
        if given is None or manager_config.get_path(given, key, manager_config.MISSING) is not manager_config.MISSING:
            return 'kueue_helm_values'
        return 'kueue_helm_values_files'
    return origin


def _chart_value_actions(rec, values, add, origin):
    """The chart values a minor added (one info line), and those it moved or removed that the values set (named by
    ``origin``: values_origin)."""
    added = [v['key'] for v in rec.chart_values if v.get('change') == 'added']
    if added:
        add('chart_values', 'added', INFO, 'the Kueue %s chart has new values: %s' % (rec.minor, ', '.join(added)))
    for entry in rec.chart_values:
        if entry.get('change') not in ('moved', 'removed'):
            continue
        if manager_config.get_path(values, entry['key'], manager_config.MISSING) is manager_config.MISSING:
            continue
        if entry['change'] == 'removed':
            add('chart_value_removed', entry['key'], REFUSED, '%s sets %s, which the Kueue %s chart removed (%s): '
                'remove it' % (origin(entry['key']), entry['key'], rec.minor, entry.get('text', '')))
        else:
            add('chart_value_moved', entry['key'], ACTION, '%s sets %s; in the Kueue %s chart: %s%s'
                % (origin(entry['key']), entry['key'], rec.minor, entry.get('text', ''),
                   ' (unconfirmed)' if entry.get('unconfirmed') else ''))


def _changelog_fact(fact, inventory, live):
    """(severity, text) of one CHANGELOG fact of the catalog as it applies to this cluster, or None."""
    kind = fact['kind']
    config = live.get('config') or {}
    if kind == 'config_default':
        gate = fact.get('unless_gate')
        gates = dict(live.get('feature_gates') or {}, **(inventory.get('feature_gates') or {}))
        if gate and gates.get(gate):
            return INFO, '%s; feature gate %s is set on this cluster, so it stays off' % (fact['text'], gate)
        value = manager_config.get_path(config, fact['name'], manager_config.MISSING)
        if value is not manager_config.MISSING:
            return INFO, '%s; this cluster sets %s: %s' % (fact['text'], fact['name'], _text(value))
        return ACTION, '%s; this cluster does not set %s, so it takes the new default %s' % (
            fact['text'], fact['name'], _text(fact['new_default']))
    if kind == 'config_refused':
        value = manager_config.get_path(config, fact['name'], manager_config.MISSING)
        if value is manager_config.MISSING or ('values' in fact and value not in fact['values']):
            return None
        return REFUSED, '%s; the running manager\'s configuration sets %s: %s. Fix: %s' % (
            fact['text'], fact['name'], _text(value), fact['fix'])
    return ACTION if fact.get('severity') == ACTION else INFO, fact['text']


def _text(value):
    if isinstance(value, bool):
        return 'true' if value else 'false'
    return str(value)


def inventory_problems(hops, inventory, target):
    """The inventory's gates and integrations against every hop's release (each hop renders them), or against
    the target when there is no hop (an up-to-date cluster: a typo in the inventory is still a typo)."""
    problems = []
    for release in [hop.target for hop in hops] or [target]:
        for text in catalog.validate_feature_gates(release, inventory.get('feature_gates') or {}):
            problems.append('kueue_feature_gates at %s: %s' % (release, text.rstrip('.')))
        for text in catalog.validate_integrations(release, inventory.get('integrations')):
            problems.append('kueue_integrations at %s: %s' % (release, text.rstrip('.')))
    return problems


def declared_problems(hops, declared, values, target, values_from):
    """What the inventory declares that a hop's release no longer takes, as refusals naming the object or key and the
    replacement: queue objects (``declared``: ``[(origin, document)]`` of kueue_resources and kueue_resources_src)
    at a Kueue API version a hop's release does not serve; ``values`` (kueue_helm_values) whose Configuration is at a
    version its manager no longer decodes, or whose ``controllerManager.featureGates`` sets a removed gate (each named
    by ``values_from``: values_origin)."""
    problems = []
    releases = [hop.target for hop in hops] or [target]
    for release in releases:
        rec = catalog.catalog_for(release)
        for origin, doc in declared or ():
            api = str((doc or {}).get('apiVersion') or '') if isinstance(doc, dict) else ''
            group, _sep, version = api.rpartition('/')
            if group == GROUP and version not in rec.kueue_api_served:
                meta = doc.get('metadata') or {}
                named = '/'.join(str(p) for p in (meta.get('namespace'), meta.get('name')) if p)
                problems.append('%s %s (%s) is declared as %s, which Kueue %s no longer serves: declare it as %s/%s '
                                '(kueueops.aks.kueue_queues converts the fields Kueue renamed; kubectl and GitOps do '
                                'not)' % (doc.get('kind'), named, origin, api, rec.minor, GROUP, rec.kueue_api_storage))
        problems.extend(_values_problems(rec, values or {}, values_from))
    return _unique(problems)


def _values_problems(rec, values, origin):
    problems = []
    text = manager_config.get_path(values, helm_values.CONFIG_PATH)
    cfg = yaml.safe_load(text) if isinstance(text, str) and text.strip() and yaml else None
    if isinstance(cfg, dict) and cfg.get('apiVersion'):
        notes = []
        try:
            helm_values.config_for_release(rec, cfg, notes)
        except KueueOpsError as exc:
            problems.append('%s: %s; Fix: %s' % (origin(helm_values.CONFIG_PATH), exc.problem, exc.fix))
        if notes:
            problems.append('%s: %s is a %s Configuration, which the Kueue %s manager no longer decodes: write it as '
                            '%s/v1beta2 (as Kueue converts it: the apiVersion; fairSharing and waitForPodsReady without '
                            'enable)' % (origin(helm_values.CONFIG_PATH), helm_values.CONFIG_PATH, cfg['apiVersion'],
                                         rec.minor, helm_values.CONFIG_GROUP))
    gates = manager_config.get_path(values, helm_values.GATES_PATH)
    if isinstance(gates, list):
        named = dict((g.get('name'), g.get('enabled')) for g in gates if isinstance(g, dict) and g.get('name'))
        for name in sorted(named):
            removed = catalog.removed_in(name, rec.minor)
            if removed:
                problems.append('%s: controllerManager.featureGates sets %s, which Kueue %s removed (the manager '
                                'exits on startup): remove it' % (origin(helm_values.GATES_PATH), name, removed[0]))
    return problems


def _unique(items):
    out = []
    for item in items:
        if item not in out:
            out.append(item)
    return out


def lost_fields(objects, source, target):
    """Fields of live objects (read at ``source``) that the conversion to ``target`` (queues.convert) would drop:
    ['ClusterQueue/x: spec.f ...']."""
    out = []
    for obj in objects:
        problems = []
        convert(copy.deepcopy(obj), source, target, key_label(obj_key(obj)), problems)
        out.extend('%s: %s %s' % (p.obj, p.field, p.text) for p in problems)
    return out


def build(current, target, published, stored, inventory, live, objects_v1beta1=()):
    """The whole plan as data (see the module's RETURN). ``inventory`` also carries what the inventory declares
    (``declared`` queue documents, Helm ``values``) for ``declared_problems``; ``objects_v1beta1``: the live objects
    read at v1beta1, whose fields a conversion to the target's storage version would drop."""
    plan = {'current_version': current, 'target_version': target, 'up_to_date': False, 'migrate_first': False,
            'hops': [], 'actions': [], 'refusals': []}
    migrate_first, hops, problems = plan_hops(current, target, published, stored)
    plan.update(up_to_date=versions.parse(current).core == versions.parse(target).core,
                migrate_first=migrate_first, hops=[h.as_dict() for h in hops])
    refusals = list(problems)
    prev = catalog.catalog_for(current)
    for minor in crossed_minors(current, target):
        rec = catalog.catalog_for(minor)
        plan['actions'].extend(minor_actions(prev, rec, inventory, live))
        prev = rec
    refusals.extend(a['text'] for a in plan['actions'] if a['severity'] == REFUSED)
    refusals.extend(inventory_problems(hops, inventory, target))
    refusals.extend(declared_problems(hops, inventory.get('declared'), inventory.get('values'), target,
                                      values_origin(inventory)))
    if objects_v1beta1 and any(h.migrate for h in hops):
        for text in lost_fields(objects_v1beta1, 'v1beta1', catalog.catalog_for(target).kueue_api_storage):
            refusals.append('%s; the conversion to %s drops it. Fix: remove it from the object (kueue_resources) '
                            'before upgrading' % (text, catalog.catalog_for(target).kueue_api_storage))
    plan['refusals'] = refusals
    return plan


def lines(plan):
    """The plan as the lines the role prints."""
    out = []
    if plan['up_to_date']:
        out.append('Kueue %s is already the target %s%s' % (
            plan['current_version'], plan['target_version'],
            '; the CRDs still list an old storage version: storage migration only' if plan['migrate_first'] else
            ': nothing to upgrade'))
        return out
    path = [plan['current_version']] + [h['to'] for h in plan['hops']]
    out.append('Kueue %s -> %s in %d hop(s): %s'
               % (plan['current_version'], plan['target_version'], len(plan['hops']), ' -> '.join(path)))
    if plan['migrate_first']:
        out.append('first: storage migration at %s - every Kueue object rewritten at %s and each CRD\'s '
                   'storedVersions trimmed to it, before any hop (a Kueue CRD still lists an old version)'
                   % (plan['current_version'], catalog.catalog_for(plan['current_version']).kueue_api_storage))
    for number, hop in enumerate(plan['hops'], 1):
        out.append('hop %d: %s -> %s%s (%s)' % (number, hop['from'], hop['to'],
                                                ', then storage migration' if hop['migrate_storage'] else '',
                                                hop['why']))
    for action in plan['actions']:
        out.append('[%s] %s' % (action['severity'], action['text']))
    for text in plan['refusals']:
        out.append('REFUSED: %s' % text)
    return out


# ------------------------------------------------------------- the live side
class UpgradeRefused(KueueOpsError):
    """The plan has refusals: the message lists them; the result carries the whole plan."""

    def __init__(self, plan):
        KueueOpsError.__init__(
            self, 'the upgrade from Kueue %s to %s is refused before any change: %s'
            % (plan['current_version'], plan['target_version'], '; '.join(plan['refusals'])),
            field='target_version', fix='change what each refusal names, or choose another target_version')
        self.plan = plan

    def failure_result(self):
        return {'plan': self.plan, 'plan_lines': lines(self.plan), 'changed': False}


def check_direction(current, target):
    """Refuse a target the catalog does not know, an installed version it does not know, and a downgrade."""
    known = ', '.join(catalog.known_minors())
    if catalog.catalog_for(target) is None:
        raise KueueOpsError('Kueue %s is not in this collection\'s catalog (it knows %s): what upgrading to it '
                            'requires is unknown' % (target, known), field='target_version',
                            fix='choose a version of a known minor, or update the kueueops.aks collection')
    if catalog.catalog_for(current) is None:
        raise KueueOpsError('the installed Kueue %s is not in this collection\'s catalog (it knows %s), so no hop '
                            'can be planned from it' % (current, known), field='target_version',
                            fix='upgrade it to a known minor by hand first (Kueue\'s upgrade notes), or update the '
                                'kueueops.aks collection')
    if versions.parse(target).core < versions.parse(current).core:
        raise KueueOpsError('Kueue %s is older than the installed %s: downgrades are not planned (an older manager '
                            'may not read what a newer one stored)' % (target, current), field='target_version',
                            fix='give %s or a newer version (or latest); to go back, restore a backup taken before '
                                'the upgrade (playbooks/restore.yml)' % current)


def live_state(cluster, read_config):
    """What the plan needs from the cluster: the Kueue CRDs, the running manager's gates, frameworks and
    Configuration. ``read_config()``: (args, config_yaml, image) of the manager (verify.Verifier)."""
    crds = [crd_state(c) for c in kueue_crds(cluster)]
    live = {'feature_gates': {}, 'frameworks': [], 'config': {}}
    try:
        args, config_yaml, _image = read_config()
    except ApiException as exc:
        if exc.status != 404:
            raise
    else:
        gates, frameworks = manager_config.effective_from_deployment(args, config_yaml)
        loaded = yaml.safe_load(config_yaml) if config_yaml and yaml else None
        live = {'feature_gates': gates, 'frameworks': frameworks, 'config': loaded if isinstance(loaded, dict) else {}}
    return crds, live


def v1beta1_objects(cluster):
    """Every Kueue configuration object read at v1beta1 (for the fields a conversion would drop), [] when v1beta1
    is not served."""
    served = cluster.served('%s/v1beta1' % GROUP)
    if not served:
        return []
    out = []
    for kind in KUEUE_KINDS:
        if PLURALS[kind] in served:
            for obj in cluster.items(path('%s/v1beta1' % GROUP, PLURALS[kind])):
                obj.setdefault('kind', kind)
                out.append(obj)
    return out


def make_plan(current, target, published, cluster, read_config, inventory):
    """Check the direction, read the cluster, build the plan; an UpgradeRefused when it has refusals."""
    check_direction(current, target)
    crds, live = live_state(cluster, read_config)
    stored = set(v for c in crds for v in c['stored_versions'])
    crosses_storage = catalog.catalog_for(current).kueue_api_storage != catalog.catalog_for(target).kueue_api_storage
    objects = v1beta1_objects(cluster) if crosses_storage else []
    plan = build(current, target, published, stored, inventory, live, objects)
    plan['crds'] = crds
    plan['live'] = {'feature_gates': live['feature_gates'], 'frameworks': live['frameworks']}
    plan['lines'] = lines(plan)
    if plan['refusals']:
        raise UpgradeRefused(plan)
    return plan
