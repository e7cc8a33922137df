# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Errors that kueueops.aks modules report to the user.

A ``KueueOpsError`` names the option (``field``) that is wrong, what is wrong,
and how to fix it, so a module can ``fail_json(msg=err.message())`` instead of
printing a traceback.
"""

import json
import re


# The one marker that stands for a secret value in whatever a module shows (results, diffs, messages, warnings).
REDACTED = 'VALUE_REDACTED_BY_KUEUEOPS'


def scrub(text, secrets):
    """``text`` (made a string) with every value of ``secrets`` replaced by ``REDACTED``, longest first (so that a
    secret holding another is replaced whole). None stays None."""
    if text is None:
        return None
    text = str(text)
    for secret in sorted(set(str(s) for s in secrets or () if s), key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return text


class KueueOpsError(Exception):
    """A user-facing error: ``<field>: <problem>. Fix: <fix>``."""

    def __init__(self, problem, field=None, fix=None):
        super().__init__(problem)
        self.problem = str(problem).rstrip('. ')
        self.field = field
        self.fix = fix

    def message(self):
        text = self.problem
        # A problem quoting Kubernetes 403s (helm's stderr, for example) starts with the missing
        # permissions, once each: helm repeats the same 403 for every object of a kind.
        missing = [] if 'permission denied:' in text else forbidden_permissions(text)
        if missing:
            text = 'permission denied: %s; %s' % ('; '.join(missing), text)
        if self.field:
            text = '%s: %s' % (self.field, text)
        text += '.'
        fix = self.fix
        if missing and not fix:
            fix = ('grant it to the identity that runs the playbook (kueueops.aks docs/rbac.md lists what each '
                   'entry point needs)')
        if fix:
            text += ' Fix: %s' % str(fix).rstrip('.') + '.'
        return text

    def __str__(self):
        return self.message()


class ModuleFailure(Exception):
    """A failure reported with ``fail_json(**result)`` exactly as given: no warnings or other keys added.

    Raised by the module_utils classes that run without the AnsibleModule (``helm_install``,
    ``extension_arm``) where the module failed on the spot before they moved there; the module's
    ``main()`` catches it first and calls ``module.fail_json(**exc.result)``.
    """

    def __init__(self, **result):
        super().__init__(result.get('msg'))
        self.result = result


# "User \"bob\" cannot list resource \"clusterqueues\" in API group \"kueue.x-k8s.io\" at the cluster scope"
# "... cannot get resource \"configmaps\" in API group \"\" in the namespace \"kueue-system\""
_FORBIDDEN_RE = re.compile(
    r'cannot (?P<verb>[\w-]+) resource "(?P<resource>[^"]+)"'
    r'(?: in API group "(?P<group>[^"]*)")?'
    r'(?: in the namespace "(?P<namespace>[^"]+)"| at the cluster scope)?'
)


# RBAC's escalation checks: creating or updating a (Cluster)Role granting more than the user holds
# needs `escalate`; a (Cluster)RoleBinding to such a role needs `bind` on it; an aggregationRule needs
# cluster-admin or `escalate`.
_ESCALATION_RE = re.compile(
    r'(?P<resource>(?:cluster)?role(?P<binding>binding)?s)\.rbac\.authorization\.k8s\.io "(?P<name>[^"]*)" is forbidden: '
    r'(?:user "[^"]*" \(groups=[^)]*\) is attempting to grant RBAC permissions not currently held'
    r'|must have cluster-admin privileges to use the aggregationRule)'
)


def _forbidden_text(match):
    resource = match.group('resource')
    if match.group('group'):
        resource += '.' + match.group('group')
    where = ' in namespace %s' % match.group('namespace') if match.group('namespace') else ''
    return 'cannot %s %s%s' % (match.group('verb'), resource, where)


def forbidden_permissions(text):
    """The permissions that the Kubernetes 403 messages quoted in ``text`` say are missing, in order
    of appearance and without repeats, e.g. ``['cannot delete customresourcedefinitions.apiextensions.k8s.io',
    'cannot list secrets in namespace kueue-system']``. RBAC escalation refusals are named by the verb
    that lifts them, with the objects that needed it (three, then how many more): ``cannot escalate
    clusterroles.rbac.authorization.k8s.io (to create or update kueue-manager-role)``, ``cannot bind
    roles.rbac.authorization.k8s.io (referenced by rolebinding kueue-visibility-server-auth-reader)``."""
    text = str(text or '')
    found = []
    for match in _FORBIDDEN_RE.finditer(text):
        found.append((match.start(), _forbidden_text(match), None))
    for match in _ESCALATION_RE.finditer(text):
        if match.group('binding'):
            key = 'cannot bind %s.rbac.authorization.k8s.io' % match.group('resource').replace('bindings', 's')
            detail = '%s %s' % (match.group('resource')[:-1], match.group('name'))
        else:
            key = 'cannot escalate %s.rbac.authorization.k8s.io' % match.group('resource')
            detail = match.group('name')
        found.append((match.start(), key, detail))
    order, details = [], {}
    for _pos, key, detail in sorted(found, key=lambda item: item[0]):
        if key not in details:
            order.append(key)
            details[key] = []
        if detail and detail not in details[key]:
            details[key].append(detail)
    out = []
    for key in order:
        names = details[key]
        if not names:
            out.append(key)
            continue
        shown = ', '.join(names[:3]) + (' and %d more' % (len(names) - 3) if len(names) > 3 else '')
        out.append('%s (%s %s)' % (key, 'referenced by' if key.startswith('cannot bind') else
                                   'to create or update', shown))
    return out


def _status_message(body):
    """The ``message`` of a Kubernetes Status object in ``body``, or a short raw body."""
    if body is None:
        return ''
    if isinstance(body, bytes):
        body = body.decode('utf-8', 'replace')
    text = str(body).strip()
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        return str(data.get('message') or data.get('reason') or '').strip()
    first = text.splitlines()[0] if text else ''
    return first[:300]


def api_exception_message(exc):
    """One readable line for a ``kubernetes.client.exceptions.ApiException``.

    Works with anything that has ``status``, ``reason`` and ``body`` attributes.
    """
    status = getattr(exc, 'status', None)
    reason = (getattr(exc, 'reason', None) or '').strip()
    detail = _status_message(getattr(exc, 'body', None))

    head = 'Kubernetes API error'
    if status:
        head += ' %s' % status
    if reason:
        head += ' %s' % reason

    if status == 403:
        missing = forbidden_permissions(detail)
        if missing:
            return '%s: permission denied: %s (%s)' % (head, '; '.join(missing), detail)
    if status == 401:
        detail = detail or 'the credentials were rejected'
        return '%s: %s; check api_key, client_cert/client_key or the kubeconfig user' % (head, detail)
    if detail:
        return '%s: %s' % (head, detail)
    return head


# Kubernetes names checked before a request, so that a typo is reported with the option that holds it.
_DNS_LABEL_RE = re.compile(r'^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$')
_DNS_SUBDOMAIN_RE = re.compile(r'^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')
_LABEL_NAME_RE = re.compile(r'^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$')


def namespace_name_error(name, field, what='namespace'):
    """A ``KueueOpsError`` naming ``field`` when ``name`` is not a valid namespace name (a DNS-1123 label),
    else None; ``what`` names the kind of name in the message (a ServiceAccount's, for example)."""
    if isinstance(name, str) and _DNS_LABEL_RE.match(name):
        return None
    return KueueOpsError('%r is not a valid %s name' % (name, what), field=field,
                         fix='use a DNS-1123 label: lowercase letters, digits and "-", starting and ending with a '
                             'letter or digit, at most 63 characters')


def object_name_error(name, field, kind='object'):
    """A ``KueueOpsError`` naming ``field`` when ``name`` is not a valid name of a Kubernetes ``kind`` (a DNS-1123
    subdomain, as Kueue's kinds and most others are named), else None."""
    if isinstance(name, str) and _DNS_SUBDOMAIN_RE.match(name):
        return None
    return KueueOpsError('%r is not a valid %s name' % (name, kind), field=field,
                         fix='use a DNS-1123 subdomain: lowercase letters, digits, "-" and ".", starting and ending '
                             'with a letter or digit, at most 253 characters')


def label_key_error(key, field):
    """A ``KueueOpsError`` naming ``field`` when ``key`` is not a valid label key (``[prefix/]name``),
    else None."""
    text = key if isinstance(key, str) else ''
    prefix, _sep, name = text.rpartition('/')
    if text and _LABEL_NAME_RE.match(name) and (not _sep or _DNS_SUBDOMAIN_RE.match(prefix)):
        return None
    return KueueOpsError('%r is not a valid label key' % (key,), field=field,
                         fix='give a label key such as kueue.x-k8s.io/queue-name: an optional DNS subdomain '
                             'prefix and "/", then at most 63 letters, digits, "-", "_" or "."')


def is_dns_subdomain(name, max_length=253):
    """Whether ``name`` is a DNS-1123 subdomain (the name of most Kubernetes objects) of at most ``max_length``
    characters."""
    return isinstance(name, str) and len(name) <= max_length and bool(_DNS_SUBDOMAIN_RE.match(name))
