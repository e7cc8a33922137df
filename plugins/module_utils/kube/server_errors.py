# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""What the API server refuses, told the way the collection's own checks tell it: the exact field path, the
problem in plain words, and the fix. Pure logic: no cluster, no Ansible.

A server-side apply dry-run of a Kueue object is refused in four shapes, each read here:

* **typed patch** (HTTP 500 from server-side apply, before any validation): ``failed to create typed patch
  object (kueue.x-k8s.io/v1beta2, Kind=WorkloadPriorityClass): .value: expected numeric (int or float), got
  string`` (structured-merge-diff's ``typed/validate.go``; a path element of an associative list reads
  ``[name="cpu"]``, turned back into the index of the declared object). ``field not declared in schema`` is an
  unknown field (``fieldValidation=Strict``).
* **structural schema** (HTTP 422 with ``details.causes``): Required, Unsupported value (an enum), a pattern,
  minimum/maximum, length, items; the cause's ``field`` is the path.
* **CEL rules** of Kueue's CRDs (HTTP 422 with causes): the cause's ``field`` is where the rule sits (often
  ``spec``) and its message is the rule's; ``RULES`` below narrows the path to the field the rule is about and
  says the fix.
* **Kueue's validating webhooks** (HTTP 403, ``admission webhook "..." denied the request: <field errors>``, no
  causes): every ``<path>: <Invalid value|Required value|Forbidden|...>: ...`` of the aggregate is read.

