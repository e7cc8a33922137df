# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Declarative Kueue queue configuration: the pure logic behind kueue_queues.

Nothing here talks to a cluster or imports Ansible:

* loading Kueue manifests from a ``resources`` list and/or ``src`` (a file of
  YAML documents, or a folder of ``.yml``/``.yaml`` files, read in sorted order);
* normalising every object to the apiVersion the cluster serves, converting the
  fields Kueue renamed between ``v1beta1`` and ``v1beta2`` and refusing, with the
  field named, what has no equivalent;
* cross-reference validation that Kueue itself does not reject (every problem is
  collected, none stops the others);
* dependency order, prune candidates and change detection.

The renames are taken from Kueue's own conversion code
(``apis/kueue/v1beta1/*_conversion.go`` and ``zz_generated.conversion.go`` of
sigs.k8s.io/kueue v0.18.4 and v0.19.2, identical in both):

=================  =====================================  =====================================
kind               v1beta1                                v1beta2
=================  =====================================  =====================================
ClusterQueue       ``spec.cohort``                        ``spec.cohortName``
ClusterQueue       ``spec.admissionChecks: [name]``       ``spec.admissionChecksStrategy``
                                                          ``.admissionChecks: [{name: name}]``
ClusterQueue       ``flavorFungibility.whenCanBorrow:``   ``MayStopSearch``
                   ``Borrow`` (deprecated alias)
ClusterQueue       ``flavorFungibility.whenCanPreempt:``  ``MayStopSearch``
                   ``Preempt`` (deprecated alias)
ClusterQueue       (none)                                 ``spec.concurrentAdmissionPolicy``
AdmissionCheck     ``spec.retryDelayMinutes``             (none; deprecated since Kueue 0.8)

MultiKueueCluster  ``spec.kubeConfig``,                   ``spec.clusterSource.kubeConfig``,
                   ``spec.clusterProfileRef``             ``spec.clusterSource.clusterProfileRef``
MultiKueueConfig   (none)                                 ``spec.quotaManagement``
=================  =====================================  =====================================

(the MultiKueue rows from ``multikueue_conversion.go`` and ``multikueue_types.go``
of v0.19.2; v0.18.4's v1beta2 MultiKueueCluster is the same.)

Cohort (``spec.parentName``), LocalQueue, ResourceFlavor, Topology,
WorkloadPriorityClass and ProvisioningRequestConfig specs are
identical in both versions.

``v1alpha1``: manifests written for older Kueue. Cohort was ``v1alpha1`` up to Kueue
0.12 (``v1beta1`` from 0.13, PR #5595: "The ``.spec.parent`` in Cohort ``v1alpha1`` was
replaced with ``.spec.parentName``"), Topology up to 0.13 (``v1beta1`` from 0.14, same
fields). From ``apis/kueue/v1alpha1/cohort_types.go`` (0.9 .. 0.12) and
``topology_types.go`` / ``tas_types.go`` (0.9 .. 0.13):

=========  ===============================================  ==========================
kind       v1alpha1                                         v1beta1 / v1beta2
=========  ===============================================  ==========================
Cohort     ``spec.parent``                                  ``spec.parentName``
Cohort     ``spec.resourceGroups`` (v1beta1 ResourceGroup)  the same
Cohort     ``spec.fairSharing`` (v1beta1 FairSharing)       the same
Topology   ``spec.levels[].nodeLabel``                      the same
=========  ===============================================  ==========================

Every v1alpha1 field has an equivalent, so such manifests are converted; what a
v1alpha1 API server would have dropped (a field that is not in v1alpha1, such as
``spec.parentName`` in a v1alpha1 Cohort) is refused, naming the v1alpha1 field to
write or the apiVersion to declare. Kueue 0.13 serves Topology only at ``v1alpha1``:
a Topology is converted to it there. Other kinds were never ``v1alpha1`` in the
Kueue versions supported (0.13 .. 0.19); ``spec.parent`` in a v1beta1/v1beta2 Cohort
is refused with the hint.

MultiKueue. A MultiKueueCluster names the Secret holding a worker cluster's
kubeconfig (key ``kubeconfig``) in the namespace Kueue runs in. Those Secrets,
and only those, are accepted as input (core ``v1`` Secret in the Kueue
namespace) so that a backup holding them can be restored; they are applied
before the MultiKueueClusters. Their data never leaves this code: diffs show
``VALUE_REDACTED_BY_KUEUEOPS`` (errors.REDACTED) and ``secret_values`` lists what a caller must mask.
"""

import base64
import binascii
import copy
import json
import os
import re
from collections import namedtuple
from decimal import Decimal, InvalidOperation

from ansible_collections.kueueops.aks.plugins.module_utils.common.yaml_docs import yaml

from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import REDACTED
from ansible_collections.kueueops.aks.plugins.module_utils.kueue import multikueue
from ansible_collections.kueueops.aks.plugins.module_utils.kueue.kueue_api import (
    ACTIVE, ALPHA, ALPHA_KINDS, BY_NAME, EXPORT_METADATA, GROUP, KIND_ORDER, LAST_APPLIED, NAMESPACED, PLURALS,
    VERSIONS, condition, key_label, kind_rank, obj_key, obj_label, strip_server_metadata)
from ansible_collections.kueueops.aks.plugins.module_utils.common import yaml_docs

FIELD_MANAGER = 'kueueops'
RESOURCE_IN_USE_FINALIZER = 'kueue.x-k8s.io/resource-in-use'
AKS_PREFIX = 'aks-'

MULTIKUEUE_CONTROLLER = multikueue.CONTROLLER
# Kueue's ProvisioningRequest admission check controller needs cluster-autoscaler's ProvisioningRequest
# API (Kueue 0.13 .. 0.19 import autoscaling.x-k8s.io/v1 and skip the controller when the manager starts
# without it: cmd/kueue/main.go, ServerSupportsProvisioningRequest). MultiKueue's API is Kueue's own.
PROVISIONING_REQUEST_CONTROLLER = GROUP + '/provisioning-request'
PROVISIONING_REQUEST_API = ('autoscaling.x-k8s.io', 'v1', 'provisioningrequests')
MULTIKUEUE_SECRET_KEY = multikueue.SECRET_KEY
_SECRET_FIELDS = ('apiVersion', 'kind', 'metadata', 'data', 'stringData', 'type', 'immutable')
# Kinds that Kueue reports an Active condition for (their kueue_api row's ``active``).
ACTIVE_KINDS = tuple(ACTIVE)


class Problem:
    """One thing wrong with the input: which object, which field, what, and (when it is kept apart from the
    text, as for a refusal of the API server that server_errors.py translated) the fix."""

    def __init__(self, obj, field, text, fix=None):
        self.obj = obj
        self.field = field
        self.text = str(text).rstrip('. ')
        self.fix = str(fix).rstrip('. ') if fix else None

    def __str__(self):
        parts = [p for p in (self.obj, self.field) if p]
        text = '%s; %s' % (self.text, self.fix) if self.fix else self.text
        return '%s: %s' % (': '.join(parts), text) if parts else text

    def __repr__(self):
        return '<Problem %s>' % self

    def as_dict(self):
        out = {'object': self.obj, 'field': self.field, 'problem': self.text}
        if self.fix:
            out['fix'] = self.fix
        return out


class LoadError(Exception):
    """The input cannot be read at all (missing file, unparsable YAML)."""

    def __init__(self, field, text):
        super().__init__(text)
        self.field = field
        self.text = text


# ----------------------------------------------------------------- quantities
# The grammar of k8s.io/apimachinery's resource.ParseQuantity (quantity.go, suffix.go): ASCII digits
# only, binary suffixes Ki..Ei, decimal suffixes n, u, m, k, M, G, T, P, E, or an integer exponent.
_QUANTITY_RE = re.compile(
    r'\A(?P<num>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))'
    r'(?P<suffix>[eE][+-]?[0-9]+|Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|)\Z'
)
_BINARY = {'Ki': 1, 'Mi': 2, 'Gi': 3, 'Ti': 4, 'Pi': 5, 'Ei': 6}
_DECIMAL = {'n': -9, 'u': -6, 'm': -3, '': 0, 'k': 3, 'M': 6, 'G': 9, 'T': 12, 'P': 15, 'E': 18}


def parse_quantity(value):
    """Parse a Kubernetes resource quantity (``resource.Quantity`` grammar) into a Decimal.

    Accepts YAML integers and floats as the API server does (JSON numbers).
    Raises ``ValueError`` with a readable reason.
    """
    if isinstance(value, bool) or value is None:
        raise ValueError('must be a quantity such as 10, 500m or 64Gi, got %r' % (value,))
    if isinstance(value, (int, float)):
        value = repr(value) if isinstance(value, float) else str(value)
        if 'inf' in value or 'nan' in value:
            raise ValueError('must be a finite quantity, got %s' % value)
    if not isinstance(value, str):
        raise ValueError('must be a quantity such as 10, 500m or 64Gi, got a %s' % type(value).__name__)
    text = value.strip()
    if text != value or not text:
        raise ValueError('%r is not a quantity (no spaces; e.g. 10, 500m, 64Gi)' % value)
    match = _QUANTITY_RE.match(text)
    if not match:
        raise ValueError('%r is not a Kubernetes quantity (a number with an optional suffix '
                         'n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei or an exponent such as 1e3)' % value)
    try:
        number = Decimal(match.group('num'))
    except InvalidOperation:  # pragma: no cover - the regex only lets numbers through
        raise ValueError('%r is not a number' % value)
    suffix = match.group('suffix')
    if suffix in _BINARY:
        return number * (Decimal(1024) ** _BINARY[suffix])
    if suffix in _DECIMAL:
        return number.scaleb(_DECIMAL[suffix])
    exponent = int(suffix[1:])
    if abs(exponent) > 100:
        raise ValueError('%r: exponent out of range' % value)
    return number.scaleb(exponent)


# -------------------------------------------------------------------- loading
def _documents_of_file(path, field):
    if yaml is None:  # pragma: no cover
        raise LoadError(field, 'PyYAML is required to read %s' % path)
    try:
        with open(path, 'r', encoding='utf-8') as handle:
            docs = yaml_docs.load_all(handle)
    except OSError as exc:
        raise LoadError(field, 'cannot read %s: %s' % (path, exc.strerror or exc))
    except UnicodeDecodeError as exc:
        raise LoadError(field, 'cannot read %s: it is not UTF-8 text (byte %d: %s)' % (path, exc.start, exc.reason))
    except yaml.YAMLError as exc:
        raise LoadError(field, '%s is not valid YAML: %s' % (path, str(exc).replace('\n', ' ')))
    out = []
    for idx, doc in enumerate(docs):
        if doc is None:
            continue
        out.append(('%s#%d' % (path, idx), doc))
    return out


def _expand_lists(items):
    """Expand ``kind: List`` / ``*List`` documents (``kubectl get -o yaml`` output)."""
    out = []
    for origin, doc in items:
        if isinstance(doc, dict) and isinstance(doc.get('items'), list) and str(doc.get('kind', '')).endswith('List'):
            for idx, item in enumerate(doc['items']):
                out.append(('%s.items[%d]' % (origin, idx), item))
        else:
            out.append((origin, doc))
    return out


def load_inputs(resources=None, src=None):
    """Every input document as ``(origin, document)``, resources first, then src.

    ``src`` is a file (several YAML documents allowed) or a folder whose
    ``.yml``/``.yaml`` files are read recursively in sorted path order.
    Raises ``LoadError`` when src cannot be read.
    """
    items = []
    for idx, doc in enumerate(resources or []):
        items.append(('resources[%d]' % idx, doc))
    if src:
        if os.path.isdir(src):
            files = []
            for root, dirs, names in os.walk(src):
                dirs.sort()
                for name in names:
                    if name.endswith(('.yml', '.yaml')) and not name.startswith('.'):
                        files.append(os.path.join(root, name))
            if not files:
                raise LoadError('src', 'folder %s holds no .yml or .yaml files' % src)
            for path in sorted(files, key=lambda p: os.path.relpath(p, src)):
                items.extend(_documents_of_file(path, 'src'))
        elif os.path.isfile(src):
            items.extend(_documents_of_file(src, 'src'))
        else:
            raise LoadError('src', '%s does not exist' % src)
    return _expand_lists(items)


# ---------------------------------------------------------------- conversion
# spec.flavorFungibility: v1beta2's MayStopSearch is called Borrow (whenCanBorrow) and Preempt (whenCanPreempt) by
# v1beta1, the only names older Kueue knows.
_FUNGIBILITY_V1BETA1 = (('whenCanBorrow', 'Borrow'), ('whenCanPreempt', 'Preempt'))


def _convert_fungibility(spec, to_v1beta2, _label, _problems):
    fungibility = spec.get('flavorFungibility')
    if not isinstance(fungibility, dict):
        return
    for field, v1beta1 in _FUNGIBILITY_V1BETA1:
        old, new = (v1beta1, 'MayStopSearch') if to_v1beta2 else ('MayStopSearch', v1beta1)
        if fungibility.get(field) == old:
            fungibility[field] = new


def _convert_admission_checks(spec, to_v1beta2, label, problems):
    """v1beta1's ``spec.admissionChecks: [name]`` is v1beta2's ``spec.admissionChecksStrategy.admissionChecks:
    [{name: name}]`` (v1beta1 has both)."""
    if not to_v1beta2 or 'admissionChecks' not in spec:
        return
    checks = spec.pop('admissionChecks')
    if spec.get('admissionChecksStrategy'):
        problems.append(Problem(label, 'spec.admissionChecks',
                                'both spec.admissionChecks and spec.admissionChecksStrategy are set; '
                                'v1beta2 only has admissionChecksStrategy: move the checks there'))
    elif checks:
        if not isinstance(checks, list) or not all(isinstance(c, str) for c in checks):
            problems.append(Problem(label, 'spec.admissionChecks', 'must be a list of AdmissionCheck names'))
        else:
            spec['admissionChecksStrategy'] = {'admissionChecks': [{'name': c} for c in checks]}


# What changes a value between v1beta1 and v1beta2, not only a field's name (kueue_api's Rename and Only rows say
# those), by kind: each ``(spec, to_v1beta2, label, problems)``, run after the renames and before the drops.
_CONVERTERS = {'ClusterQueue': (_convert_admission_checks, _convert_fungibility)}


def _rename(spec, old, new, label, problems, old_version, new_version):
    if old in spec and new in spec:
        if spec[old] != spec[new]:
            problems.append(Problem(label, 'spec.%s' % old,
                                    'both spec.%s and spec.%s are set with different values; %s calls it %s'
                                    % (old, new, new_version, new)))
            return
        del spec[old]
    elif old in spec:
        spec[new] = spec.pop(old)


def _other_version_names(row, source):
    """{field: the name ``source`` (v1beta1 or v1beta2) writes instead, or None} of the spec fields of the other
    version that an object declared at ``source`` must not carry."""
    names = {}
    if source not in VERSIONS:
        return names
    for rename in row.renames:
        if rename.version == 'v1beta1' and source == 'v1beta1':
            names.setdefault(rename.new.split('.')[0], rename.old)
        elif rename.version == 'v1beta1':
            names.setdefault(rename.old, rename.new)
    for only in row.only:
        if only.version != source:
            names.setdefault(only.field, only.instead)
    return names


def _alpha_refused(row, spec, source, label, problems):
    """Refuse the v1alpha1 name of a field in a v1beta1/v1beta2 object, and the newer name in a v1alpha1 object
    (then True: the object cannot be converted)."""
    for rename in row.renames:
        if rename.version != ALPHA:
            continue
        if source != ALPHA and rename.old in spec:
            problems.append(Problem(label, 'spec.%s' % rename.old,
                                    'not a field of %s in v1beta1/v1beta2 (it was the v1alpha1 name); write spec.%s, '
                                    'or declare apiVersion %s/%s' % (row.name, rename.new, GROUP, ALPHA)))
        if source == ALPHA and rename.new in spec:
            problems.append(Problem(label, 'spec.%s' % rename.new,
                                    'not a field of %s/%s %s (a v1alpha1 API server drops it); write spec.%s, or '
                                    'declare apiVersion %s/v1beta2' % (GROUP, ALPHA, row.name, rename.old, GROUP)))
            return True
    return False


def _convert_alpha(row, spec, source, target):
    """To or from v1alpha1: Topology has the same fields in every version, Cohort's parent is renamed."""
    for rename in row.renames:
        if rename.version != ALPHA:
            continue
        if source == ALPHA and rename.old in spec:
            spec[rename.new] = spec.pop(rename.old)
        elif target == ALPHA and rename.new in spec:
            spec[rename.old] = spec.pop(rename.new)


def _move_renamed(spec, renames, label, problems, source, target):
    """Move the renamed fields from ``source``'s names to ``target``'s; fields renamed into a mapping
    (MultiKueueCluster's ``clusterSource``) move in and out of it together."""
    to_v1beta2 = source == 'v1beta1'
    nested = {}
    for rename in renames:
        parent, _dot, child = rename.new.rpartition('.')
        if parent:
            nested.setdefault(parent, []).append((rename.old, child))
        elif to_v1beta2:
            _rename(spec, rename.old, rename.new, label, problems, source, target)
        else:
            _rename(spec, rename.new, rename.old, label, problems, source, target)
    for parent, fields in nested.items():
        if to_v1beta2:
            moved = dict((child, spec.pop(old)) for old, child in fields if old in spec)
            if moved:
                spec[parent] = moved
            continue
        inner = spec.pop(parent, None)
        if isinstance(inner, dict):
            for old, child in fields:
                if child in inner:
                    spec[old] = inner[child]


def _drop_only(spec, only, label, problems):
    """Convert away from the one version that has the field ``only`` names: drop it, and refuse a value that is
    not a harmless default (``harmless`` None: keep it, refused)."""
    if only.field not in spec:
        return
    if only.harmless is not None and spec.pop(only.field) in only.harmless:
        return
    other = VERSIONS[1] if only.version == VERSIONS[0] else VERSIONS[0]
    why = ' (%s); remove it' % only.note if only.note else \
        ', the only version this cluster serves; remove it or upgrade Kueue'
    problems.append(Problem(label, 'spec.%s' % only.field, 'has no equivalent in %s/%s%s' % (GROUP, other, why)))


def convert(obj, source, target, label, problems):
    """Convert a Kueue object's spec in place from ``source`` to ``target`` apiVersion, as its kueue_api row says
    (renamed fields, fields one version lacks) and its converters of ``_CONVERTERS`` do."""
    row = BY_NAME.get(obj.get('kind'))
    spec = obj.get('spec')
    if not isinstance(spec, dict) or row is None:
        return
    for name, proper in _other_version_names(row, source).items():
        if name in spec:
            write = '; write spec.%s (or change apiVersion)' % proper if proper else ''
            problems.append(Problem(label, 'spec.%s' % name,
                                    'not a field of %s/%s %s%s' % (GROUP, source, row.name, write)))
    if _alpha_refused(row, spec, source, label, problems) or source == target:
        return
    if ALPHA in (source, target):
        _convert_alpha(row, spec, source, target)
        return
    _move_renamed(spec, [r for r in row.renames if r.version == 'v1beta1'], label, problems, source, target)
    for converter in _CONVERTERS.get(row.name, ()):
        converter(spec, source == 'v1beta1', label, problems)
    for only in row.only:
        if only.version == source:
            _drop_only(spec, only, label, problems)


def normalise(origin, doc, served, problems, kueue_namespace='kueue-system'):
    """Validate the shape of one input document and convert it to the served version.

    ``served`` maps kind -> served version (``v1beta2``/``v1beta1``). Returns the
    object to apply, or None when it cannot be used (problems were added).
    """
    if not isinstance(doc, dict):
        problems.append(Problem(origin, None, 'must be a mapping (a Kueue manifest), got %s'
                                % type(doc).__name__))
        return None
    kind = doc.get('kind')
    meta = doc.get('metadata')
    name = meta.get('name') if isinstance(meta, dict) else None
    label = '%s %s' % (kind or 'object', name) if name else '%s (%s)' % (kind or 'object', origin)
    if kind == 'Secret':
        return normalise_secret(origin, doc, kueue_namespace, problems)
    if kind not in PLURALS:
        problems.append(Problem(label, 'kind', 'unknown kind %r; supported: %s' % (kind, ', '.join(KIND_ORDER))))
        return None
    api_version = doc.get('apiVersion')
    if not isinstance(api_version, str) or '/' not in api_version:
        problems.append(Problem(label, 'apiVersion', 'must be %s/v1beta2 or %s/v1beta1, got %r'
                                % (GROUP, GROUP, api_version)))
        return None
    group, version = api_version.split('/', 1)
    if group == GROUP and version == ALPHA and kind not in ALPHA_KINDS:
        problems.append(Problem(label, 'apiVersion', '%r: Kueue never served %s at v1alpha1 (only %s, in Kueue '
                                '0.13 and older); write %s/v1beta2 or %s/v1beta1'
                                % (api_version, kind, ' and '.join(ALPHA_KINDS), GROUP, GROUP)))
        return None
    if group != GROUP or version not in VERSIONS + (ALPHA,):
        problems.append(Problem(label, 'apiVersion', '%r is not supported; write %s/v1beta2 or %s/v1beta1'
                                % (api_version, GROUP, GROUP)))
        return None
    if not isinstance(meta, dict):
        problems.append(Problem(label, 'metadata', 'missing: give metadata.name (and metadata.namespace for a '
                                'LocalQueue)'))
        return None
    if not isinstance(name, str) or not name:
        problems.append(Problem(label, 'metadata.name', 'missing: give every object a metadata.name'))
        return None
    namespace = meta.get('namespace')
    if kind in NAMESPACED:
        if not isinstance(namespace, str) or not namespace:
            label = '%s %s' % (kind, name)
            problems.append(Problem(label, 'metadata.namespace', 'a %s needs a namespace' % kind))
            return None
        label = '%s %s/%s' % (kind, namespace, name)
    elif namespace:
        problems.append(Problem(label, 'metadata.namespace', '%s is cluster-scoped; remove the namespace' % kind))
        return None
    extra = sorted(set(doc) - set(['apiVersion', 'kind', 'metadata', 'spec', 'status']))
    if extra:
        problems.append(Problem(label, extra[0], 'unknown top-level field(s) %s' % ', '.join(extra)))
        return None
    if 'spec' in doc and doc['spec'] is not None and not isinstance(doc['spec'], dict):
        problems.append(Problem(label, 'spec', 'must be a mapping'))
        return None

    obj = {'apiVersion': api_version, 'kind': kind, 'metadata': copy.deepcopy(meta)}
    if isinstance(doc.get('spec'), dict):
        obj['spec'] = copy.deepcopy(doc['spec'])
    strip_server_metadata(obj['metadata'])

    target = served.get(kind)
    if target is None:
        problems.append(Problem(label, 'kind', 'the cluster does not serve %s at %s/v1beta2 or v1beta1 '
                                '(is Kueue installed, and recent enough?)' % (kind, GROUP)))
        return None
    before = len(problems)
    convert(obj, version, target, label, problems)
    if len(problems) > before:
        return None
    obj['apiVersion'] = '%s/%s' % (GROUP, target)
    return stringify_quantities(obj)


def normalise_secret(origin, doc, namespace, problems):
    """A Secret of the input (one a MultiKueueCluster uses), as it is applied.

    Only core ``v1`` Secrets in the Kueue ``namespace`` (taken when not set), with
    the ``kubeconfig`` key Kueue reads; ``stringData`` is folded into ``data``
    (base64), so the applied object is what the API server stores. No problem
    text ever contains a value of the Secret.
    """
    meta = doc.get('metadata')
    name = meta.get('name') if isinstance(meta, dict) else None
    label = 'Secret %s/%s' % (namespace, name) if name else 'Secret (%s)' % origin
    if doc.get('apiVersion') != 'v1':
        problems.append(Problem(label, 'apiVersion', 'a Secret is apiVersion v1, got %r' % (doc.get('apiVersion'),)))
        return None
    if not isinstance(meta, dict) or not isinstance(name, str) or not name:
        problems.append(Problem(label, 'metadata.name', 'missing: give every object a metadata.name'))
        return None
    given = meta.get('namespace') or namespace
    if given != namespace:
        problems.append(Problem('Secret %s/%s' % (given, name), 'metadata.namespace',
                                'the Secrets MultiKueueClusters use live in the namespace Kueue runs in (%s); set '
                                'metadata.namespace to %s, or kueue_namespace to the namespace Kueue runs in'
                                % (namespace, namespace)))
        return None
    extra = sorted(set(doc) - set(_SECRET_FIELDS))
    if extra:
        problems.append(Problem(label, extra[0], 'not a field of a Secret (%s)' % ', '.join(extra)))
        return None
    data = {}
    for field in ('data', 'stringData'):
        values = doc.get(field)
        if values is None:
            continue
        if not isinstance(values, dict):
            problems.append(Problem(label, field, 'must be a mapping of key to value'))
            return None
        for key in sorted(values, key=str):
            value = values[key]
            if not isinstance(key, str) or not isinstance(value, str):
                problems.append(Problem(label, '%s.%s' % (field, key), 'must be a string (value not shown)'))
                return None
            if field == 'data':
                try:
                    base64.b64decode(value, validate=True)
                except (binascii.Error, ValueError):
                    problems.append(Problem(label, 'data.%s' % key, 'is not valid base64 (value not shown); put '
                                                                    'plain text in stringData instead'))
                    return None
                data[key] = value
            else:
                data[key] = base64.b64encode(value.encode('utf-8')).decode('ascii')
    if MULTIKUEUE_SECRET_KEY not in data:
        problems.append(Problem(label, 'data.%s' % MULTIKUEUE_SECRET_KEY,
                                'missing: Kueue reads the worker cluster\'s kubeconfig from the key %r'
                                % MULTIKUEUE_SECRET_KEY))
        return None
    obj = {'apiVersion': 'v1', 'kind': 'Secret', 'metadata': copy.deepcopy(meta), 'data': data}
    obj['metadata']['namespace'] = namespace
    for field in ('type', 'immutable'):
        if field in doc:
            obj[field] = doc[field]
    strip_server_metadata(obj['metadata'], EXPORT_METADATA)
    return obj


def secret_values(objects):
    """Every value of the Secrets among ``objects``, base64 and decoded: what output must never show."""
    out = set()
    for obj in objects or ():
        if not isinstance(obj, dict) or obj.get('kind') != 'Secret':
            continue
        for field in ('data', 'stringData'):
            for value in (obj.get(field) or {}).values():
                if not isinstance(value, str) or not value:
                    continue
                out.add(value)
                if field == 'data':
                    try:
                        decoded = base64.b64decode(value).decode('utf-8')
                    except (binascii.Error, ValueError):
                        continue
                    if decoded:
                        out.add(decoded)
    return out


def redact_secret(obj, other=None):
    """A Secret with every data value replaced by ``REDACTED`` (``REDACTED (changed)`` where it
    differs from ``other``'s). Other kinds are returned as they are."""
    if not isinstance(obj, dict) or obj.get('kind') != 'Secret':
        return obj
    out = copy.deepcopy(obj)
    theirs = (other or {}).get('data') or {} if isinstance(other, dict) else {}
    for field in ('data', 'stringData'):
        if isinstance(out.get(field), dict):
            out[field] = dict((k, REDACTED if other is None or theirs.get(k) == v else REDACTED + ' (changed)')
                              for k, v in out[field].items())
    return out


def _top_level(doc):
    """The fields beside ``spec`` that ``doc`` sets and its kind has (its kueue_api row's ``top_level``:
    WorkloadPriorityClass's ``value`` and ``description``)."""
    kind = doc.get('kind') if isinstance(doc, dict) else None
    fields = BY_NAME[kind].top_level if isinstance(kind, str) and kind in BY_NAME else ()
    return {k: doc[k] for k in fields if k in doc}


def normalise_all(items, served, problems, kueue_namespace='kueue-system'):
    """Normalise every ``(origin, doc)``; report duplicates. Returns the usable objects."""
    out = []
    seen = {}
    for origin, doc in items:
        top = _top_level(doc)
        obj = normalise(origin, {k: v for k, v in doc.items() if k not in top} if top else doc, served, problems,
                        kueue_namespace)
        if obj is None:
            continue
        obj.update(copy.deepcopy(top))
        key = obj_key(obj)
        if key in seen:
            problems.append(Problem(key_label(key), 'metadata.name',
                                    'declared twice (%s and %s); keep one of them' % (seen[key], origin)))
            continue
        seen[key] = origin
        out.append(obj)
    return out


# ---------------------------------------------------------------- validation
def cohort_of(obj):
    spec = obj.get('spec') or {}
    return spec.get('cohortName') or spec.get('cohort') or None


def _list_of(value):
    """``value`` when it is a list, else [] (a wrong type is the schema check's to report, not a crash here)."""
    return value if isinstance(value, list) else []


def reference_values(obj, path):
    """(field, value) of every place ``path`` (a kueue_api Ref's: dotted, ``[]`` for each item of a list) reaches in
    ``obj``; what is not a mapping on the way gives the value None, what is not a list gives no item."""
    places = [('', obj)]
    for part in path.split('.'):
        name = part[:-2] if part.endswith('[]') else part
        step = []
        for field, value in places:
            value = value.get(name) if isinstance(value, dict) else None
            field = '%s.%s' % (field, name) if field else name
            if part.endswith('[]'):
                step.extend(('%s[%d]' % (field, idx), item) for idx, item in enumerate(_list_of(value)))
            else:
                step.append((field, value))
        places = step
    return places


def referenced(obj, ref):
    """(field, name) of each object of ``ref.kind`` that ``obj`` names through ``ref`` (a kueue_api Ref)."""
    out = []
    for field, value in reference_values(obj, ref.path):
        if ref.names == 'typed':
            if isinstance(value, dict) and value.get('kind') == ref.kind and value.get('apiGroup') in (GROUP, None) \
                    and value.get('name'):
                out.append((field + '.name', value['name']))
        elif isinstance(value, str) if ref.names == 'string' else value:
            out.append((field, value))
    return out


def admission_check_names(obj):
    """(field, name) of the AdmissionChecks a ClusterQueue lists (v1beta2's strategy, v1beta1's list)."""
    return [pair for ref in BY_NAME['ClusterQueue'].refs if ref.kind == 'AdmissionCheck'
            for pair in referenced(obj, ref)]


def _quantity_fields(obj):
    """(field path, value) of every quantity in a ClusterQueue/Cohort/LocalQueue spec."""
    spec = obj.get('spec') or {}
    out = []
    groups = spec.get('resourceGroups')
    if isinstance(groups, list):
        for g, group in enumerate(groups):
            flavors = group.get('flavors') if isinstance(group, dict) else None
            for f, flavor in enumerate(flavors if isinstance(flavors, list) else []):
                resources = flavor.get('resources') if isinstance(flavor, dict) else None
                for r, res in enumerate(resources if isinstance(resources, list) else []):
                    if not isinstance(res, dict):
                        continue
                    for field in ('nominalQuota', 'borrowingLimit', 'lendingLimit'):
                        if field in res:
                            out.append(('spec.resourceGroups[%d].flavors[%d].resources[%d].%s' % (g, f, r, field),
                                        res[field]))
    fair = spec.get('fairSharing')
    if isinstance(fair, dict) and 'weight' in fair:
        out.append(('spec.fairSharing.weight', fair['weight']))
    return out


def kubeconfig_ref(obj):
    """(field path, kubeconfig dict) of a MultiKueueCluster (v1beta2 ``spec.clusterSource.kubeConfig``,
    v1beta1 ``spec.kubeConfig``), or (None, None)."""
    spec = obj.get('spec') or {}
    source = spec.get('clusterSource')
    if isinstance(source, dict) and isinstance(source.get('kubeConfig'), dict):
        return 'spec.clusterSource.kubeConfig', source['kubeConfig']
    if isinstance(spec.get('kubeConfig'), dict):
        return 'spec.kubeConfig', spec['kubeConfig']
    return None, None


def secret_ref(obj):
    """(field, Secret name) a MultiKueueCluster reads its kubeconfig from, or (None, None) when it
    uses a file on the manager's disk (``locationType: Path``) or a ClusterProfile."""
    field, kubeconfig = kubeconfig_ref(obj)
    if not kubeconfig or not isinstance(kubeconfig.get('location'), str) or not kubeconfig['location']:
        return None, None
    if (kubeconfig.get('locationType') or 'Secret') != 'Secret':
        return None, None
    return field + '.location', kubeconfig['location']


def multikueue_secret_refs(clusters, namespace):
    """{(namespace, Secret name): [MultiKueueCluster names]} of the Secrets ``clusters`` reference (v1beta2's
    ``spec.clusterSource.kubeConfig``, v1beta1's ``spec.kubeConfig``; a ``locationType: Path`` names a file on the
    manager's disk, not a Secret)."""
    refs = {}
    for obj in clusters:
        _field, name = secret_ref(obj)
        if name:
            refs.setdefault((namespace, name), []).append(obj_key(obj)[2])
    return dict((k, sorted(v)) for k, v in refs.items())


def find_cohort_cycles(parents):
    """Cycles in a ``{cohort: parent}`` graph, each as a list starting at its smallest name."""
    cycles = []
    done = set()
    for start in sorted(parents):
        path = []
        index = {}
        node = start
        while node is not None and node not in done and node not in index:
            index[node] = len(path)
            path.append(node)
            node = parents.get(node)
        if node is not None and node in index:
            cycle = path[index[node]:]
            pivot = cycle.index(min(cycle))
            cycles.append(cycle[pivot:] + cycle[:pivot])
        done.update(path)
    return cycles


def provisioning_request_checks(objects):
    """The AdmissionChecks of ``objects`` that Kueue's ProvisioningRequest controller serves."""
    return [o for o in objects if o.get('kind') == 'AdmissionCheck'
            and (o.get('spec') or {}).get('controllerName') == PROVISIONING_REQUEST_CONTROLLER]


_VALIDATION_OPTIONS = namedtuple('ValidationOptions', 'create_namespaces aks_managed pruned kueue_namespace '
                                 'provisioning_request_api kubeconfigs_checked',
                                 defaults=(False, False, None, 'kueue-system', None, ()))


class ValidationOptions(_VALIDATION_OPTIONS):
    """What a run of ``validate`` knows besides the objects and the cluster: whether namespaces are created, whether
    the cluster is AKS-managed, the keys this run would prune, the namespace Kueue runs in, whether the cluster
    serves the ProvisioningRequest API (None: not looked up), and the Secrets whose kubeconfigs were checked
    already (those the ``multikueue`` option generated, checked under its own field names)."""

    __slots__ = ()


def validate(objects, live, namespaces, **options):
    """Cross-reference and content checks; returns a list of Problems (all of them).

    ``live`` maps kind -> {key: live object} (the cluster now); ``namespaces`` is the
    set of existing namespace names; ``options`` the fields of ``ValidationOptions`` (``pruned``: the keys that
    this run would delete; ``provisioning_request_api`` False refuses the AdmissionChecks that need it).
    What each kind references is its kueue_api row's ``refs``; the rest of a kind's checks are ``_CONTENT_CHECKS``.
    The kubeconfig of every declared Secret a MultiKueueCluster uses is checked as MultiKueue checks it
    (``multikueue.kubeconfig_problems``), but for the Secret names in ``kubeconfigs_checked``.
    Implicit cohorts are legal in Kueue: a ClusterQueue's ``cohortName`` or a
    Cohort's ``parentName`` may name a cohort that has no Cohort object (Kueue's
    hierarchy manager creates it on the fly), so they are not problems; see
    ``implicit_cohorts``.
    """
    world = _World(objects, live, namespaces, ValidationOptions(**options))
    problems = []
    for obj in objects:
        problems.extend(world.object_problems(obj))
    return problems + _cohort_cycle_problems(world.declared.get('Cohort', {}), live.get('Cohort') or {}, world.pruned)


class _World:
    """What ``validate`` checks each object against: the declared objects, the cluster (``live``; what this run
    prunes is gone), the namespaces and the run's ``ValidationOptions``."""

    def __init__(self, objects, live, namespaces, options):
        self.live = live
        self.namespaces = namespaces
        self.options = options
        self.pruned = set(options.pruned or ())
        self.declared = {}
        for obj in objects:
            self.declared.setdefault(obj['kind'], {})[obj_key(obj)] = obj
        # The MultiKueueClusters there will be (declared, or live and not pruned), for the Secrets.
        clusters = dict((k, o) for k, o in (live.get('MultiKueueCluster') or {}).items() if k not in self.pruned)
        clusters.update(self.declared.get('MultiKueueCluster', {}))
        self.secret_users = multikueue_secret_refs(clusters.values(), options.kueue_namespace)

    def exists(self, kind, name, namespace=''):
        if not isinstance(name, str):
            return False  # missing_text says what it must be
        key = (kind, namespace, name)
        if key in self.declared.get(kind, {}):
            return True
        return key in (self.live.get(kind) or {}) and key not in self.pruned

    def missing_text(self, kind, name, namespace=''):
        if not isinstance(name, str):
            return 'must be the name of a %s (a string), got %r' % (kind, name)
        key = (kind, namespace, name)
        if key in (self.live.get(kind) or {}) and key in self.pruned:
            return '%s %r is not in the input and would be pruned; declare it again or drop the reference' % (
                kind, name)
        return '%s %r does not exist in the input or the cluster; declare it in resources/src or correct the name' % (
            kind, name)

    def reference(self, label, field, kind, name):
        """[] when the object ``name`` of ``kind`` exists (declared, or live and not pruned), else its Problem."""
        return [] if self.exists(kind, name) else [Problem(label, field, self.missing_text(kind, name))]

    def object_problems(self, obj):
        kind = obj['kind']
        label = obj_label(obj)
        if kind == 'Secret':
            return _secret_problems(self, obj, label)
        problems = []
        if self.options.aks_managed and obj['metadata']['name'].startswith(AKS_PREFIX):
            problems.append(Problem(label, 'metadata.name',
                                    'names starting with %r belong to the AKS managed Kueue extension, which '
                                    'owns and reconciles them; choose another name' % AKS_PREFIX))
        problems.extend(_quantity_problems(obj, label))
        for ref in getattr(BY_NAME.get(kind), 'refs', ()):
            if ref.missing:
                problems.extend(Problem(label, field, 'missing: %s' % ref.missing)
                                for field, value in reference_values(obj, ref.path) if not value)
            for field, name in referenced(obj, ref):
                problems.extend(self.reference(label, field, ref.kind, name))
        for check in _CONTENT_CHECKS.get(kind, ()):
            problems.extend(check(self, obj, label))
        return problems


def _quantity_problems(obj, label):
    problems = []
    for field, value in _quantity_fields(obj):
        try:
            quantity = parse_quantity(value)
        except ValueError as exc:
            problems.append(Problem(label, field, str(exc)))
        else:
            if quantity < 0:
                problems.append(Problem(label, field, 'must not be negative, got %s; give 0 or more' % value))
    return problems


def _secret_problems(world, obj, label):
    """A declared Secret: one a MultiKueueCluster uses, holding a kubeconfig MultiKueue can read, in the namespace
    Kueue runs in."""
    problems = []
    namespace = world.options.kueue_namespace
    name = obj['metadata']['name']
    if (namespace, name) not in world.secret_users:
        problems.append(Problem(label, 'kind', 'no MultiKueueCluster of the input or the cluster uses this '
                                'Secret; kueue_queues applies only the Secrets MultiKueueClusters read their '
                                'kubeconfig from (spec.clusterSource.kubeConfig.location); apply other '
                                'Secrets with kubernetes.core.k8s'))
    elif name not in world.options.kubeconfigs_checked:
        problems.extend(_kubeconfig_problems(obj, label))
    if namespace not in world.namespaces:
        problems.append(Problem(label, 'metadata.namespace',
                                'namespace %r (where Kueue runs) does not exist; install Kueue first' % namespace))
    return problems


def _local_queue_namespace(world, obj, label):
    namespace = obj['metadata']['namespace']
    if namespace in world.namespaces or world.options.create_namespaces:
        return []
    return [Problem(label, 'metadata.namespace',
                    'namespace %r does not exist; create it first or set create_namespaces: true' % namespace)]


def _provisioning_request_api(world, obj, label):
    """An AdmissionCheck of the ProvisioningRequest controller on a cluster without that API."""
    spec = obj.get('spec') or {}
    if world.options.provisioning_request_api is not False or \
            spec.get('controllerName') != PROVISIONING_REQUEST_CONTROLLER:
        return []
    group, version, plural = PROVISIONING_REQUEST_API
    return [Problem(label, 'spec.controllerName',
                    '%s needs the ProvisioningRequest API (%s/%s %s), which this cluster does '
                    'not serve: the check would never become Active and the ClusterQueues using '
                    'it would admit nothing. Install cluster-autoscaler\'s ProvisioningRequest '
                    'CRD and an autoscaler that serves it (then restart the Kueue manager, which '
                    'looks for the API when it starts), or remove this AdmissionCheck and its '
                    'references' % (PROVISIONING_REQUEST_CONTROLLER, group, version, plural))]


def _multikueue_parameters(world, obj, label):
    """An AdmissionCheck of the MultiKueue controller names an existing MultiKueueConfig in its parameters."""
    spec = obj.get('spec') or {}
    if spec.get('controllerName') != MULTIKUEUE_CONTROLLER:
        return []
    params = spec.get('parameters')
    if not isinstance(params, dict) or params.get('kind') != 'MultiKueueConfig' \
            or params.get('apiGroup') != GROUP or not params.get('name'):
        return [Problem(label, 'spec.parameters',
                        'an AdmissionCheck of controller %s needs parameters {apiGroup: %s, '
                        'kind: MultiKueueConfig, name: <MultiKueueConfig>}' % (MULTIKUEUE_CONTROLLER, GROUP))]
    return world.reference(label, 'spec.parameters.name', 'MultiKueueConfig', params['name'])


def _multikueue_secret(world, obj, label):
    """The Secret a MultiKueueCluster reads its kubeconfig from exists, in the namespace Kueue runs in, with the key
    Kueue reads."""
    namespace = world.options.kueue_namespace
    field, secret = secret_ref(obj)
    if not secret:
        return []
    if not world.exists('Secret', secret, namespace):
        return [Problem(label, field,
                        'Secret %s/%s does not exist in the input or the cluster; create it with the '
                        'worker cluster\'s kubeconfig under the key %r (or restore a backup taken '
                        'with include_secrets: true)' % (namespace, secret, MULTIKUEUE_SECRET_KEY))]
    if ('Secret', namespace, secret) in world.declared.get('Secret', {}):
        return []
    stored = (world.live.get('Secret') or {}).get(('Secret', namespace, secret)) or {}
    if MULTIKUEUE_SECRET_KEY in (stored.get('data') or {}):
        return []
    return [Problem(label, field, 'Secret %s/%s has no key %r, where Kueue reads the kubeconfig'
                    % (namespace, secret, MULTIKUEUE_SECRET_KEY))]


# A kind's checks besides its references (kueue_api's refs), each ``(world, obj, label)`` -> [Problem], in order.
_CONTENT_CHECKS = {
    'LocalQueue': (_local_queue_namespace,),
    'AdmissionCheck': (_provisioning_request_api, _multikueue_parameters),
    'MultiKueueCluster': (_multikueue_secret,),
}


def _cohort_cycle_problems(declared, live, pruned):
    """Cycles of the Cohort hierarchy (``declared`` and ``live``: {key: Cohort}); the declared Cohorts override the
    live ones."""
    problems = []
    parents = {}
    for key, obj in live.items():
        if key not in pruned:
            parents[key[2]] = (obj.get('spec') or {}).get('parentName') or None
    for key, obj in declared.items():
        parent = (obj.get('spec') or {}).get('parentName') or None
        if parent is not None and not isinstance(parent, str):
            problems.append(Problem(key_label(key), 'spec.parentName',
                                    'must be the name of the parent cohort (a string), got %r' % (parent,)))
            parent = None
        parents[key[2]] = parent
    for cycle in find_cohort_cycles(parents):
        ring = ' -> '.join(cycle + [cycle[0]])
        for member in cycle:
            if ('Cohort', '', member) in declared:
                problems.append(Problem('Cohort %s' % member, 'spec.parentName',
                                        'cohort cycle %s; Kueue deactivates every ClusterQueue under a cycle'
                                        % ring))
                break
        else:
            problems.append(Problem('Cohort %s' % cycle[0], 'spec.parentName',
                                    'cohort cycle %s in the cluster' % ring))
    return problems


def _kubeconfig_problems(secret, label):
    """Problems of the kubeconfig a declared Secret holds (key ``kubeconfig``, base64 in ``data``), as MultiKueue
    would judge it. No value is ever quoted."""
    field = 'data.%s' % MULTIKUEUE_SECRET_KEY
    try:
        text = base64.b64decode((secret.get('data') or {}).get(MULTIKUEUE_SECRET_KEY) or '').decode('utf-8')
    except (binascii.Error, ValueError):
        return [Problem(label, field, 'is not UTF-8 text (value not shown); a kubeconfig is YAML text',
                        multikueue.KUBECONFIG_FIX)]
    return [Problem(label, field, multikueue.kubeconfig_text(kfield, why), multikueue.KUBECONFIG_FIX)
            for kfield, why in multikueue.kubeconfig_problems(text)]


def implicit_cohorts(objects, live):
    """Cohort names referenced (cohortName / parentName) that no Cohort object backs."""
    backed = set(k[2] for k in (live.get('Cohort') or {}))
    backed.update(o['metadata']['name'] for o in objects if o['kind'] == 'Cohort')
    named = set()
    for obj in objects:
        if obj['kind'] == 'ClusterQueue' and isinstance(cohort_of(obj), str):
            named.add(cohort_of(obj))
        if obj['kind'] == 'Cohort' and isinstance((obj.get('spec') or {}).get('parentName'), str):
            named.add(obj['spec']['parentName'])
    return sorted(named - backed)


# ------------------------------------------------------------------- ordering
def dependency_order(objects):
    """Objects sorted by kind dependency, then namespace and name."""
    return sorted(objects, key=lambda o: (kind_rank(o['kind']),) + obj_key(o)[1:])


def group_by_kind(objects, reverse=False):
    """[(kind, [objects])] in dependency order (or reverse), only kinds present."""
    groups = {}
    for obj in objects:
        groups.setdefault(obj['kind'], []).append(obj)
    kinds = [k for k in KIND_ORDER if k in groups]
    if reverse:
        kinds.reverse()
    return [(k, sorted(groups[k], key=lambda o: obj_key(o)[1:])) for k in kinds]


# ------------------------------------------------------------------ ownership
def managed_by(obj, manager=FIELD_MANAGER):
    """Whether ``manager`` owns fields of ``obj`` through server-side apply."""
    for entry in (obj.get('metadata') or {}).get('managedFields') or []:
        if entry.get('manager') == manager and entry.get('operation') == 'Apply':
            return True
    return False


def prune_candidates(live, desired_keys, manager=FIELD_MANAGER, aks_managed=False, objects=(),
                     kueue_namespace='kueue-system'):
    """Live objects applied by ``manager`` that the input no longer declares,
    in reverse dependency order. Never ``aks-`` objects on a managed cluster, never
    a Secret that a remaining MultiKueueCluster (of ``objects`` or the cluster) still uses."""
    out = []
    for kind in reversed(KIND_ORDER):
        for key in sorted(live.get(kind) or {}):
            obj = live[kind][key]
            if key in desired_keys or not managed_by(obj, manager):
                continue
            if aks_managed and key[2].startswith(AKS_PREFIX):
                continue
            out.append(key)
    gone = set(out)
    remaining = [o for k, o in (live.get('MultiKueueCluster') or {}).items() if k not in gone]
    remaining += [o for o in objects if o.get('kind') == 'MultiKueueCluster']
    used = multikueue_secret_refs(remaining, kueue_namespace)
    return [k for k in out if k[0] != 'Secret' or (k[1], k[2]) not in used]


# --------------------------------------------------------- change detection
def own_apply_entry(obj, manager=FIELD_MANAGER):
    """The ``managedFields`` entry of ``manager``'s server-side apply of the object (not a subresource), or None."""
    for entry in (obj.get('metadata') or {}).get('managedFields') or []:
        if entry.get('manager') == manager and entry.get('operation') == 'Apply' and not entry.get('subresource'):
            return entry
    return None


def _own_entries(obj, manager):
    entry = own_apply_entry(obj, manager)
    return None if entry is None else (entry.get('apiVersion'), json.dumps(entry.get('fieldsV1'), sort_keys=True))


def comparable(obj):
    """The part of an object a server-side apply can change: everything but status and
    server bookkeeping (managedFields, resourceVersion, generation, timestamps)."""
    if obj is None:
        return None
    out = copy.deepcopy(obj)
    out.pop('status', None)
    meta = out.get('metadata') or {}
    for field in ('managedFields', 'resourceVersion', 'generation', 'creationTimestamp', 'uid', 'selfLink'):
        meta.pop(field, None)
    return out


def canonical_quantities(obj):
    """``obj`` with every Kueue quantity replaced by its normalised numeric value.

    The API server keeps a quantity as written (``32``, ``"32"``, ``"32000m"``) until
    a controller rewrites the object through Go types, which serialises it in
    canonical form; Kueue's controller does so when it adds its finalizer. The
    same amount in another spelling is not a change.
    """
    for field, value in _quantity_fields(obj):
        try:
            number = parse_quantity(value)
        except ValueError:
            continue
        _set_field(obj, field, 'quantity:%s' % number.normalize())
    return obj


def _set_field(obj, field, value):
    """Set ``spec.a[0].b``-style ``field`` of ``obj`` (the path exists)."""
    parent, index = None, None
    target = obj
    for part in re.findall(r'[A-Za-z]+|\[\d+\]', field):
        parent = target
        index = int(part[1:-1]) if part.startswith('[') else part
        target = target[index]
    parent[index] = value


def stringify_quantities(obj):
    """Write YAML numbers given as quantities as strings (``32`` -> ``"32"``), the form
    the API server returns, so that no later rewrite changes their type."""
    for field, value in _quantity_fields(obj):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            try:
                parse_quantity(value)
            except ValueError:
                continue
            _set_field(obj, field, repr(value) if isinstance(value, float) else str(value))
    return obj


def apply_changes(dry_run_result, live, manager=FIELD_MANAGER):
    """Whether the real apply would change anything, given its server-side dry-run result.

    Returns ``'created'``, ``'updated'`` or ``'unchanged'``. The dry-run result is the
    object as the API server would store it (schema defaults, Kueue's mutating
    webhook, merge with fields of other managers, removal of fields we no longer
    declare); it differs from the live object exactly when the apply writes. Our
    own managedFields entry is compared too: taking over a field (same value, new
    owner) is a write and is needed for later removals and pruning to work.
    """
    if live is None:
        return 'created'
    if canonical_quantities(comparable(dry_run_result)) != canonical_quantities(comparable(live)):
        return 'updated'
    if _own_entries(dry_run_result, manager) != _own_entries(live, manager):
        return 'updated'
    return 'unchanged'


def diff_view(obj, other=None):
    """Shown in --diff: the object without server bookkeeping and status; a Secret's values
    redacted (``other``: the object it is compared with, to mark changed values)."""
    view = redact_secret(comparable(obj), comparable(other))
    if view is None:
        return {}
    meta = view.get('metadata') or {}
    annotations = meta.get('annotations')
    if isinstance(annotations, dict):
        annotations.pop(LAST_APPLIED, None)
    return view


# ------------------------------------------------------------------- queues
def active_state(obj):
    """(active, reason/message) from the Active condition of a ClusterQueue/LocalQueue."""
    cond = condition(obj, 'Active')
    if cond is None:
        return False, 'no Active condition yet (is the Kueue manager running?)'
    if cond.get('status') == 'True':
        return True, cond.get('reason') or 'Ready'
    reason = cond.get('reason') or 'Unknown'
    message = cond.get('message')
    return False, '%s: %s' % (reason, message) if message else reason
