# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Errors that kueueops.aks modules report to the user.

A ``KueueOpsError`` names the option (``field``) that is wrong, what is wrong,
and how to fix it, so a module can ``fail_json(msg=err.message())`` instead of
printing a traceback.
"""

import json
import re


class KueueOpsError(Exception):
    """A user-facing error: ``<field>: <problem>. Fix: <fix>``."""

    def __init__(self, problem, field=None, fix=None):
        super().__init__(problem)
        self.problem = str(problem).rstrip('. ')
        self.field = field
        self.fix = fix

    def message(self):
        text = self.problem
        if self.field:
            text = '%s: %s' % (self.field, text)
        text += '.'
        if self.fix:
            text += ' Fix: %s' % str(self.fix).rstrip('.') + '.'
        return text

    def __str__(self):
        return self.message()


# "User \"bob\" cannot list resource \"clusterqueues\" in API group \"kueue.x-k8s.io\" at the cluster scope"
# "... cannot get resource \"configmaps\" in API group \"\" in the namespace \"kueue-system\""
_FORBIDDEN_RE = re.compile(
    r'cannot (?P<verb>[\w-]+) resource "(?P<resource>[^"]+)"'
    r'(?: in API group "(?P<group>[^"]*)")?'
    r'(?: in the namespace "(?P<namespace>[^"]+)"| at the cluster scope)?'
)


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
        match = _FORBIDDEN_RE.search(detail)
        if match:
            resource = match.group('resource')
            if match.group('group'):
                resource += '.' + match.group('group')
            where = ' in namespace %s' % match.group('namespace') if match.group('namespace') else ''
            return '%s: permission denied: cannot %s %s%s (%s)' % (
                head, match.group('verb'), resource, where, detail)
    if status == 401:
        detail = detail or 'the credentials were rejected'
        return '%s: %s; check api_key, client_cert/client_key or the kubeconfig user' % (head, detail)
    if detail:
        return '%s: %s' % (head, detail)
    return head
