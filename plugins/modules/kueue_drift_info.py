#!/usr/bin/python
# Copyright: (c) 2026, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kueue_drift_info
short_description: Drift of a cluster from its declared Kueue configuration and install, read-only
version_added: 1.0.0
description:
  - Compares the declared queue configuration - O(resources), O(src) and O(secrets), taken, loaded, converted and
    validated exactly as M(kueueops.aks.kueue_queues) takes them (the C(configure_queues) entry point's
    C(kueue_resources), C(kueue_resources_src) and C(kueue_secrets)) - with the cluster, per object. RV(objects)
    lists what is C(missing) (declared, not in the cluster), C(changed) (with every declared field whose live value
    differs, quantities compared by amount; a field removed from the declaration is not compared, since Kueue's
    defaulting webhook attributes the defaults it sets to the applier too), C(extra) (applied by C(kueueops), no
    longer declared - what C(prune) would delete) and C(undeclared) (Kueue objects nobody declared here, with their field managers; the
    C(aks-*) objects of the AKS managed extension excepted). Secret values are never shown.
  - Then the install (RV(install)). On a Helm install, the release's values (read from Helm's own release record,
    no helm binary) against the values O(feature_gates), O(integrations), O(values) and O(values_files) render for
    the installed chart, as M(kueueops.aks.kueue_helm) renders them; the manager's live Configuration (its
    ConfigMap, parsed) against the Configuration those values render; the Deployment's effective feature gates;
    and O(version) against the chart version. On the AKS managed extension, the extension's configuration settings
    (O(extension), as M(kueueops.aks.kueue_extension) reads it from Azure Resource Manager in check mode) against
    O(configuration_settings), and O(extension_version). Each difference names its key, the declared and the
    live value.
  - B(Read-only.) It writes nothing and sends no server-side dry-run (a dry-run needs write permissions); it
    needs only list on the Kueue kinds and CRDs, and get and list in the Kueue namespace (docs/rbac/status.yaml).
    The validation of the declared objects is that of kueue_queues but for the dry-run; a malformed object fails
    with its field and the fix.
author:
  - kueueops contributors (@kueueops)
