#!/usr/bin/python
# Copyright: (c) 2026, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kueue_capacity_info
short_description: Check Kueue's quotas against the nodes each ResourceFlavor selects (and the AKS agent pools)
version_added: 1.0.0
description:
  - For each ResourceFlavor, the nodes its C(nodeLabels) select and their allocatable cpu, memory and extended
    resources (C(nvidia.com/gpu), ...), summed; against it, the nominal quotas of every ClusterQueue (and Cohort) on
    that flavor, with what each ClusterQueue can reach by borrowing in its cohort (C(borrowingLimit),
    C(lendingLimit) as Kueue defines them).
  - "Warns about: a flavor that selects no node; a nominal quota larger than what the flavor's nodes offer (the ratio
    per flavor and resource); quota of a resource the nodes do not have; a Topology level whose node label no selected
    node carries (Topology Aware Scheduling then places nothing); a Topology a flavor names that does not exist.
    Taints of the selected nodes that the flavor does not tolerate, and cordoned nodes, are noted."
  - The live configuration, or, with O(resources) or O(src), the configuration after an apply of them (the live
    objects with the declared ones in their place), which is what the kueue role's C(configure_queues) checks
    before it writes.
  - On AKS, node pools scaled to zero have no Node objects. With O(resource_group) and O(cluster_name) the agent
    pools are read from Azure Resource Manager (the managed cluster's C(agentPoolProfiles)) and each is counted at
    its autoscaler maximum (C(maxCount) with C(enableAutoScaling), else C(count)), which the notes say. A pool
    without nodes gets its allocatable from a table of VM sizes (vCPUs, memory, GPUs as published) less AKS's
    published reservations (kube-reserved CPU by core count; memory kube-reserved the lesser of 20 MiB per max pod +
    50 MiB and 25%, and the 100 MiB eviction threshold); a VM size not in the table is reported as "allocatable
    unknown", never guessed.
  - Read-only; never reports a change. Needs get/list on nodes and the Kueue kinds (the status ClusterRole of
    docs/rbac).
author:
  - kueueops contributors (@kueueops)
options:
  resources:
    description:
      - Declared Kueue objects (as O(kueueops.aks.kueue_queues#module:resources) takes them); the check runs on the
        live configuration with these in place. Only ResourceFlavors, ClusterQueues, Cohorts and Topologies matter.
    type: list
    elements: raw
    default: []
  src:
    description: A YAML file or a folder of them holding declared Kueue objects, as O(kueueops.aks.kueue_queues#module:src).
    type: path
  strict:
    description: Fail when the check finds a problem (after reporting it), instead of warning.
    type: bool
    default: false
  resource_group:
    description: The resource group of the AKS cluster whose agent pools are read from ARM (with O(cluster_name)).
    type: str
  cluster_name:
    description: The AKS managed cluster whose agent pools are read from ARM (with O(resource_group)).
    type: str
extends_documentation_fragment:
  - kueueops.aks.azure_auth
  - kueueops.aks.azure_auth.connection
  - kueueops.aks.attributes
  - kueueops.aks.attributes.info_module
  - kueueops.aks.kube_auth
"""

EXAMPLES = r"""
- name: Can the live quotas ever be met?
  kueueops.aks.kueue_capacity_info:
  register: capacity

- name: Print the table
  ansible.builtin.debug:
    msg: "{{ capacity.report }}"

- name: Check a configuration before applying it, counting AKS pools scaled to zero, and fail on a problem
  kueueops.aks.kueue_capacity_info:
    src: queues.yaml
    resource_group: rg-batch
    cluster_name: aks-batch
    strict: true
"""

RETURN = r"""
flavors:
  description:
    - Per ResourceFlavor, its C(node_labels), the C(nodes) and agent C(pools) it selects, C(node_count) (pools at
      their autoscaler maximum), C(untolerated_taints), and per resource with quota on it the C(allocatable) of its
      nodes (C(unknown) when a pool's VM size is not in the table), the total C(nominal) quota, the C(ratio) of the
      two, and per owner (C(queues)) its nominal quota, limits and C(max_with_borrowing); C(topology) with
      C(missing_levels) when the flavor names a Topology.
  returned: always
  type: list
  elements: dict
  sample: [{name: gpu-a100, node_labels: {agentpool: gpua100}, nodes: [gpu-1], pools: [], node_count: 1,
            untolerated_taints: [], resources: [{resource: nvidia.com/gpu, allocatable: '1', nominal: '12', ratio: 12.0,
            queues: [{owner: ClusterQueue team-vision, nominal: '8', borrowing_limit: '4', lending_limit: null,
                      cohort: research, max_with_borrowing: '10'}]}]}]
findings:
  description: What the check found; C(kind) no-nodes, over-commit, missing-resource, topology or unknown; C(severity)
    warning (or note, for what is unknown); C(flavor), C(resource) and the C(message).
  returned: always
  type: list
  elements: dict
  sample: [{kind: over-commit, severity: warning, flavor: gpu-a100, resource: nvidia.com/gpu,
            message: "ResourceFlavor gpu-a100, nvidia.com/gpu: nominal quota 12 (team-nlp 4, team-vision 8) is 12.00x
            what its nodes offer, 1 (node gpu-1)"}]
notes:
  description: How agent pools were counted, cordoned nodes, taints not tolerated, quotas on flavors that do not exist.
  returned: always
  type: list
  elements: str
ok:
  description: Whether the check found no warning.
  returned: always
  type: bool
report:
  description: The capacity table and findings as text lines (what status.yml prints).
  returned: always
  type: list
  elements: str
configuration:
  description: Which configuration was checked, C(live) or C(declared) (the live one with O(resources)/O(src) in place).
  returned: always
  type: str
agent_pools:
  description: The agent pools read from ARM (null when O(resource_group) and O(cluster_name) are not set).
  returned: always
  type: list
  elements: str
node_count:
  description: How many Node objects the cluster has.
  returned: always
  type: int
"""

import copy

from ansible_collections.kueueops.aks.plugins.module_utils.azure import extension as x
from ansible_collections.kueueops.aks.plugins.module_utils.azure.azure_auth import AZURE_AUTH_ARGSPEC, AZURE_CONNECTION_ARGSPEC
from ansible_collections.kueueops.aks.plugins.module_utils.azure.azure_sdk import azure_error
from ansible_collections.kueueops.aks.plugins.module_utils.capacity.capacity import gather
from ansible_collections.kueueops.aks.plugins.module_utils.azure.arm import read_managed_cluster, require_azure_sdk
from ansible_collections.kueueops.aks.plugins.module_utils.kube.kube_client import describe_kube_error
from ansible_collections.kueueops.aks.plugins.module_utils.kube.module import KueueOpsModule


def main():
    argument_spec = dict(
        resources=dict(type='list', elements='raw', default=[]),
        src=dict(type='path'),
        strict=dict(type='bool', default=False),
        resource_group=dict(type='str'),
        cluster_name=dict(type='str'),
    )
    argument_spec.update(copy.deepcopy(AZURE_AUTH_ARGSPEC))
    argument_spec.update(copy.deepcopy(AZURE_CONNECTION_ARGSPEC))
    module = KueueOpsModule(argument_spec, supports_check_mode=True)
    params = module.params
    if params['resource_group'] or params['cluster_name']:
        require_azure_sdk(module, 'azure-mgmt-containerservice', reason='to read the agent pools of the AKS cluster')
    api_client = module.api_client
    result = module.run(lambda: gather(api_client, params, read_managed_cluster), describe=lambda exc: (
        x.describe_azure_error(exc, 'reading the agent pools of cluster %s' % params['cluster_name'], params,
                               [params.get('secret')]) if isinstance(exc, azure_error('AzureError'))
        else describe_kube_error(exc, host=module.host)).message())
    for found in result['findings']:
        if found['severity'] == 'warning':
            module.warn(found['message'])
    module.exit_json(**result)


if __name__ == '__main__':
    main()
