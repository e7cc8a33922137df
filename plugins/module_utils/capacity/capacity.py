# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Can these quotas ever be met? The capacity check of kueue_capacity_info (issue 16, item 2), pure logic.

Input: the cluster's Nodes, optionally the AKS agent pools of the managed cluster (ARM's ``agentPoolProfiles``), and
the Kueue configuration (ResourceFlavors, ClusterQueues, Cohorts, Topologies; live, or live with the declared objects
in their place: ``overlay``). Output (``check``): per ResourceFlavor, what its nodes offer and what the quotas on it
ask, and the findings:

* a flavor whose ``nodeLabels`` select no node (nor agent pool);
* a nominal quota larger than what the flavor's nodes offer (the over-commit ratio per flavor and resource);
* quota of a resource the flavor's nodes do not have at all (``nvidia.com/gpu`` on a pool without GPUs);
* a Topology level (``spec.levels[].nodeLabel``) that no node selected by the flavor carries (Topology Aware
  Scheduling then never places a Workload: upstream Kueue issues #5039, #6996);
* a Topology the flavor names that does not exist.

What a node offers is ``status.allocatable``. Cordoned nodes (``spec.unschedulable``) are left out and named. Taints
of the selected nodes with effect NoSchedule or NoExecute that the flavor's ``tolerations`` do not tolerate are
noted (a Workload's pods need their own toleration then), the nodes still counted.

Quotas, as Kueue defines them (ClusterQueue ``spec.resourceGroups[].flavors[].resources[]``): ``nominalQuota`` is
what the ClusterQueue holds; ``borrowingLimit`` the most it may borrow from the unused quota of its cohort (none:
no limit); ``lendingLimit`` the most of its unused quota it lends (none: all of it). A Cohort's own
``resourceGroups`` add nominal quota to the cohort. The flavor's total nominal quota is what can be admitted at once;
borrowing moves quota inside a cohort and never adds to the total, so the over-commit ratio is total nominal over
allocatable. Per ClusterQueue the report also gives the most it can reach with borrowing: its nominal quota plus
the smaller of its borrowing limit and what the rest of its cohort tree can lend (an upper bound: the limits of
intermediate Cohorts are not applied).

AKS agent pools (``pools``, ARM's ``agentPoolProfiles``): a pool scaled to zero has no Node objects, so each pool
is counted at its autoscaler maximum (``maxCount`` with ``enableAutoScaling``, else ``count``), and the report says
so. A node of the pool (label ``kubernetes.azure.com/agentpool``) gives the pool's per-node allocatable and labels;
a pool without nodes takes its labels from the profile (``nodeLabels``, and the labels AKS sets on every node of a
pool: ``POOL_LABELS``) and its taints from ``nodeTaints`` (plus AKS's spot taint), and its allocatable from
``VM_SIZES`` and AKS's published reservations (``aks_allocatable``). A VM size not in the table is "allocatable
unknown", never guessed.

Everything above ``gather`` is pure (no Ansible, no cluster); ``gather`` reads the cluster through
``kueue_cluster.Cluster`` (the Kueue kinds through ``reader.Exporter``, their one reader) and ARM through the function
it is given (``arm.read_managed_cluster``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from dataclasses import dataclass
from decimal import Decimal

from ansible_collections.kueueops.aks.plugins.module_utils.kueue.reader import Exporter
from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import KueueOpsError, ModuleFailure
from ansible_collections.kueueops.aks.plugins.module_utils.kueue.kueue_api import GROUP
from ansible_collections.kueueops.aks.plugins.module_utils.kube.kueue_cluster import Cluster, path
from ansible_collections.kueueops.aks.plugins.module_utils.kueue.queues import LoadError, load_inputs, parse_quantity
from ansible_collections.kueueops.aks.plugins.module_utils.kueue.report import capacity_lines

GIB = Decimal(1024) ** 3
MIB = Decimal(1024) ** 2
GPU = 'nvidia.com/gpu'
AGENTPOOL_LABEL = 'kubernetes.azure.com/agentpool'
SPOT_LABEL = 'kubernetes.azure.com/scalesetpriority'
BLOCKING_EFFECTS = ('NoSchedule', 'NoExecute')
CHECK_MODES = ('warn', 'strict', 'off')

# VM sizes: (vCPUs, memory GiB, NVIDIA GPUs), the figures Microsoft publishes per size
# (learn.microsoft.com/azure/virtual-machines/sizes: Dsv5, Esv5, NCasT4_v3, NC A100 v4, ND A100 v4).
VM_SIZES = {
    'Standard_D2s_v5': (2, 8, 0), 'Standard_D4s_v5': (4, 16, 0), 'Standard_D8s_v5': (8, 32, 0),
    'Standard_D16s_v5': (16, 64, 0), 'Standard_D32s_v5': (32, 128, 0), 'Standard_D64s_v5': (64, 256, 0),
    'Standard_D2ds_v5': (2, 8, 0), 'Standard_D4ds_v5': (4, 16, 0), 'Standard_D8ds_v5': (8, 32, 0),
    'Standard_D16ds_v5': (16, 64, 0), 'Standard_D32ds_v5': (32, 128, 0), 'Standard_D64ds_v5': (64, 256, 0),
    'Standard_E2s_v5': (2, 16, 0), 'Standard_E4s_v5': (4, 32, 0), 'Standard_E8s_v5': (8, 64, 0),
    'Standard_E16s_v5': (16, 128, 0), 'Standard_E32s_v5': (32, 256, 0), 'Standard_E64s_v5': (64, 512, 0),
    'Standard_NC4as_T4_v3': (4, 28, 1), 'Standard_NC8as_T4_v3': (8, 56, 1), 'Standard_NC16as_T4_v3': (16, 110, 1),
    'Standard_NC64as_T4_v3': (64, 440, 4),
    'Standard_NC24ads_A100_v4': (24, 220, 1), 'Standard_NC48ads_A100_v4': (48, 440, 2),
    'Standard_NC96ads_A100_v4': (96, 880, 4), 'Standard_ND96asr_v4': (96, 900, 8),
}

# AKS's kube-reserved CPU in millicores by the host's cores, as published ("Node resource reservations in AKS");
# a core count the table does not list has no published figure, so its allocatable CPU is unknown.
AKS_CPU_RESERVED_MILLI = {1: 60, 2: 100, 4: 140, 8: 180, 16: 260, 32: 420, 64: 740}
# AKS 1.29 and later (Kueue needs Kubernetes 1.34+ on AKS): memory kube-reserved = the lesser of 20 MB per max pod
# + 50 MB and 25% of the memory; eviction threshold memory.available < 100Mi. MB read as MiB (the kubelet flags are
# in Mi).
AKS_EVICTION_MIB = 100


def aks_allocatable(vm_size, max_pods):
    """The allocatable ``{resource: Decimal}`` of one AKS node of ``vm_size``, or ``(None, why)`` per resource that
    has no published figure: returns ``(allocatable, unknown)``; ``allocatable`` None when the size is unknown."""
    if vm_size not in VM_SIZES:
        return None, ['cpu', 'memory', GPU]
    cores, memory_gib, gpus = VM_SIZES[vm_size]
    out, unknown = {}, []
    if cores in AKS_CPU_RESERVED_MILLI:
        out['cpu'] = Decimal(cores) - Decimal(AKS_CPU_RESERVED_MILLI[cores]) / 1000
    else:
        unknown.append('cpu')
    memory = Decimal(memory_gib) * GIB
    if isinstance(max_pods, int) and not isinstance(max_pods, bool) and max_pods > 0:
        reserved = min((20 * max_pods + 50) * MIB, memory / 4)
        out['memory'] = memory - reserved - AKS_EVICTION_MIB * MIB
    else:
        unknown.append('memory')
    if gpus:
        out[GPU] = Decimal(gpus)
    return out, unknown


# ------------------------------------------------------------------ quantities
def quantity(value):
    """A quantity as a Decimal, or None when it is not one (the apply refuses such an object, naming it)."""
    try:
        return parse_quantity(value)
    except ValueError:
        return None


def show(resource, value):
    """``62.4Gi`` for bytes, ``15.86`` for cores and counts; ``unknown`` for None."""
    if value is None:
        return 'unknown'
    if resource == 'memory' or resource.endswith('storage') or resource.startswith('hugepages-'):
        gib = (value / GIB).quantize(Decimal('0.1'))
        text = ('%f' % gib).rstrip('0').rstrip('.')
        return text + 'Gi'
    text = ('%f' % value.quantize(Decimal('0.001'))).rstrip('0').rstrip('.')
    return text or '0'


def ratio_text(ratio):
    return '%.2fx' % ratio if ratio is not None else '-'


# ------------------------------------------------------------------ nodes and pools
def parse_taint_string(text):
    """ARM's ``nodeTaints`` entry ``key=value:Effect`` (or ``key:Effect``) as a Kubernetes taint dict."""
    rest, _sep, effect = str(text).rpartition(':')
    key, _sep, value = rest.partition('=')
    return {'key': key, 'value': value, 'effect': effect}


def tolerates(toleration, taint):
    """Kubernetes' ``Toleration.ToleratesTaint``."""
    effect = toleration.get('effect') or ''
    if effect and effect != taint.get('effect'):
        return False
    key = toleration.get('key') or ''
    if key and key != taint.get('key'):
        return False
    operator = toleration.get('operator') or 'Equal'
    if operator == 'Exists':
        return True
    if not key:  # an empty key with Equal matches nothing (the API server refuses it anyway)
        return False
    return (toleration.get('value') or '') == (taint.get('value') or '')


def taint_text(taint):
    value = taint.get('value')
    return '%s%s:%s' % (taint.get('key'), '=%s' % value if value else '', taint.get('effect'))


def allocatable_of(node):
    out = {}
    for name, value in ((node.get('status') or {}).get('allocatable') or {}).items():
        amount = quantity(value)
        if amount is not None:
            out[name] = amount
    return out


@dataclass
class Source:
    """What offers capacity: one Node, or one AKS agent pool counted at ``count`` nodes of ``per_node``
    ({resource: Decimal}, None when the VM size is unknown; ``unknown``: resources whose per-node figure is
    unknown)."""

    name: str
    labels: dict
    taints: list
    per_node: dict
    count: int = 1
    unknown: tuple = ()
    pool: str = None
    note: str = None

    def offers(self, resource):
        """What it offers of ``resource`` (Decimal), None when unknown."""
        if self.per_node is None or resource in self.unknown:
            return None
        return self.per_node.get(resource, Decimal(0)) * self.count

    def label(self):
        return 'pool %s' % self.pool if self.pool else 'node %s' % self.name


def pool_labels(profile):
    """The labels of every node of an agent pool: its ``nodeLabels`` and those AKS sets on each node of a pool
    (``kubernetes.io/hostname`` and ``topology.kubernetes.io/zone`` carry per-node values, written ``*``)."""
    name = profile.get('name') or ''
    labels = {'agentpool': name, AGENTPOOL_LABEL: name,
              'kubernetes.azure.com/mode': str(profile.get('mode') or 'User').lower(),
              'kubernetes.io/os': str(profile.get('osType') or 'Linux').lower(),
              'node.kubernetes.io/instance-type': profile.get('vmSize') or '',
              'kubernetes.io/hostname': '*', 'topology.kubernetes.io/zone': '*', 'topology.kubernetes.io/region': '*'}
    if str(profile.get('scaleSetPriority') or '').lower() == 'spot':
        labels[SPOT_LABEL] = 'spot'
    labels.update(profile.get('nodeLabels') or {})
    return labels


def pool_taints(profile):
    taints = [parse_taint_string(t) for t in profile.get('nodeTaints') or []]
    if str(profile.get('scaleSetPriority') or '').lower() == 'spot':
        spot = {'key': SPOT_LABEL, 'value': 'spot', 'effect': 'NoSchedule'}
        if spot not in taints:
            taints.append(spot)
    return taints


def sources(nodes, pools=None):
    """``(sources, notes)``: every Node not cordoned (and not of a pool in ``pools``), then every agent pool."""
    notes = []
    by_pool = {}
    out = []
    pool_names = set(p.get('name') for p in pools or [])
    for node in sorted(nodes, key=lambda n: (n.get('metadata') or {}).get('name') or ''):
        meta = node.get('metadata') or {}
        labels = meta.get('labels') or {}
        if (node.get('spec') or {}).get('unschedulable'):
            notes.append('node %s is cordoned (spec.unschedulable) and not counted' % meta.get('name'))
            continue
        pool = labels.get(AGENTPOOL_LABEL) or labels.get('agentpool')
        if pools is not None and pool in pool_names:
            by_pool.setdefault(pool, []).append(node)
            continue
        out.append(Source(meta.get('name'), labels, list((node.get('spec') or {}).get('taints') or []),
                          allocatable_of(node)))
    for profile in sorted(pools or [], key=lambda p: p.get('name') or ''):
        out.append(pool_source(profile, by_pool.get(profile.get('name'), [])))
    return out, notes


def pool_count(profile):
    """``(count, how)``: the pool's node count as counted, and how it was chosen."""
    now = profile.get('count') or 0
    if profile.get('enableAutoScaling') and isinstance(profile.get('maxCount'), int):
        return profile['maxCount'], 'counted at its autoscaler maximum %d (%d node(s) now, minimum %s)' % (
            profile['maxCount'], now, profile.get('minCount'))
    return now, 'counted at its %d node(s) (no autoscaler)' % now


def pool_source(profile, nodes):
    name = profile.get('name') or ''
    count, how = pool_count(profile)
    labels = pool_labels(profile)
    taints = pool_taints(profile)
    if nodes:
        first = nodes[0]
        merged = dict(labels)
        merged.update((first.get('metadata') or {}).get('labels') or {})
        node_taints = list((first.get('spec') or {}).get('taints') or [])
        per_node = allocatable_of(first)
        return Source(name, merged, node_taints or taints, per_node, count, pool=name,
                      note='%s (%s), %s; per node: the allocatable of node %s'
                      % (name, profile.get('vmSize'), how, (first.get('metadata') or {}).get('name')))
    per_node, unknown = aks_allocatable(profile.get('vmSize'), profile.get('maxPods'))
    if per_node is None:
        what = 'allocatable unknown: VM size %s is not in the table of kueueops.aks' % profile.get('vmSize')
    elif unknown:
        what = ('per node from VM size %s and AKS\'s reservations, %s unknown (no published reservation)'
                % (profile.get('vmSize'), ', '.join(unknown)))
    else:
        what = 'per node from VM size %s and AKS\'s reservations' % profile.get('vmSize')
    return Source(name, labels, taints, per_node, count, unknown, pool=name,
                  note='%s (%s), %s; no node now, %s' % (name, profile.get('vmSize'), how, what))


def selects(node_labels, labels):
    """Whether a flavor's ``nodeLabels`` select a node or pool with ``labels`` (every pair must match; ``*``: a
    per-node value that exists, unknown before the node does)."""
    for key, value in (node_labels or {}).items():
        if key not in labels:
            return False
        if labels[key] != '*' and labels[key] != value:
            return False
    return True


# ------------------------------------------------------------------ the configuration
def spec(obj):
    return obj.get('spec') if isinstance(obj, dict) and isinstance(obj.get('spec'), dict) else {}


def name_of(obj):
    return ((obj.get('metadata') if isinstance(obj, dict) else None) or {}).get('name')


def overlay(live, declared):
    """The configuration after an apply: the live objects with the declared ones (same kind and name) in their
    place, then the declared ones that are new. Declared documents that are not a usable object are skipped
    (kueue_queues refuses them, naming them, before it writes)."""
    out = dict(((o.get('kind'), name_of(o)), o) for o in live if isinstance(o, dict))
    for doc in declared:
        if isinstance(doc, dict) and isinstance(doc.get('kind'), str) and isinstance(name_of(doc), str):
            out[(doc['kind'], name_of(doc))] = doc
    return list(out.values())


def of_kind(objects, kind):
    return sorted((o for o in objects if isinstance(o, dict) and o.get('kind') == kind), key=lambda o: name_of(o) or '')


def quota_entries(obj):
    """``[(flavor, resource, nominal, borrowingLimit, lendingLimit)]`` of a ClusterQueue or Cohort (Decimals or
    None); entries whose quantity cannot be read are left out."""
    out = []
    for group in spec(obj).get('resourceGroups') or []:
        for flavor in (group.get('flavors') if isinstance(group, dict) else None) or []:
            if not isinstance(flavor, dict):
                continue
            for res in flavor.get('resources') or []:
                if not isinstance(res, dict) or quantity(res.get('nominalQuota')) is None:
                    continue
                borrow = quantity(res['borrowingLimit']) if res.get('borrowingLimit') is not None else None
                lend = quantity(res['lendingLimit']) if res.get('lendingLimit') is not None else None
                out.append((flavor.get('name'), res.get('name'), quantity(res.get('nominalQuota')), borrow, lend))
    return out


def cohort_root(name, parents):
    seen = set()
    while name in parents and parents[name] and name not in seen:
        seen.add(name)
        name = parents[name]
    return name


# ------------------------------------------------------------------ the check
def check(nodes, objects, pools=None):
    """The capacity report: ``{'flavors': [...], 'findings': [...], 'notes': [...]}`` (see the module's RETURN)."""
    srcs, notes = sources(nodes, pools)
    notes.extend(src.note for src in srcs if src.note)
    flavors = of_kind(objects, 'ResourceFlavor')
    topologies = dict((name_of(t), t) for t in of_kind(objects, 'Topology'))
    quotas = quotas_by_flavor(objects)
    findings = []
    report = []
    for flavor in flavors:
        fname = name_of(flavor)
        selected = [s for s in srcs if selects(spec(flavor).get('nodeLabels') or {}, s.labels)]
        entry, untolerated = flavor_entry(flavor, selected)
        resources = sorted(set(r for (f, r) in quotas if f == fname))
        if not selected:
            findings.append(no_nodes_finding(flavor, resources, quotas, pools is not None))
        for resource in resources:
            row, found = resource_row(fname, resource, quotas, selected)
            entry['resources'].append(row)
            findings.extend(found)
        findings.extend(topology_findings(entry, flavor, selected, topologies))
        if untolerated:
            notes.append('ResourceFlavor %s: taints it does not tolerate (a Workload\'s pods need their own '
                         'toleration): %s' % (fname, '; '.join(untolerated)))
        report.append(entry)
    known_flavors = set(name_of(f) for f in flavors)
    for (fname, resource) in sorted(quotas):
        if fname not in known_flavors:
            notes.append('quota on ResourceFlavor %s (%s), which does not exist: not checked' % (fname, resource))
    return {'flavors': report, 'findings': findings, 'notes': sorted(set(notes), key=notes.index)}


def quotas_by_flavor(objects):
    """{(flavor, resource): [(owner, nominal, borrowing limit, lending limit, root cohort)]} of the ClusterQueues'
    and Cohorts' quotas."""
    cohorts = of_kind(objects, 'Cohort')
    parents = dict((name_of(c), spec(c).get('parentName')) for c in cohorts)
    quotas = {}
    for kind, owners in (('ClusterQueue', of_kind(objects, 'ClusterQueue')), ('Cohort', cohorts)):
        for owner in owners:
            cohort = (spec(owner).get('cohortName') or spec(owner).get('cohort')) if kind == 'ClusterQueue' \
                else name_of(owner)
            root = cohort_root(cohort, parents) if cohort else None
            for flavor, resource, nominal, borrow, lend in quota_entries(owner):
                quotas.setdefault((flavor, resource), []).append(
                    ('%s %s' % (kind, name_of(owner)), nominal, borrow, lend, root))
    return quotas


def flavor_entry(flavor, selected):
    """``(entry, untolerated)``: the report of ResourceFlavor ``flavor`` on the sources it ``selected`` (its
    ``resources`` still empty), and the taints of those it does not tolerate."""
    fspec = spec(flavor)
    tolerations = [t for t in fspec.get('tolerations') or [] if isinstance(t, dict)]
    untolerated = sorted(set('%s on %s' % (taint_text(t), s.label()) for s in selected for t in s.taints
                             if isinstance(t, dict) and t.get('effect') in BLOCKING_EFFECTS
                             and not any(tolerates(tol, t) for tol in tolerations)))
    entry = {'name': name_of(flavor), 'node_labels': fspec.get('nodeLabels') or {},
             'nodes': [s.name for s in selected if not s.pool], 'pools': [s.pool for s in selected if s.pool],
             'node_count': sum(s.count for s in selected), 'untolerated_taints': untolerated, 'resources': []}
    return entry, untolerated


def no_nodes_finding(flavor, resources, quotas, with_pools):
    fname = name_of(flavor)
    node_labels = spec(flavor).get('nodeLabels') or {}
    selector = ', '.join('%s=%s' % kv for kv in sorted(node_labels.items())) or '(none: every node)'
    asked = '; '.join('%s %s' % (r, show(r, sum(q[1] for q in quotas[(fname, r)]))) for r in resources)
    lost = '; the quota on it (%s) can never be used' % asked if asked else ''
    return finding('no-nodes', fname, None, 'ResourceFlavor %s selects no node%s: no node carries its nodeLabels %s%s'
                   % (fname, ' nor agent pool' if with_pools else '', selector, lost))


def resource_row(fname, resource, quotas, selected):
    """``(row, findings)``: the quota on ``resource`` of ResourceFlavor ``fname`` against what its ``selected``
    sources offer."""
    entries = quotas[(fname, resource)]
    nominal = sum(e[1] for e in entries)
    offered = [s.offers(resource) for s in selected]
    allocatable = None if any(o is None for o in offered) else sum(offered, Decimal(0))
    known = sum((o for o in offered if o is not None), Decimal(0))
    ratio = (nominal / allocatable) if allocatable else None
    row = {'resource': resource, 'nominal': show(resource, nominal),
           'allocatable': show(resource, allocatable), 'ratio': float(ratio) if ratio is not None else None,
           'queues': queue_rows(fname, resource, entries, quotas)}
    if allocatable is None and known:
        row['allocatable_known'] = show(resource, known)
    owners = ', '.join('%s %s' % (e[0].split(' ', 1)[1], show(resource, e[1])) for e in entries)
    if not selected or nominal <= 0:
        return row, []
    if allocatable is not None and allocatable == 0:
        return row, [finding('missing-resource', fname, resource, 'ResourceFlavor %s: quota %s %s (%s) but its nodes '
                             '(%s) have no %s' % (fname, resource, show(resource, nominal), owners,
                                                  describe(selected), resource))]
    if ratio is not None and ratio > 1:
        return row, [finding('over-commit', fname, resource, 'ResourceFlavor %s, %s: nominal quota %s (%s) is %s '
                             'what its nodes offer, %s (%s)'
                             % (fname, resource, show(resource, nominal), owners, ratio_text(ratio),
                                show(resource, allocatable), describe(selected)))]
    if allocatable is None and known < nominal:
        return row, [finding('unknown', fname, resource, 'ResourceFlavor %s, %s: nominal quota %s; what its nodes '
                             'offer is unknown (%s)' % (fname, resource, show(resource, nominal),
                                                        describe(selected)), 'note')]
    return row, []


def topology_findings(entry, flavor, selected, topologies):
    """The Topology ResourceFlavor ``flavor`` names: it exists, and its ``selected`` sources carry every level's
    label (written into ``entry['topology']``)."""
    fname = name_of(flavor)
    topology = spec(flavor).get('topologyName')
    if not topology:
        return []
    entry['topology'] = {'name': topology, 'missing_levels': []}
    if topology not in topologies:
        return [finding('topology', fname, None, 'ResourceFlavor %s names Topology %s, which does not exist'
                        % (fname, topology))]
    if not selected:
        return []
    levels = [lv.get('nodeLabel') for lv in spec(topologies[topology]).get('levels') or [] if isinstance(lv, dict)]
    missing = [lv for lv in levels if not any(lv in s.labels for s in selected)]
    entry['topology']['missing_levels'] = missing
    return [finding('topology', fname, None, 'Topology %s level %s: no node of ResourceFlavor %s carries the label '
                    '%s, so Topology Aware Scheduling cannot place a Workload there' % (topology, level, fname, level))
            for level in missing]


def finding(kind, flavor, resource, message, severity='warning'):
    return {'kind': kind, 'flavor': flavor, 'resource': resource, 'severity': severity, 'message': message}


def describe(selected):
    shown = ', '.join('%s%s' % (s.label(), ' x%d' % s.count if s.pool else '') for s in selected[:5])
    return shown + (', and %d more' % (len(selected) - 5) if len(selected) > 5 else '')


def queue_rows(flavor, resource, entries, quotas):
    """Per owner: nominal, limits, and the most it can reach with borrowing (nominal + min(borrowingLimit, what the
    rest of its cohort tree lends of this flavor and resource))."""
    lendable = {}
    for owner, nominal, borrow, lend, root in quotas.get((flavor, resource), []):
        if root:
            lendable.setdefault(root, []).append((owner, min(nominal, lend) if lend is not None else nominal))
    rows = []
    for owner, nominal, borrow, lend, root in entries:
        row = {'owner': owner, 'nominal': show(resource, nominal),
               'borrowing_limit': show(resource, borrow) if borrow is not None else None,
               'lending_limit': show(resource, lend) if lend is not None else None, 'cohort': root}
        if owner.startswith('ClusterQueue '):
            pool = sum((amount for other, amount in lendable.get(root, []) if other != owner), Decimal(0))
            reach = nominal + (min(borrow, pool) if borrow is not None else pool) if root else nominal
            row['max_with_borrowing'] = show(resource, reach)
        rows.append(row)
    return rows


def problems(result):
    """The findings that are warnings (a ``strict`` check fails on them)."""
    return [f for f in result['findings'] if f['severity'] == 'warning']


# ------------------------------------------------------------------ the reads (kueue_capacity_info)
CONFIG_KINDS = ('ResourceFlavor', 'ClusterQueue', 'Cohort', 'Topology')


def check_params(params):
    """What is refused before anything is read."""
    if bool(params.get('resource_group')) != bool(params.get('cluster_name')):
        given, missing = (('resource_group', 'cluster_name') if params.get('resource_group')
                          else ('cluster_name', 'resource_group'))
        raise KueueOpsError('%s is set but %s is not; the agent pools are read from ARM only with both' % (given, missing),
                            field=missing, fix='set both resource_group and cluster_name (kueue_aks_resource_group '
                                               'and kueue_aks_cluster_name), or neither to count the Nodes only')


def declared_objects(params):
    """The declared documents of ``resources`` and ``src`` (``None`` when neither is given)."""
    if not params.get('resources') and not params.get('src'):
        return None
    try:
        items = load_inputs(params.get('resources'), params.get('src'))
    except LoadError as exc:
        raise KueueOpsError(exc.text, field=exc.field, fix='give a readable YAML file or folder of Kueue manifests '
                                                           '(the same as kueue_queues src)')
    return [doc for _origin, doc in items if isinstance(doc, dict) and doc.get('kind') in CONFIG_KINDS]


def live_objects(api_client, notes):
    """The live ResourceFlavors, ClusterQueues, Cohorts and Topologies (none, noted, when Kueue's API is not served)."""
    exporter = Exporter(api_client, 'kueue-system')
    try:
        exporter.discover()
    except KueueOpsError:
        notes.append('the cluster does not serve %s: no live Kueue configuration was read' % GROUP)
        return []
    out = []
    for kind in CONFIG_KINDS:
        if kind in exporter.served:
            out.extend(dict(o, kind=kind) for o in exporter.iter_raw(kind))
    return out


def gather(api_client, params, read_cluster=None):
    """kueue_capacity_info: read the Nodes, the Kueue configuration (live, or live with the declared objects in
    place) and, with ``resource_group``/``cluster_name``, the agent pools (``read_cluster(params)``: the managed
    cluster's ARM JSON); check; return the module's result (``strict``: a warning fails it)."""
    check_params(params)
    declared = declared_objects(params)
    notes = []
    cluster = Cluster(api_client)
    nodes = cluster.items(path('v1', 'nodes'))
    objects = live_objects(api_client, notes)
    if declared is not None:
        objects = overlay(objects, declared)
    pools = None
    if params.get('resource_group'):
        managed = read_cluster(params) or {}
        pools = (managed.get('properties') or {}).get('agentPoolProfiles') or []
    result = check(nodes, objects, pools)
    result['notes'] = notes + result['notes']
    result.update(changed=False, configuration='declared' if declared is not None else 'live',
                  agent_pools=[p.get('name') for p in pools] if pools is not None else None,
                  node_count=len(nodes))
    result['ok'] = not problems(result)
    result['report'] = capacity_lines(result)
    if params.get('strict') and not result['ok']:
        found = problems(result)
        raise ModuleFailure(**dict(result, failed=True, msg=KueueOpsError(
            '%d capacity finding(s) and the check is strict: %s' % (len(found), ' '.join(
                '(%d) %s.' % (idx + 1, f['message']) for idx, f in enumerate(found))),
            field='strict', fix='correct the quotas or the ResourceFlavors\' nodeLabels, add the nodes (or the agent '
                                'pool), or set strict=false to only warn').message()))
    return result
