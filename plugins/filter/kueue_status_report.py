# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: kueue_status_report
author: kueueops contributors
version_added: 1.0.0
short_description: Render kueue_verify results as tables for a human
description:
  - Turns the result of M(kueueops.aks.kueue_verify) (or a mapping of cluster name to such results) into a compact
    report, with a table of checks (pass/fail and why), of ClusterQueues (cohort, flavors with used/nominal quota,
    pending and admitted workloads, active) and of LocalQueues (their ClusterQueue, pending, admitted).
  - When a result carries a C(drift) key (the result of M(kueueops.aks.kueue_drift_info), as C(playbooks/status.yml)
    attaches it), the report adds the drift to the summary line and two tables, queue objects (missing, changed with
    each field and the declared and live values, extra, undeclared) and the install (each differing key with its
    source).
  - When a result carries a C(capacity) key (the result of M(kueueops.aks.kueue_capacity_info), as
    C(playbooks/status.yml) attaches it for the report file), the report adds the number of capacity warnings to
    the summary line and three tables, capacity per ResourceFlavor and resource (nodes, allocatable, nominal quota,
    ratio, the quotas by owner), the findings and the notes.
  - C(lines) gives a list of text lines, which the P(ansible.builtin.debug#module) module prints readably at the end
    of a play; C(text), C(markdown) and C(html) give one string, for a file, an AWX artifact or a wiki page.
options:
  _input:
    description: A kueue_verify result, or a mapping of cluster (inventory host) name to kueue_verify results.
    type: dict
    required: true
  format:
    description: Output format.
    type: str
    default: lines
    choices: [lines, text, markdown, html]
  cluster:
    description: Name of the cluster when O(_input) is a single result.
    type: str
"""

EXAMPLES = r"""
- name: Verify Kueue
  kueueops.aks.kueue_verify:
    fail_on_error: false
  register: kueue_status

- name: Show the status
  ansible.builtin.debug:
    msg: "{{ kueue_status | kueueops.aks.kueue_status_report(cluster=inventory_hostname) }}"

- name: Write the report of every cluster as Markdown
  ansible.builtin.copy:
    content: >-
      {{ dict(ansible_play_hosts | zip(ansible_play_hosts | map('extract', hostvars, 'kueue_status')))
         | kueueops.aks.kueue_status_report(format='markdown') }}
    dest: /tmp/kueue-status.md
    mode: "0644"
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
_value:
  description: The report, a list of lines for O(format=lines), else one string.
  type: raw
"""

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.collections import is_sequence

from ansible_collections.kueueops.aks.plugins.module_utils.kueue import report


def _is_single_result(data):
    return 'checks' in data and is_sequence(data.get('checks'))


def kueue_status_report(data, format='lines', cluster=None):  # pylint: disable=redefined-builtin
    if not isinstance(data, dict):
        raise AnsibleFilterError('kueue_status_report expects a kueue_verify result or a mapping of cluster name to '
                                 'results, got %s' % type(data).__name__)
    results = {cluster or 'cluster': data} if _is_single_result(data) else data
    for name, result in results.items():
        if not isinstance(result, dict) or not _is_single_result(result):
            raise AnsibleFilterError('kueue_status_report: the value for %r is not a kueue_verify result (no checks); '
                                     'register the kueue_verify task and pass its result' % name)
    if format == 'lines':
        lines = []
        for name in sorted(results):
            lines.extend(report.render_lines(results[name], name if len(results) > 1 or cluster else None))
        return lines
    try:
        return report.render(results, format)
    except ValueError as exc:
        raise AnsibleFilterError('kueue_status_report: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {'kueue_status_report': kueue_status_report}