Every CEL rule and webhook check of the Kueue minors in ``tests/unit/data/kueue_rules_data.py`` (test data
generated from Kueue's source) is matched by an entry of ``RULES`` (a unit test keeps it so). What matches nothing
still gets the field path the server reports and the server's own words.
"""

import difflib
import re

TYPED_PATCH = 'failed to create typed patch object'
_TYPED_PREFIX = re.compile(r'failed to create typed patch object \([^)]*\):\s*')
_TYPED_ERROR = re.compile(r'^(?P<path>\.\S*?):\s+(?P<what>.+)$')
_SMD_ELEMENT = re.compile(r'\.(?P<field>[^.\[]+)|\[(?P<index>\d+)\]|\[(?P<keys>[^\]]*)\]')
_EXPECTED = re.compile(r'expected (?P<want>numeric \(int or float\)|string|boolean|map|list|any scalar), got')
_WEBHOOK = re.compile(r'admission webhook "(?P<hook>[^"]+)" denied the request:\s*(?P<errors>.*)$', re.S)
_FIELD_ERROR_TYPES = ('Invalid value', 'Required value', 'Forbidden', 'Unsupported value', 'Duplicate value',
                      'Too many', 'Too long', 'Not found', 'Internal error')
_FIELD_ERROR = re.compile(r'(?P<field>[A-Za-z][\w.\[\]"=/-]*): (?P<type>%s)(?::\s*|$)' % '|'.join(_FIELD_ERROR_TYPES))
# The value is optional: Kubernetes 1.35+ leaves an object's value ("object") out of a CEL rule's Invalid value.
_INVALID_VALUE = re.compile(r'^(?:Invalid value: )?(?:(?P<value>"(?:[^"\\]|\\.)*"|\S+): )?(?P<detail>.+)$', re.S)

_WANT = {
    'numeric (int or float)': ('a number', 'write a number without quotes'),
    'string': ('a string', 'write it as a string (in quotes when it looks like a number or a boolean)'),
    'boolean': ('true or false', 'write true or false without quotes'),
    'map': ('a mapping (field: value lines)', 'write it as a mapping of fields'),
    'list': ('a list', "write it as a list ('- ' items), even with one item"),
    'any scalar': ('a single value', 'write a single value, not a list or a mapping'),
}

IMMUTABLE_FIX = ('it cannot be changed on an existing object: keep the current value, or delete the object and '
                 'create it again (state: absent, then present)')
WORKLOAD_FIX = ('Workloads are written by Kueue and its job integrations; restore them from an unedited kueue_backup '
                'rather than editing them')
LIMIT_FIX = ('set spec.cohortName (a ClusterQueue) or spec.parentName (a Cohort) to the cohort to borrow from and '
             'lend to, or remove the limit')


def _mismatched_flavor(obj):
    """The resources of the first flavor whose count differs from its resource group's coveredResources."""
    spec = obj.get('spec') if isinstance(obj, dict) else None
    for i, group in enumerate((spec or {}).get('resourceGroups') or []):
        if not isinstance(group, dict):
            continue
        covered = len(group.get('coveredResources') or [])
        for j, flavor in enumerate(group.get('flavors') or []):
            if isinstance(flavor, dict) and len(flavor.get('resources') or []) != covered:
                return ['spec.resourceGroups[%d].flavors[%d].resources' % (i, j)]
    return []


# (pattern matched against the server's detail; where the rule is about: field paths with [*] wildcards tried in
# order, or a function of the object, or None for the reported field; the problem in plain words (None: the
# server's); the fix)
RULES = [
    # ---- ClusterQueue / Cohort: CEL rules and webhook checks
    (r'^borrowingLimit must be nil when cohort is empty$',
     ['spec.resourceGroups[*].flavors[*].resources[*].borrowingLimit'],
     'borrowingLimit needs a cohort to borrow from (spec.cohortName is empty)', LIMIT_FIX),
    (r'^must be nil when (cohort|parent) is empty$', None,
     'a borrowing or lending limit needs a cohort (spec.cohortName or spec.parentName is empty)', LIMIT_FIX),
    (r'^flavors must have the same number of resources as the coveredResources$',
     _mismatched_flavor, None,
     'give every flavor of the resource group one resources entry per name in coveredResources, in the same order'),
    (r'^must match the name in coveredResources$', None, None,
     'list the resources of each flavor in the order of the resource group\'s coveredResources'),
    (r'^preference can only be set when both whenCanBorrow and whenCanPreempt are TryNextFlavor$|'
     r'^preference ".*" requires both whenCanBorrow and whenCanPreempt to be TryNextFlavor$',
     ['spec.flavorFungibility.preference'], None,
     'set spec.flavorFungibility.whenCanBorrow and whenCanPreempt to TryNextFlavor, or remove preference'),
    (r'^reclaimWithinCohort=Never and borrowWithinCohort\.Policy!=Never$',
     ['spec.preemption.borrowWithinCohort.policy', 'spec.preemption'],
     'borrowWithinCohort.policy other than Never needs reclaimWithinCohort other than Never',
     'set spec.preemption.reclaimWithinCohort to Any or LowerPriority, or borrowWithinCohort.policy to Never'),
    (r'^must be less than or equal to the nominalQuota$', None, 'lendingLimit is above the nominalQuota',
     'give a lendingLimit no higher than the nominalQuota of the same resource'),
    (r'^must be greater than or equal to 0$|^expr:apimachineryvalidation\.IsNegativeErrorMsg$', None,
     'must not be negative', 'give 0 or more'),
    (r'^When not 0, weight must be > 10e-9$', None, 'a fair-sharing weight must be 0 or above 10e-9',
     'give 0 (never borrow) or a weight of at least 0.000000001'),
    (r'^must be one of the flavors defined in the ClusterQueue: .*$', None, None,
     'name a flavor of this ClusterQueue\'s resourceGroups, or remove it from onFlavors'),
    (r'^number of flavor-resource combinations in a resourceGroup must be \u2264 \d+, got \S+$', None, None,
     'split the resource group, or give it fewer flavors or covered resources'),
    (r'^total number of covered resources across all resourceGroups must be \u2264 \d+, got \S+$', None, None,
     'cover fewer resources in this ClusterQueue'),
    (r'^total number of flavors across all resourceGroups must be \u2264 \d+, got \S+$', None, None,
     'use fewer flavors in this ClusterQueue'),
    (r'^Either AdmissionChecks or AdmissionCheckStrategy can be set, but not both$',
     ['spec.admissionChecks', 'spec.admissionChecksStrategy'], None,
     'keep spec.admissionChecksStrategy.admissionChecks and remove spec.admissionChecks'),
    (r'^StrictFIFO queueing strategy cannot be used when ConcurrentAdmissionPolicy is defined$', None, None,
     'set spec.queueingStrategy to BestEffortFIFO, or remove spec.concurrentAdmissionPolicy'),
    (r'^must have exactly one ResourceGroup when ConcurrentAdmissionPolicy is defined$', None, None,
     'keep one resource group, or remove spec.concurrentAdmissionPolicy'),
    (r'^cannot have more than \d+ resource flavors in the ResourceGroup when ConcurrentAdmissionPolicy is defined$',
     None, None, 'use at most 16 flavors in the resource group, or remove spec.concurrentAdmissionPolicy'),
    (r'^may only be set when migration\.mode is ".*" \(got ".*"\)$', None, None,
     'set spec.concurrentAdmissionPolicy.migration.mode to the mode named, or remove these constraints'),
    # ---- ResourceFlavor
    (r'^at least one nodeLabel is required when topology is set$', ['spec.topologyName'],
     'a ResourceFlavor with spec.topologyName needs spec.nodeLabels',
     'add the spec.nodeLabels that select the nodes of the topology, or remove spec.topologyName'),
    (r'^(nodeLabels|tolerations|topologyName|resourceFlavorSpec) (are|is) immutable when topologyName is set$',
     ['spec.nodeLabels', 'spec.tolerations', 'spec.topologyName', 'spec'], None, IMMUTABLE_FIX),
    (r"^supported taint effect values: 'NoSchedule', 'PreferNoSchedule', 'NoExecute'$",
     ['spec.nodeTaints[*].effect', 'spec.tolerations[*].effect'], None,
     'set effect to NoSchedule, PreferNoSchedule or NoExecute'),
    (r"^operator must be Exists when 'key' is empty, which means 'match all values and all keys'$",
     ['spec.tolerations[*].operator', 'spec.tolerations[*]'], None,
     "give the toleration a key, or set operator: Exists (tolerate every taint)"),
    (r"^effect must be 'NoExecute' when 'tolerationSeconds' is set$", ['spec.tolerations[*].tolerationSeconds'],
     None, 'set effect: NoExecute, or remove tolerationSeconds'),
    (r"^supported toleration values: 'Equal'\(default\), 'Exists'$", ['spec.tolerations[*].operator'], None,
     'set operator to Equal (the default) or Exists'),
    (r"^a value must be empty when 'operator' is 'Exists'$", ['spec.tolerations[*].value'], None,
     'remove value, or set operator: Equal'),
    (r'^expr:msg$|^(?:name part |prefix part )?must (consist of|be no more than|be a valid|not be empty).*', None, None,
     'write a valid Kubernetes label key or value: [prefix/]name, alphanumerics, "-", "_" and ".", starting and '
     'ending alphanumeric, 63 characters at most'),
    (r'^expr:strings\.Join\(errs, ";"\)$', None, 'not a valid label value',
     'write a label value of alphanumerics, "-", "_" and ".", starting and ending alphanumeric, 63 characters '
     'at most'),
    # ---- Topology, MultiKueue, AdmissionCheck, LocalQueue
    (r'^the kubernetes\.io/hostname label can only be used at the lowest level of topology$', ['spec.levels'], None,
     'make kubernetes.io/hostname the last entry of spec.levels, or remove it'),
    (r'^must be unique$', None, 'the same entry is listed twice', 'remove the repeated entries'),
    (r'^exactly one of the fields in \[kubeConfig clusterProfileRef\] must be set$', ['spec.clusterSource'],
     'neither or both of spec.clusterSource.kubeConfig and clusterProfileRef are set',
     'set exactly one: spec.clusterSource.kubeConfig (a Secret with the worker\'s kubeconfig) or clusterProfileRef'),
    (r'^field is immutable$|^expr:apivalidation\.FieldImmutableErrorMsg$', None, None, IMMUTABLE_FIX),
    # ---- Workloads (restored from backups, never declared by hand)
    (r'^podSetAssignments must have the same number of podSets as the spec$', ['status.admission'], None,
     WORKLOAD_FIX),
    (r'^(priorityClassSource|priorityClassName|priorityClassRef(\.\w+)?|queueName|maximumExecutionTimeSeconds) is '
     r'immutable (for \S+ )?while (workload quota reserved|admitted).*$', None, None,
     'it cannot change while the Workload holds quota: ' + WORKLOAD_FIX),
    (r'^priority should not be nil when priorityClass(Name|Ref) is set$', ['spec.priority'], None,
     'set spec.priority with the priority class: ' + WORKLOAD_FIX),
    (r'^only the (PriorityClass|WorkloadPriorityClass) kind is allowed for the \S+ group$',
     ['spec.priorityClassRef.kind'], None,
     'use kind PriorityClass with group scheduling.k8s.io, or WorkloadPriorityClass with kueue.x-k8s.io'),
    (r'^minCount should be positive and less or equal to count$', ['spec.podSets[*].minCount'], None,
     'give a minCount between 1 and the pod set\'s count'),
    (r'^clusterName is immutable once set$|^clusterName and nominatedClusterNames are mutually exclusive$|'
     r'^when setting clusterName it must be one of the nominatedClusterNames$', ['status.clusterName'], None,
     WORKLOAD_FIX),
    (r'^(valuesPerLevel|podCounts\.individual|valuesPerLevel\.individual).* (length|domainCount).*$|'
     r'^exactly one of the fields in \[universal individual\] must be set$',
     ['status.admission.podSetAssignments[*].topologyAssignment'], None, WORKLOAD_FIX),
    (r'^(may not be set|must be set) when podSetSliceRequiredTopology is (not )?specified$', None, None,
     'set spec.podSets[].topologyRequest.podSetSliceRequiredTopology together with podSetSliceSize, or neither'),
    (r'^cannot be less th[ae]n \d+$|^is not a multiple of \d+$|^should be less or equal to \d+$|'
     r'^at most one podSet can use minCount$|^partial admission and elastic job cannot be used together$',
     None, None, 'correct the pod set counts: ' + WORKLOAD_FIX),
    (r'^must be a valid signed integer.*$|^must be greater than 0$', None, None, 'give a positive whole number'),
    (r'^the key is reserved for internal kueue use$', None, None, 'use a key outside Kueue\'s own prefixes'),
    (r'^cannot be removed$|^must be set while the QuotaReserved condition is true$', None, None, WORKLOAD_FIX),
    # ---- field errors of a whole class (field.NotSupported, Duplicate, TooMany, TooLong)
    (r'^<NotSupported>$|^Unsupported value: .*', None, None, None),
    (r'^<Duplicate>$|^Duplicate value: .*', None, 'listed twice', 'keep one of the entries'),
    (r'^<TooMany>$|^Too many: .*', None, None, None),
    (r'^<TooLong>$|^Too long: .*', None, None, None),
]
_RULES = [(re.compile(pattern), where, text, fix) for pattern, where, text, fix in RULES]


def rule_for(detail):
    """The RULES entry whose pattern matches ``detail`` (a server message or a catalog entry), or None."""
    for pattern, where, text, fix in _RULES:
        if pattern.search(detail):
            return where, text, fix
    return None


def catalog_detail(entry_detail):
    """A kueue_rules_data entry as the server would word it: a sprintf format with sample values."""
    if not entry_detail.startswith('sprintf:'):
        return entry_detail
    sample = {'%q': '"x"', '%d': '2', '%v': 'x', '%s': 'cohort'}
    return re.sub(r'%[qdvs]', lambda m: sample[m.group(0)], entry_detail[len('sprintf:'):])


# ------------------------------------------------------------------------------------------------ field paths
def _parse(field):
    """'spec.a[0].b' -> ['spec', 'a', 0, 'b'] (a leading '.' and '[*]' allowed)."""
    out = []
    for part in re.finditer(r'([^.\[\]]+)|\[(\d+|\*)\]', field.lstrip('.')):
        if part.group(1) is not None:
            out.append(part.group(1))
        else:
            out.append('*' if part.group(2) == '*' else int(part.group(2)))
    return out


def child(path, part):
    """The field path of ``part`` (a field name, or an index) under ``path``: 'spec' + 0 -> 'spec[0]'."""
    if isinstance(part, int):
        return '%s[%d]' % (path, part)
    return '%s.%s' % (path, part) if path else part


def _join(parts):
    text = ''
    for part in parts:
        text = child(text, part)
    return text


def find(obj, pattern):
    """Concrete paths matching ``pattern`` (``[*]`` for any index) present in ``obj``, in document order."""
    found = []

    def walk(node, parts, done):
        if not parts:
            found.append(_join(done))
            return
        head, rest = parts[0], parts[1:]
        if head == '*':
            if isinstance(node, list):
                for idx, item in enumerate(node):
                    walk(item, rest, done + [idx])
        elif isinstance(head, int):
            if isinstance(node, list) and head < len(node):
                walk(node[head], rest, done + [head])
        elif isinstance(node, dict) and head in node:
            walk(node[head], rest, done + [head])

    walk(obj, _parse(pattern), [])
    return found


def value_at(obj, field):
    node = obj
    for part in _parse(field):
        if isinstance(part, int):
            if not isinstance(node, list) or part >= len(node):
                return None
        elif not isinstance(node, dict):
            return None
        node = node[part] if isinstance(part, int) else node.get(part)
    return node


def smd_path(path, obj):
    """structured-merge-diff's '.spec.resourceGroups[0].flavors[name="gpu"].resources[name="cpu"].nominalQuota'
    as the field path of ``obj``: 'spec.resourceGroups[0].flavors[1].resources[0].nominalQuota'."""
    parts, node = [], obj
    for m in _SMD_ELEMENT.finditer(path):
        if m.group('field') is not None:
            name = m.group('field')
            parts.append(name)
            node = node.get(name) if isinstance(node, dict) else None
        elif m.group('index') is not None:
            idx = int(m.group('index'))
            parts.append(idx)
            node = node[idx] if isinstance(node, list) and idx < len(node) else None
        else:
            keys = dict((k, v.strip('"')) for k, _eq, v in (kv.partition('=') for kv in m.group('keys').split(',')))
            idx = None
            if isinstance(node, list):
                for i, item in enumerate(node):
                    if keys == {'': str(item)} or (isinstance(item, dict) and all(
                            str(item.get(k)) == v for k, v in keys.items())):
                        idx = i
                        break
            if idx is None:
                return _join(parts) + '[%s]' % m.group('keys')
            parts.append(idx)
            node = node[idx]
    return _join(parts)


def describe(value):
    """How a YAML value reads to its author: 'the string "high"', 'the number 5', 'a list'..."""
    if isinstance(value, bool):
        return 'the boolean %s' % str(value).lower()
    if isinstance(value, (int, float)):
        return 'the number %s' % value
    if isinstance(value, str):
        return 'the string "%s"' % (value if len(value) <= 40 else value[:37] + '...')
    if isinstance(value, dict):
        return 'a mapping'
    if isinstance(value, list):
        return 'a list'
    return 'nothing' if value is None else 'a %s' % type(value).__name__


def type_fix(want, value, leaf):
    """The fix for a value of the wrong type, with the value rewritten when that is certain."""
    fix = _WANT[want][1]
    if want == 'numeric (int or float)' and isinstance(value, str) and re.match(r'^-?\d+(\.\d+)?$', value.strip()):
        return '%s: %s: %s, not "%s"' % (fix, leaf, value.strip(), value)
    if want == 'string' and isinstance(value, (bool, int, float)):
        shown = str(value).lower() if isinstance(value, bool) else str(value)
        return '%s: %s: "%s"' % (fix, leaf, shown)
    if want == 'list' and isinstance(value, (str, int, float, dict)):
        return '%s, e.g. %s: [%s]' % (fix, leaf, '...' if isinstance(value, dict) else value)
    return fix


def type_problem(field, want, value):
    """(field, problem, fix) for a value that is not of the type the schema declares."""
    leaf = re.sub(r'\[\d+\]$', '', field.rsplit('.', 1)[-1])
    problem = 'must be %s, not %s' % (_WANT[want][0], describe(value))
    return field, problem, type_fix(want, value, leaf)


def unknown_field(field, kind_label, known=()):
    """(field, problem, fix) for a field the schema does not declare; ``known``: the fields it declares there."""
    leaf = field.rsplit('.', 1)[-1]
    near = difflib.get_close_matches(leaf, list(known), n=3, cutoff=0.6)
    fix = 'remove it or correct its name'
    if near:
        fix += ' (did you mean %s?)' % ' or '.join(near)
    elif known:
        fix += ' (the fields here: %s)' % ', '.join(sorted(known)[:12])
    return field, 'is not a field of %s' % kind_label, fix


# ------------------------------------------------------------------------------------------------ translations
def typed_patch(message, obj, kind_label):
    """[(field, problem, fix)] from a typed-patch refusal, or None when ``message`` is not one."""
    if TYPED_PATCH not in message:
        return None
    out = []
    for line in _TYPED_PREFIX.sub('', message, count=1).splitlines():
        m = _TYPED_ERROR.match(line.strip())
        if not m:
            continue
        field = smd_path(m.group('path'), obj)
        what = m.group('what')
        expected = _EXPECTED.match(what)
        if expected:
            out.append(type_problem(field, expected.group('want'), value_at(obj, field)))
        elif 'field not declared in schema' in what:
            out.append(unknown_field(field, kind_label))
        else:
            out.append((field, what, 'correct the value'))
    return out or [(None, 'the API server could not read the object against its schema: %s'
                    % _TYPED_PREFIX.sub('', message, count=1), 'correct the field it names')]


_CEL_MISSING_KEY = re.compile(r'^no such key: \S+ evaluating rule: (?P<message>.+)$')


def _refine(field, detail, obj):
    """(field, problem, fix) for one field error the server (CEL, schema, webhook) reported at ``field``."""
    missing = _CEL_MISSING_KEY.match(detail)
    if missing:  # the rule read a field the object does not have: the rule's own message says why it is needed
        detail = missing.group('message')
    rule = rule_for(detail)
    if rule is None:
        return field, detail, _schema_fix(detail)
    where, text, fix = rule
    candidates = where(obj) if callable(where) else [p for w in where or () for p in find(obj, w)]
    inside = [p for p in candidates if not field or p == field or p.startswith((field + '.', field + '['))]
    if inside:
        field = inside[0]
    return field, text or detail, fix or _schema_fix(detail)


def _schema_fix(detail):
    """The fix for a structural-schema refusal (Required, Unsupported value, pattern, bounds), from its words."""
    m = re.search(r'supported values: (.*)$', detail)
    if m:
        return 'use one of: %s' % m.group(1).replace('"', '')
    m = re.search(r"should match '(.*)'", detail) or re.search(r"regex used for validation is '(.*)'\)?$", detail)
    if m:
        example = re.search(r"\(e\.g\. ('[^']+'(?: or '[^']+')*)", detail)
        return 'write a value that matches %s%s' % (m.group(1), ' (such as %s)' % example.group(1) if example else '')
    m = re.search(r'should be (greater|less) than or equal to (\S+)', detail)
    if m:
        return 'give %s or %s' % (m.group(2), 'more' if m.group(1) == 'greater' else 'less')
    m = re.search(r'should be (greater|less) than (\S+)', detail)
    if m:
        return 'give a value %s than %s' % (m.group(1), m.group(2))
    m = re.search(r'(?:may not be longer than|may not be more than|must have at most) (\d+)', detail)
    if m:
        return 'shorten it to %s or fewer' % m.group(1)
    m = re.search(r'should have at least (\d+) items?', detail)
    if m:
        return 'give at least %s' % m.group(1)
    m = re.search(r'must be of type (\w+)', detail)
    if m:
        return {'integer': 'write a whole number without quotes', 'number': 'write a number without quotes',
                'string': 'quote the value', 'boolean': 'write true or false', 'object': 'write a mapping',
                'array': 'write a list'}.get(m.group(1), 'give a value of type %s' % m.group(1))
    if detail.startswith('Required value') or detail == 'is required':
        return 'set it'
    return 'correct the value'


def cause(cause_field, cause_message, obj):
    """(field, problem, fix) for one ``details.causes`` entry of a 422."""
    field = (cause_field or '').lstrip('.') or None
    if field == '<nil>':
        field = None
    text = cause_message or ''
    if field and text.startswith(field + ':'):
        text = text[len(field) + 1:].strip()
    if text.startswith('Required value'):
        return field, 'is required', 'set %s' % (field or 'the field')
    m = _INVALID_VALUE.match(text) if text.startswith('Invalid value') else None
    detail = m.group('detail').strip() if m else text
    if field and detail.startswith(field + ' in body '):  # the structural schema's words: "<field> in body should ..."
        found = _refine(field, detail[len(field) + len(' in body '):], obj)
        value = m.group('value') if m and m.group('value') != '"object"' else None
        few = re.match(r'should have at least (\d+) items?$', found[1])
        if few and value is not None:
            return found[0], 'has %s items, at least %s needed' % (value, few.group(1)), found[2]
        return found[0], ('the value %s %s' % (value, found[1]) if value else found[1]), found[2]
    return _refine(field, detail, obj)


def webhook(message, obj):
    """[(field, problem, fix)] from a Kueue webhook denial, or None when ``message`` is not one."""
    m = _WEBHOOK.search(message or '')
    if not m:
        return None
    errors = m.group('errors').strip()
    if errors.startswith('[') and errors.endswith(']'):
        errors = errors[1:-1]
    starts = [e.start() for e in _FIELD_ERROR.finditer(errors)
              if e.start() == 0 or errors[max(0, e.start() - 2):e.start()] == ', ']
    if not starts:
        return [(None, 'Kueue\'s webhook %s refused it: %s' % (m.group('hook'), errors), 'correct the object')]
    out = []
    for start, end in zip(starts, starts[1:] + [len(errors)]):
        part = errors[start:end].rstrip(', ')
        e = _FIELD_ERROR.match(part)
        field, kind, rest = e.group('field'), e.group('type'), part[e.end():].strip()
        if not rest:
            out.append((field, '%s (Kueue\'s webhook %s gave no detail)' % (kind.lower(), m.group('hook')),
                        'correct the value'))
        elif kind == 'Invalid value':
            v = _INVALID_VALUE.match(rest)
            out.append(_refine(field, v.group('detail').strip() if v else rest, obj))
        elif kind == 'Required value':
            out.append((field, 'is required' + (': ' + rest if rest else ''), 'set %s' % field))
        elif kind in ('Unsupported value', 'Duplicate value', 'Too many', 'Too long'):
            out.append(_refine(field, '%s: %s' % (kind, rest), obj))
        else:
            out.append(_refine(field, rest or kind, obj))
    return out
