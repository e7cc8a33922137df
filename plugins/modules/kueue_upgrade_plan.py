#!/usr/bin/python
# Copyright: (c) 2026, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kueue_upgrade_plan
short_description: Plan a Kueue upgrade across its breaking minors, for this cluster, before anything changes
version_added: 1.0.0
description:
  - Reads the installed Kueue version (the Helm release's chart version, or O(current_version) for the AKS managed
    extension), resolves the target (O(target_version), V(latest) allowed) and returns the plan of the upgrade. Reads
    only; the first step of the role entry point C(upgrade) (C(playbooks/upgrade.yml)), whose check mode is this
    plan.
  - B(Hops.) Kueue 0.16 changed the storage version of its CRDs from C(v1beta1) to C(v1beta2), and Kueue 0.20 stops
    serving C(v1beta1), so an object not rewritten in between can no longer be read. The plan stops at the first
    published release of the minor that changes the storage version (or of the next minor published) and migrates
    every object there (M(kueueops.aks.kueue_storage_migration)), as Kueue's 0.16 notes ask (install, verify, then
    migrate); it migrates first, at the installed version, when a Kueue CRD already lists an old version in
    C(status.storedVersions); otherwise it goes straight to the target (Kueue's upgrade policy asks to read the
    notes of every minor crossed, not to install each). A hop to a release that does not serve a version a CRD
    still stores is refused.
  - B(Required actions) of every crossed minor, as they apply to this cluster, from the collection's catalog
    (generated from Kueue's source and CHANGELOGs; 0.20 from its CHANGELOG only) - feature gates removed, locked or
    with a new default (with what the inventory and the running manager set), integrations removed or no longer on
    by default (with what the running manager enables), API versions no longer served, the storage version,
    configuration defaults that changed, configurations the target's manager refuses to start on, and the fields a
    conversion would drop from live objects.
  - B(Refused) before anything is written, naming the option and the fix - a target older than the installed version,
    a minor the catalog does not know, a target the registry (or the release train) does not publish, a removed or
    locked gate or a removed integration that the inventory sets, gates and integrations that a hop's release does
    not accept, a live object with a field the conversion would drop, a declared queue object (O(resources),
    O(src)) or Helm values Configuration (O(values)) at an API version a hop's release no longer takes, a known-broken
    target (Kueue 0.20.0 to 0.20.5). The failure carries the whole plan.
author:
  - kueueops contributors (@kueueops)
options:
  install_method:
    description: How Kueue is installed (M(kueueops.aks.kueue_info) tells).
    type: str
    choices: [helm, extension]
    default: helm
  target_version:
    description:
      - The Kueue version to reach, V(latest) for the newest the registry publishes (Helm) or the release train
        offers (extension). On the extension path, a version of the train in AKS's form (C(0.19.2-aks.0.4.4)).
    type: str
    default: latest
  current_version:
    description:
      - The installed version, required on the extension path (the extension's C(version), which
        M(kueueops.aks.kueue_extension) reports). On the Helm path it is read from the release and this option must
        be unset.
    type: str
  available_versions:
    description:
      - The versions the extension's release train offers the cluster (the extension path); the hops are chosen
        among them.
    type: list
    elements: str
    default: []
  kueue_namespace:
    description: Namespace Kueue runs in.
    type: str
    default: kueue-system
  release_name:
    description: Name of the Helm release of Kueue (the Helm path).
    type: str
    default: kueue
  chart_ref:
    description:
      - The C(oci://) reference of the Kueue chart the hops are resolved in (the Helm path); helm resolves each minor's
        newest release there as it resolves V(latest).
    type: str
    default: oci://registry.k8s.io/kueue/charts/kueue
  plain_http:
    description: Use plain HTTP to reach the OCI registry (local or air-gapped registries only).
    type: bool
    default: false
  registry_username:
    description: User name for a private OCI registry (see M(kueueops.aks.kueue_helm)).
    type: str
  registry_password:
    description: Password or token for a private OCI registry; never logged.
    type: str
  registry_ca_file:
    description: CA bundle (PEM) of the OCI registry's TLS certificate; helm's C(--ca-file).
    type: path
  registry_cert_file:
    description: Client certificate (PEM) for the registry; needs O(registry_key_file).
    type: path
  registry_key_file:
    description: Private key of O(registry_cert_file).
    type: path
  registry_insecure_skip_tls_verify:
    description: Do not verify the registry's TLS certificate (test registries only).
    type: bool
    default: false
  binary_path:
    description: The helm binary (the Helm path).
    type: path
    default: helm
  feature_gates:
    description:
      - The feature gates the inventory sets (C(kueue_feature_gates)), validated against every hop's release and
        compared with the crossed minors' changes.
    type: dict
    default: {}
  integrations:
    description:
      - The integrations the inventory sets (C(kueue_integrations)); unset (null) means the chart's defaults, whose
        changes the plan then lists as they affect the running manager.
    type: list
    elements: str
  resources:
    description:
      - The queue configuration the inventory declares (C(kueue_resources)); an object at a Kueue API version a hop's
        release no longer serves is refused, naming it and the version to declare it at.
    type: list
    elements: dict
    default: []
  src:
    description: A YAML file or folder of the declared queue configuration (C(kueue_resources_src)), checked as O(resources).
    type: path
  values:
    description:
      - The Helm values the inventory sets (C(kueue_helm_values)); a Configuration at an apiVersion a hop's manager no
        longer decodes (the AKS document's C(config.kueue.x-k8s.io/v1beta1) for Kueue 0.20 and later) or a removed
        gate in C(controllerManager.featureGates) is refused, naming the key and the replacement.
    type: dict
    default: {}
  values_files:
    description:
      - The Helm values files the inventory sets (C(kueue_helm_values_files)), read on the controller; checked with
        O(values) laid over them, as M(kueueops.aks.kueue_helm) installs them at each hop.
    type: list
    elements: path
    default: []
attributes:
  check_mode:
    support: full
    details: The module only reads; check mode changes nothing else.
  diff_mode:
    support: none
extends_documentation_fragment:
  - kueueops.aks.attributes
  - kueueops.aks.attributes.info_module
  - kueueops.aks.kube_auth
notes:
  - Reads the Kueue CRDs, the manager's Deployment and ConfigMap, Helm's release records and, when the storage
    version changes on the way, every Kueue configuration object at C(v1beta1); runs C(helm show chart) per crossed
    minor on the Helm path.
"""

EXAMPLES = r"""
- name: What would upgrading to the newest Kueue do to this cluster?
  kueueops.aks.kueue_upgrade_plan:
    target_version: latest
    chart_ref: oci://registry.k8s.io/kueue/charts/kueue
    feature_gates: "{{ kueue_feature_gates }}"
  register: plan

- name: Print it
  ansible.builtin.debug:
    var: plan.lines
"""

RETURN = r"""
current_version:
  description: The installed version.
  returned: success
  type: str
  sample: 0.15.0
target_version:
  description: The target, resolved (V(latest) becomes a version).
  returned: success
  type: str
  sample: 0.19.2
up_to_date:
  description: Whether the installed version is the target already.
  returned: success
  type: bool
migrate_first:
  description: Whether a Kueue CRD lists an old version in its storedVersions, so the objects are rewritten at the
    installed version before the first hop.
  returned: success
  type: bool
hops:
  description: The upgrades in order, each with C(from), C(to), C(minor), C(migrate_storage) and C(why).
  returned: success
  type: list
  elements: dict
  sample:
    - {from: 0.15.0, to: 0.17.0, minor: '0.17', migrate_storage: true,
       why: "Kueue 0.16 stores v1beta2 instead of v1beta1: stop at 0.17.0, the first published release that does"}
    - {from: 0.17.0, to: 0.19.2, minor: '0.19', migrate_storage: false, why: the target}
actions:
  description: What the crossed minors require of this cluster, each with C(minor), C(kind), C(name), C(severity)
    (V(refused), V(action) or V(info)) and C(text).
  returned: success
  type: list
  elements: dict
refusals:
  description: Why the upgrade is refused (empty when it is not; the module fails otherwise).
  returned: always
  type: list
  elements: str
crds:
  description: Every Kueue CRD with its storage version and C(status.storedVersions).
  returned: success
  type: list
  elements: dict
release:
  description: The Helm release the plan starts from (the Helm path), with its revision.
  returned: success
  type: dict
lines:
  description: The plan as the lines the role prints.
  returned: always
  type: list
  elements: str
"""

from ansible_collections.kueueops.aks.plugins.module_utils.kube.module import KueueOpsModule
from ansible_collections.kueueops.aks.plugins.module_utils.upgrade import upgrade_run
from ansible_collections.kueueops.aks.plugins.module_utils.helm.helm_runner import chart_argspec


def main():
    module = KueueOpsModule(dict(
        install_method=dict(type='str', default='helm', choices=['helm', 'extension']),
        target_version=dict(type='str', default='latest'),
        current_version=dict(type='str'),
        available_versions=dict(type='list', elements='str', default=[]),
        kueue_namespace=dict(type='str', default='kueue-system'),
        release_name=dict(type='str', default='kueue'),
        feature_gates=dict(type='dict', default={}),
        integrations=dict(type='list', elements='str'),
        resources=dict(type='list', elements='dict', default=[]),
        src=dict(type='path'),
        values=dict(type='dict', default={}),
        values_files=dict(type='list', elements='path', default=[]),
        **chart_argspec()
    ), supports_check_mode=True)
    module.check_namespace('kueue_namespace')
    planner = upgrade_run.Planner(module.params, lambda: module.api_client, module.run_command,
                                  no_log_values=module.no_log_values)
    planner.check_inputs(module.refuse)
    module.exit_json(**module.run(planner.run, changed=False, warnings=planner.warnings))


if __name__ == '__main__':
    main()
