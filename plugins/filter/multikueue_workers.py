# Copyright: (c) 2026, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: multikueue_workers
author: kueueops contributors
version_added: 1.0.0
short_description: The MultiKueue worker clusters of inventory hosts - name, and the kubeconfig the manager uses
description:
  - For each inventory host, the name of its MultiKueueCluster (C(kueue_multikueue_cluster_name), else the inventory
    host name) and the kubeconfig the MultiKueue manager uses for it - C(kueue_multikueue_worker_kubeconfig) when the
    host sets it, else the C(kubeconfig) of the registered result named by O(result) (the role's
    kueueops.aks.kueue_multikueue_worker task), else none.
  - The role entry point C(multikueue) of kueueops.aks.kueue passes the list to kueueops.aks.kueue_queues'
    C(multikueue.clusters), whose C(kubeconfig) is C(no_log). Never print the list.
options:
  _input:
    description: Inventory host names.
    type: list
    elements: str
    required: true
  hostvars:
    description: The C(hostvars) of the play.
    type: raw
    required: true
  result:
    description: The name of a registered variable, on each host, with a C(kubeconfig).
    type: str
    required: false
"""

EXAMPLES = r"""
- name: The workers' MultiKueueCluster names
  ansible.builtin.debug:
    msg: "{{ groups['kueue_multikueue_workers'] | kueueops.aks.multikueue_workers(hostvars) | map(attribute='name') }}"
"""

RETURN = r"""
_value:
  description:
    - One C({host, name, kubeconfig, server}) per host, in the given order; C(kubeconfig) a YAML text or none,
      C(server) its C(kueue_multikueue_worker_server) or none.
    - With O(result), one C({name, kubeconfig}) per host - the entries of kueueops.aks.kueue_queues'
      C(multikueue.clusters).
  type: list
  elements: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.kueueops.aks.plugins.module_utils.kueue import multikueue


def multikueue_workers(hosts, hostvars, result=None):
    rows = []
    for host in hosts or []:
        hv = hostvars[host]
        given = hv.get('kueue_multikueue_worker_kubeconfig')
        issued = (hv.get(result) or {}).get('kubeconfig') if result else None
        try:
            given = multikueue.kubeconfig_string(given) if given else None
        except Exception as exc:  # pylint: disable=broad-exception-caught  # never let a kubeconfig into a message
            raise AnsibleFilterError('multikueue_workers: the kueue_multikueue_worker_kubeconfig of %s cannot be read '
                                     '(%s); give the kubeconfig as YAML text or a mapping' % (host, type(exc).__name__))
        name = hv.get('kueue_multikueue_cluster_name') or host
        # with result: the entries of kueue_queues' multikueue.clusters, exactly its suboptions
        rows.append({'name': name, 'kubeconfig': given or issued} if result else
                    {'host': host, 'name': name, 'kubeconfig': given,
                     'server': hv.get('kueue_multikueue_worker_server')})
    return rows


class FilterModule(object):
    def filters(self):
        return {'multikueue_workers': multikueue_workers}
