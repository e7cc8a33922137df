#!/usr/bin/python
# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kueue_gitops
short_description: Pause and resume GitOps reconciliation (Flux, Argo CD) around a Kueue uninstall
version_added: 1.0.0
description:
  - Uninstalling Kueue deletes its CRDs and every Kueue object; a GitOps controller that reconciles Kueue (or its
    queue configuration) would fight the uninstall or re-create objects half-way. This module pauses the objects
    that reconcile it before the uninstall and puts them back as they were afterwards.
  - B(Flux) C(Kustomization) (C(kustomize.toolkit.fluxcd.io)) and C(HelmRelease) (C(helm.toolkit.fluxcd.io)) are
    paused with C(spec.suspend=true).
  - B(Argo CD) C(Application) (C(argoproj.io)) is paused by removing C(spec.syncPolicy.automated) (automated sync).
  - B(The previous state) of every object (C(spec.suspend), or C(spec.syncPolicy.automated)) is written to
    O(state_file) (JSON, 0600) before any object is changed. Pausing again keeps the state first recorded for an
    object, so a repeated run never records "paused" as the state to go back to. V(resumed) restores exactly that
    state (an absent C(spec.suspend) is removed again, an automated sync policy is put back as it was).
  - B(One cluster.) The state file records the identity of the cluster the objects were paused on (the UID of its
    C(kube-system) namespace, with the API server URL and kubeconfig context as readable names); pausing into, or
    resuming from, a state file of another cluster fails naming both clusters before anything is patched.
  - Idempotent; supports check mode (nothing is written or patched, the changes are reported).
author:
  - kueueops contributors (@kueueops)
options:
  state:
    description:
      - V(paused) suspends the O(objects) and records their previous state in O(state_file).
      - V(resumed) restores the state recorded in O(state_file) (all its objects, or only O(objects) when given).
    type: str
    choices: [paused, resumed]
    required: true
  objects:
    description:
      - The GitOps objects, each with C(apiVersion), C(kind), C(name) and C(namespace). Required with
        O(state=paused).
    type: list
    elements: dict
    default: []
  state_file:
    description:
      - The JSON file that records the previous state of the paused objects (the role C(uninstall_with_backup)
        keeps it as C(gitops.json) in the Kueue backup folder). Required.
    type: path
    required: true
attributes:
  check_mode:
    support: full
    details: Reports which objects it would pause or resume; patches nothing and writes no state file.
extends_documentation_fragment:
  - kueueops.aks.attributes
  - kueueops.aks.attributes.no_diff
  - kueueops.aks.kube_auth
"""

EXAMPLES = r"""
- name: Pause Flux and Argo CD before uninstalling Kueue
  kueueops.aks.kueue_gitops:
    state: paused
    state_file: /var/backups/kueue/aks-prod-20250601T120000Z/gitops.json
    objects:
      - {apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, name: kueue-queues, namespace: flux-system}
      - {apiVersion: helm.toolkit.fluxcd.io/v2, kind: HelmRelease, name: kueue, namespace: flux-system}
      - {apiVersion: argoproj.io/v1alpha1, kind: Application, name: kueue-config, namespace: argocd}

- name: Resume them once Kueue and its configuration are back
  kueueops.aks.kueue_gitops:
    state: resumed
    state_file: /var/backups/kueue/aks-prod-20250601T120000Z/gitops.json
"""

RETURN = r"""
objects:
  description: Every object handled, with its previous state (as recorded), its state now, and whether it changed.
  returned: success
  type: list
  elements: dict
  sample: [{apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, namespace: flux-system,
            name: kueue-queues, previous: {suspend: null}, current: {suspend: true}, changed: true}]
state_file:
  description: The state file read or written.
  returned: success
  type: str
"""

import os

from ansible_collections.kueueops.aks.plugins.module_utils.backup.gitops import GitOps, parse_ref, pause, resume
from ansible_collections.kueueops.aks.plugins.module_utils.kube.module import KueueOpsModule


def main():
    module = KueueOpsModule(dict(
        state=dict(type='str', required=True, choices=['paused', 'resumed']),
        objects=dict(type='list', elements='dict', default=[]),
        state_file=dict(type='path', required=True),
    ), supports_check_mode=True)
    params = module.params
    refs = module.run(lambda: [parse_ref(item, idx) for idx, item in enumerate(params['objects'])])
    if params['state'] == 'paused' and not refs:
        module.refuse('no objects to pause', 'objects',
                      'list the Flux Kustomizations/HelmReleases and Argo CD Applications to pause')
    gitops = GitOps(module.api_client, module.check_mode)
    state_file = os.path.abspath(params['state_file'])
    change = pause if params['state'] == 'paused' else resume
    changed, out = module.run(lambda: change(gitops, refs, state_file, module.cluster_identity()),
                              state_file=state_file)
    module.exit_json(changed=changed, objects=out, state_file=state_file)


if __name__ == '__main__':
    main()
