# Copyright: (c) 2026, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: multikueue_problems
author: kueueops contributors
version_added: 1.0.0
short_description: What is wrong with a MultiKueue inventory and its inputs, before any cluster is touched
description:
  - The checks of the role entry point C(multikueue) of kueueops.aks.kueue that need no cluster - one host in
    C(kueue_multikueue_manager), at least one in C(kueue_multikueue_workers), no host in both; each worker's
    MultiKueueCluster name valid and unique; a kubeconfig given with C(kueue_multikueue_worker_kubeconfig) acceptable
    to Kueue's MultiKueue (no exec plugin, token file, insecure TLS, certificate-authority file, basic auth or auth
    provider); each ClusterQueue of C(kueue_multikueue_cluster_queues) a ClusterQueue of the manager's
    C(kueue_resources) or C(kueue_resources_src); C(kueue_multikueue_token_ttl) at least 600 seconds; each
    C(kueue_multikueue_worker_server) an https URL with a valid host.
  - The same rules as kueueops.aks.kueue_queues' C(multikueue) option (plugins/module_utils/kueue/multikueue.py). No
    message carries a kubeconfig or a token.
options:
  _input:
    description:
      - C(managers) (host names), C(workers) (the output of kueueops.aks.multikueue_workers), C(cluster_queues),
        C(resources) and C(resources_src) (the manager's), C(token_ttl) (C(kueue_multikueue_token_ttl)).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Refuse a MultiKueue inventory that cannot work
  ansible.builtin.assert:
    that: problems | length == 0
    fail_msg: "{{ problems | join(' ') }}"
  vars:
    problems: >-
      {{ {'managers': groups['kueue_multikueue_manager'] | default([]),
          'workers': groups['kueue_multikueue_workers'] | default([]) | kueueops.aks.multikueue_workers(hostvars),
          'cluster_queues': kueue_multikueue_cluster_queues, 'resources': kueue_resources}
         | kueueops.aks.multikueue_problems }}
"""

RETURN = r"""
_value:
  description: One sentence per problem, each naming the host or variable and the fix; empty when all is well.
  type: list
  elements: str
"""

import os

from ansible.errors import AnsibleFilterError

from ansible_collections.kueueops.aks.plugins.module_utils.kueue import multikueue, queues
from ansible_collections.kueueops.aks.plugins.module_utils.multikueue import multikueue_worker


def multikueue_problems(inputs):
    problems = []
    try:
        src = inputs.get('resources_src')
        items = queues.load_inputs(inputs.get('resources') or [], os.path.expanduser(src) if src else None)
    except queues.LoadError as exc:
        items = []
        problems.append('kueue_resources_src: %s; give a readable YAML file or folder of Kueue manifests.' % exc.text)
    try:
        workers = list(inputs.get('workers') or [])
        # What the worker module would refuse after the install, refused before it: the token lifetime, a server.
        errors = [multikueue_worker.token_ttl_error(inputs['token_ttl'], field='kueue_multikueue_token_ttl')
                  if 'token_ttl' in inputs else None]
        errors += [multikueue_worker.server_error(w['server'], field='worker %s: kueue_multikueue_worker_server'
                                                  % w['host']) for w in workers if w.get('server') is not None]
        problems += ['%s.' % error.message().rstrip('.') for error in errors if error is not None]
        return problems + multikueue.inventory_problems(
            managers=list(inputs.get('managers') or []), workers=workers,
            cluster_queues=list(inputs.get('cluster_queues') or []), items=items)
    except Exception as exc:  # pylint: disable=broad-exception-caught  # never let a kubeconfig into a message
        raise AnsibleFilterError('multikueue_problems: the MultiKueue inputs cannot be checked (%s: a malformed '
                                 'inventory variable?)' % type(exc).__name__)


class FilterModule(object):
    def filters(self):
        return {'multikueue_problems': multikueue_problems}