options:
  resources:
    description:
      - Declared Kueue objects, full manifests, as M(kueueops.aks.kueue_queues) O(kueueops.aks.kueue_queues#module:resources)
        takes them.
    type: list
    elements: dict
    default: []
  secrets:
    description:
      - Declared MultiKueue Secrets, as M(kueueops.aks.kueue_queues) takes them. Not logged; their values are never
        shown, only whether they differ.
    type: list
    elements: dict
    default: []
  src:
    description: A YAML file or a folder of declared Kueue manifests, as M(kueueops.aks.kueue_queues) takes it.
    type: path
  kueue_namespace:
    description: Namespace Kueue runs in (Helm release, managed extension, MultiKueue Secrets).
    type: str
    default: kueue-system
  release_name:
    description: Name of the Helm release of Kueue.
    type: str
    default: kueue
  install:
    description: Compare the install too (RV(install)); V(false) compares the queue objects only.
    type: bool
    default: true
  version:
    description: The declared Kueue chart version (C(kueue_version)); V(latest) or unset is not compared.
    type: str
  feature_gates:
    description: The declared feature gates (C(kueue_feature_gates)), as M(kueueops.aks.kueue_helm) takes them.
    type: dict
  integrations:
    description: The declared integration frameworks (C(kueue_integrations)); unset keeps the chart's default list.
    type: list
    elements: str
  values:
    description: The declared extra chart values (C(kueue_helm_values)).
    type: dict
  values_files:
    description: The declared chart values files (C(kueue_helm_values_files)), read on the controller.
    type: list
    elements: path
  extension:
    description:
      - The AKS managed extension as ARM reports it (the RV(kueueops.aks.kueue_extension#module:extension) result of
        M(kueueops.aks.kueue_extension) in check mode), or V({}) when it does not exist. Without it, the settings of
        an extension are not compared.
    type: dict
  configuration_settings:
    description: The declared configuration settings of the extension (C(kueue_extension_configuration_settings)).
    type: dict
  extension_version:
    description: The declared pinned extension version (C(kueue_extension_version)); unset or V(latest) is not compared.
    type: str
attributes:
  check_mode:
    support: full
    details: This action does not modify state.
  diff_mode:
    support: full
    details: For each changed object, the live object (before) and the live object with the declared values laid
      over it (after), Secret values redacted. Nothing is changed.
extends_documentation_fragment:
  - kueueops.aks.attributes
  - kueueops.aks.kube_auth
  - kueueops.aks.chart_values
notes:
  - Never reports a change. RV(drift) is true when anything is missing, changed, extra, undeclared or differs in
    the install; the playbook C(status.yml) prints the report and fails with C(kueue_fail_on_drift=true).
requirements:
  - PyYAML
seealso:
  - module: kueueops.aks.kueue_queues
  - module: kueueops.aks.kueue_verify
"""

EXAMPLES = r"""
- name: Drift of the queues and the Helm install from what the inventory declares
  kueueops.aks.kueue_drift_info:
    src: "{{ playbook_dir }}/queues.yaml"
    feature_gates: {TopologyAwareScheduling: true}
    integrations: [batch/job, jobset.x-k8s.io/jobset]
  register: kueue_drift

- name: Fail when the cluster drifted
  ansible.builtin.assert:
    that: not kueue_drift.drift
"""

RETURN = r"""
drift:
  description: Whether anything differs (objects missing, changed, extra or undeclared, or an install difference).
  returned: success
  type: bool
counts:
  description: How many objects are missing, changed, extra and undeclared, and how many install keys differ.
  returned: success
  type: dict
  sample: {missing: 1, changed: 1, extra: 0, undeclared: 1, install: 2}
objects:
  description:
    - C(missing), C(extra) and C(undeclared) (with C(managers), the field managers that wrote it) list objects
      (C(kind), C(name), C(namespace)); C(changed) lists objects with C(fields), each C(field), C(declared) and
      C(live) (C((absent)) when a side lacks it; Secret values as C(VALUE_REDACTED_BY_KUEUEOPS)); C(declared) counts
      the declared objects.
  returned: success
  type: dict
  sample: {missing: [{kind: LocalQueue, namespace: team-a, name: user-queue}],
           changed: [{kind: ClusterQueue, name: team-a, fields: [{field: 'spec.resourceGroups[0].flavors[0].resources[0].nominalQuota',
                                                                   declared: '16', live: '40'}]}],
           extra: [], undeclared: [{kind: ClusterQueue, name: by-hand, managers: [kubectl-create]}], declared: 11}
install:
  description:
    - C(method) (V(helm), V(extension), V(none) or V(not compared)), C(compared), C(note) (why it was not compared),
      on Helm C(release) and C(chart_version), and C(differences), each with C(source) (V(chart version), V(helm
      values), V(manager configuration), V(feature gates), V(extension settings), V(extension version)), C(key),
      C(declared) and C(live).
  returned: success
  type: dict
  sample: {method: helm, compared: true, release: kueue, chart_version: 0.19.2,
           differences: [{source: manager configuration, key: waitForPodsReady.enable, declared: (absent), live: true}]}
aks_extension:
  description: Whether the cluster runs the AKS managed extension.
  returned: success
  type: bool
problems:
  description: On failure, every problem of the declared configuration, each with the object, the field and what is wrong.
  returned: failure
  type: list
  elements: dict
"""

from ansible_collections.kueueops.aks.plugins.module_utils.drift import drift
from ansible_collections.kueueops.aks.plugins.module_utils.kueue import queues
from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import namespace_name_error
from ansible_collections.kueueops.aks.plugins.module_utils.kube.module import KueueOpsModule
from ansible_collections.kueueops.aks.plugins.module_utils.helm.helm_values import chart_value_argspec


def main():
    module = KueueOpsModule(dict(
        resources=dict(type='list', elements='dict', default=[]),
        secrets=dict(type='list', elements='dict', default=[], no_log=True),
        src=dict(type='path'),
        kueue_namespace=dict(type='str', default='kueue-system'),
        release_name=dict(type='str', default='kueue'),
        install=dict(type='bool', default=True),
        version=dict(type='str'),
        feature_gates=dict(type='dict'),
        integrations=dict(type='list', elements='str'),
        values=dict(type='dict'),
        values_files=dict(type='list', elements='path'),
        extension=dict(type='dict'),
        configuration_settings=dict(type='dict'),
        extension_version=dict(type='str'),
        **chart_value_argspec()
    ), supports_check_mode=True)
    module.check_namespace('kueue_namespace')
    if namespace_name_error(module.params['release_name'], 'release_name') is not None:
        module.refuse('%r is not a valid Helm release name' % module.params['release_name'], 'release_name',
                      'use a DNS-1123 label (lowercase letters, digits and "-"), the name given to helm install')
    if queues.yaml is None:
        module.refuse('PyYAML is not installed', 'src', 'pip install PyYAML in the Python that runs the module')
    api_client = module.api_client
    module.exit_json(**module.run(lambda: drift.run(api_client, module.params, diff=module._diff,
                                                    no_log_values=module.no_log_values), changed=False))


if __name__ == '__main__':
    main()
