#!/usr/bin/python
# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kueue_queues
short_description: Declarative, validated Kueue queue configuration (flavors, cohorts, queues, priorities)
version_added: 1.0.0
description:
  - Applies a whole Kueue configuration in one step; ResourceFlavor, Cohort, ClusterQueue, LocalQueue,
    WorkloadPriorityClass, AdmissionCheck, Topology, ProvisioningRequestConfig, MultiKueueCluster and
    MultiKueueConfig objects, written as Kueue's own manifests (C(apiVersion)/C(kind)/C(metadata)/C(spec) as in
    Kueue's documentation).
  - B(MultiKueue Secrets.) The Secrets that MultiKueueClusters read worker kubeconfigs from (core C(v1) Secrets
    in O(kueue_namespace) with the key C(kubeconfig)) are accepted from O(secrets) or O(src) (a backup taken with
    C(include_secrets) holds them), and only those (a Secret no MultiKueueCluster uses is refused). They are applied
    before the MultiKueueClusters. Their values never appear in results, diffs (C(VALUE_REDACTED_BY_KUEUEOPS)) or errors; they
    are refused in O(resources), whose values Ansible may log.
  - B(API versions.) Writes C(kueue.x-k8s.io/v1beta2) where the cluster serves it, else C(v1beta1). Input may be
    written in either version; the fields Kueue renamed are converted (ClusterQueue C(spec.cohort) <->
    C(spec.cohortName), C(spec.admissionChecks) -> C(spec.admissionChecksStrategy), the deprecated flavor
    fungibility values C(Borrow)/C(Preempt) <-> C(MayStopSearch)). What has no equivalent (for example
    C(spec.concurrentAdmissionPolicy) on a v1beta1-only cluster, or a non-default AdmissionCheck
    C(spec.retryDelayMinutes) on v1beta2) is refused with the field named.
  - Manifests written for Kueue 0.13 and older are accepted too - C(v1alpha1) Cohort (its C(spec.parent) becomes
    C(spec.parentName)) and Topology (the same fields) - and a field that is not in C(v1alpha1) (such as
    C(spec.parentName) there) is refused naming the field to write. Kueue 0.13 serves Topology only at
    C(v1alpha1); there Topologies are written at that version.
  - B(Validation before the first write.) Cross-references that Kueue accepts but that never work are checked
    (LocalQueue -> ClusterQueue, ClusterQueue -> ResourceFlavors and AdmissionChecks, ResourceFlavor -> Topology,
    AdmissionCheck -> ProvisioningRequestConfig, AdmissionCheck of controller C(kueue.x-k8s.io/multikueue) ->
    MultiKueueConfig, MultiKueueConfig -> MultiKueueClusters, MultiKueueCluster -> Secret in O(kueue_namespace)
    with a C(kubeconfig) key, Cohort parent cycles, LocalQueue namespaces, quantities (every suffix Kubernetes
    accepts, C(n) and C(u) included), C(aks-) names on clusters running the AKS managed extension, and an
    AdmissionCheck of controller C(kueue.x-k8s.io/provisioning-request) on a cluster that does not serve the
    ProvisioningRequest API C(autoscaling.x-k8s.io/v1), which would never become Active). Then every object an apply
    may change goes through a server-side apply dry-run (see the next paragraph), so the CRD schema (unknown
    fields are errors), CEL rules and Kueue's validating webhooks judge it. All problems are reported together,
    each with its object and field, and nothing is written.
  - B(No dry-run for what is already applied.) An object whose live version shows that an apply would change
    nothing - this field manager's last apply was at the same API version, the fields it owns hold exactly the
    declared values (quantities compared by amount), and no other manager owns any of them - is not dry-run
    again; every other object is (one that does not exist yet, a Secret, one another tool or Kueue's webhooks
    changed or co-own, one declared or last applied at another API version). So a re-run of an unchanged
    configuration sends no dry-run and no write, and all of the validation above still runs on every object.
    RV(dry_runs) counts the objects the API server judged.
  - A ClusterQueue's C(cohortName) or a Cohort's C(parentName) may name a cohort that has no Cohort object; Kueue
    treats it as an implicit cohort, so this is not an error. Such names are returned in RV(implicit_cohorts).
  - B(Apply) with server-side apply (field manager C(kueueops)) in dependency order (Secret, MultiKueueCluster,
    MultiKueueConfig, Topology, ResourceFlavor, Cohort, ProvisioningRequestConfig, AdmissionCheck,
    WorkloadPriorityClass, ClusterQueue, LocalQueue),
    concurrently within a kind. An object is written only if the dry-run shows it would change, so C(changed) is
    true only when something really changed and an unchanged configuration makes no write request.
  - B(Concurrent runs.) Each write of an existing object carries the C(resourceVersion) this run validated against
    (an optimistic lock). If someone else changed the object's configuration in between (another run with a
    different configuration), the write is refused, the other writer's version stays, and the task fails naming
    the object; a controller's status or finalizer update in between is not a conflict, and an object that already
    is what this run wants (two runs with the same configuration) is a success.
  - B(Prune) deletes the Kueue objects that this field manager applied and the input no longer declares, in reverse
    dependency order; never objects it did not apply, never C(aks-) objects on a managed cluster, never a Secret a
    remaining MultiKueueCluster uses (Secrets are read only by name, never listed). A ClusterQueue or
    ResourceFlavor held by Kueue's C(kueue.x-k8s.io/resource-in-use) finalizer is reported in RV(prune_waiting)
    with the reason.
author:
  - kueueops contributors (@kueueops)
options:
  resources:
    description:
      - Kueue objects, each a full manifest (C(apiVersion), C(kind), C(metadata), C(spec)).
      - Combined with the objects of O(src). Documents of kind C(List) are expanded; server fields of a backup
        (C(status), C(metadata.resourceVersion), C(uid), C(managedFields)...) are ignored.
    type: list
    elements: dict
    default: []
  secrets:
    description:
      - Secrets that MultiKueueClusters of the input or the cluster read their kubeconfig from (C(apiVersion=v1),
        C(kind=Secret), C(metadata.name), C(data) (base64) or C(stringData), key C(kubeconfig)); the namespace is
        O(kueue_namespace). Not logged (C(no_log)).
    type: list
    elements: dict
    default: []
  src:
    description:
      - A YAML file with one or more documents, or a folder whose C(.yml)/C(.yaml) files (recursively) are read in
        sorted path order.
      - A folder written by M(kueueops.aks.kueue_backup) (its C(manifest.json)) is a backup of one cluster; before
        anything is read from or written to the cluster, the module compares the identity the backup records (the
        UID of the C(kube-system) namespace) with that of the cluster it connects to, and fails naming both when
        they differ or the backup records none, unless O(allow_other_cluster).
    type: path
  allow_other_cluster:
    description:
      - Apply a backup folder given in O(src) to a cluster other than the one it was taken from (a clone, a rebuilt
        cluster), or one that records no identity. RV(same_cluster) is then false.
    type: bool
    default: false
  state:
    description:
      - V(present) applies the objects. V(absent) deletes the given objects (only their kind, name and namespace
        matter), in reverse dependency order.
    type: str
    choices: [present, absent]
    default: present
  prune:
    description:
      - Delete Kueue objects previously applied by this module (field manager C(kueueops)) that the input no
        longer declares.
    type: bool
    default: false
  prune_drain:
    description:
      - Before pruning a ClusterQueue, set its C(stopPolicy) to C(HoldAndDrain) so that Kueue evicts the workloads
        that hold it, instead of waiting for them to finish.
    type: bool
    default: false
  force:
    description: Take over fields owned by other field managers (server-side apply C(force)).
    type: bool
    default: false
  hold_admission:
    description:
      - When anything changes, first apply every ClusterQueue of the input with C(stopPolicy=Hold), then apply
        everything else, then release the ClusterQueues to the C(stopPolicy) the input declares. No workload is
        admitted against a half-applied configuration (for example when restoring after a reinstall).
    type: bool
    default: false
  create_namespaces:
    description: Create the namespaces of LocalQueues that do not exist yet.
    type: bool
    default: false
  wait:
    description:
      - Wait until every ClusterQueue and LocalQueue of the input reports C(Active=True) (queues stopped on purpose
        with C(stopPolicy) excepted), and fail with the condition reason of those that do not.
      - A ClusterQueue inactive because of an AdmissionCheck is explained by following ClusterQueue -> AdmissionCheck
        -> MultiKueueConfig -> MultiKueueCluster (or Kueue's ProvisioningRequest controller); the failure names the
        deepest cause first, and a cause that waiting cannot heal (RV(wait_stopped)) ends the wait at once instead of
        after O(timeout).
    type: bool
    default: true
  timeout:
    description:
      - Seconds for the whole run, including O(wait) and waiting for pruned objects.
      - C(wait_timeout) is an alias, the name kubernetes.core modules use.
    type: int
    default: 300
    aliases: [ wait_timeout ]
  aks_extension:
    description:
      - Whether the cluster runs the AKS managed Kueue extension, which owns the C(aks-*) objects. Detected from
        the C(kueue-extension) Deployment in O(kueue_namespace) when not set.
    type: bool
  kueue_namespace:
    description: Namespace Kueue runs in (the detection of the AKS managed extension; the Secrets of MultiKueueClusters).
    type: str
    default: kueue-system
  workers:
    description: Concurrent requests within a kind.
    type: int
    default: 8
  multikueue:
    description:
      - The manager side of MultiKueue, generated whole from the worker clusters' kubeconfigs and added to the input
        (so it is validated, dry-run, applied, diffed and reported like the rest) - per worker a Secret
        C(<config>-<name>) in O(kueue_namespace) holding the kubeconfig and a MultiKueueCluster C(<name>) reading it;
        a MultiKueueConfig O(multikueue.config) listing the workers in the given order; an AdmissionCheck
        O(multikueue.admission_check) of controller C(kueue.x-k8s.io/multikueue) naming it; and that AdmissionCheck
        added to each ClusterQueue of O(multikueue.cluster_queues).
      - Every generated object is labelled C(app.kubernetes.io/managed-by=kueueops) and
        C(kueueops.aks/multikueue=<config>). The live MultiKueueClusters, MultiKueueConfig and AdmissionCheck with that
        label that the run no longer generates are deleted even when O(prune=false), with the Secrets of those
        MultiKueueClusters (read by name, never listed); they are reported in RV(pruned). Removing a worker from the
        list removes its wiring.
      - Each kubeconfig is checked as Kueue's MultiKueue controller checks it, and refused before anything is written
        when it would leave its MultiKueueCluster inactive (reason C(InsecureKubeConfig)) - an C(exec) plugin, an
        C(auth-provider), a C(tokenFile), a username and password, C(insecure-skip-tls-verify), a
        C(certificate-authority) file path instead of C(certificate-authority-data), a server URL without a valid
        host, or no current context resolving to a cluster and a user. The kubeconfigs of the Secrets given in
        O(secrets) or O(src) for MultiKueueClusters are checked the same way.
      - With O(state=absent), the generated objects (not the ClusterQueues) are deleted; the kubeconfigs are not
        checked.
    type: dict
    suboptions:
      config:
        description: The name of the MultiKueueConfig, part of each Secret's name and the value of the ownership label.
        type: str
        default: kueueops-multikueue
      admission_check:
        description: The name of the AdmissionCheck.
        type: str
        default: kueueops-multikueue
      cluster_queues:
        description:
          - ClusterQueues of the input (O(resources) or O(src)) that get the AdmissionCheck, appended to the checks
            they declare (C(spec.admissionChecksStrategy.admissionChecks), or the v1beta1 C(spec.admissionChecks)
            when they declare that).
          - Refused when a ClusterQueue already lists another MultiKueue AdmissionCheck (Kueue allows one) or lists
            this one with C(onFlavors).
        type: list
        elements: str
        default: []
      clusters:
        description: The worker clusters, at least one.
        type: list
        elements: dict
        required: true
        suboptions:
          name:
            description: The MultiKueueCluster's name (a DNS-1123 subdomain of at most 63 characters).
            type: str
            required: true
          kubeconfig:
            description:
              - The kubeconfig (YAML text) the manager uses to reach this worker, such as one
                C(kueueops.aks.kueue_multikueue_worker) issues - a ServiceAccount token and
                C(certificate-authority-data). Not logged (C(no_log)); never shown in results or diffs.
            type: str
            required: true
attributes:
  check_mode:
    support: full
    details: Validates and dry-runs every object against the API server and reports what would change or be pruned; writes nothing.
  diff_mode:
    support: full
    details: The before and after of every object that changes (Secret values redacted).
extends_documentation_fragment:
  - kueueops.aks.attributes
  - kueueops.aks.kube_auth
notes:
  - Check mode validates and dry-runs everything and reports what would change (and what would be pruned) without
    writing. Diff mode returns the before and after of every changed object.
requirements:
  - PyYAML
"""

EXAMPLES = r"""
- name: Two teams sharing a cohort
  kueueops.aks.kueue_queues:
    resources:
      - apiVersion: kueue.x-k8s.io/v1beta2
        kind: ResourceFlavor
        metadata: {name: on-demand}
      - apiVersion: kueue.x-k8s.io/v1beta2
        kind: ClusterQueue
        metadata: {name: team-a}
        spec:
          cohortName: research
          namespaceSelector: {}
          resourceGroups:
            - coveredResources: [cpu, memory]
              flavors:
                - name: on-demand
                  resources:
                    - {name: cpu, nominalQuota: 16, borrowingLimit: 8}
                    - {name: memory, nominalQuota: 64Gi}
      - apiVersion: kueue.x-k8s.io/v1beta2
        kind: LocalQueue
        metadata: {name: user-queue, namespace: team-a}
        spec: {clusterQueue: team-a}
    create_namespaces: true

- name: MultiKueue - a worker cluster whose kubeconfig is in a Secret, used by an AdmissionCheck
  kueueops.aks.kueue_queues:
    secrets:
      - apiVersion: v1
        kind: Secret
        metadata: {name: worker1-kubeconfig}
        stringData:
          kubeconfig: "{{ lookup('ansible.builtin.file', 'worker1.kubeconfig') }}"
    resources:
      - apiVersion: kueue.x-k8s.io/v1beta2
        kind: MultiKueueCluster
        metadata: {name: worker1}
        spec: {clusterSource: {kubeConfig: {location: worker1-kubeconfig, locationType: Secret}}}
      - apiVersion: kueue.x-k8s.io/v1beta2
        kind: MultiKueueConfig
        metadata: {name: workers}
        spec: {clusters: [worker1]}
      - apiVersion: kueue.x-k8s.io/v1beta2
        kind: AdmissionCheck
        metadata: {name: dispatch}
        spec:
          controllerName: kueue.x-k8s.io/multikueue
          parameters: {apiGroup: kueue.x-k8s.io, kind: MultiKueueConfig, name: workers}

- name: MultiKueue generated from the workers' kubeconfigs - Secrets, MultiKueueClusters, config, AdmissionCheck
  kueueops.aks.kueue_queues:
    src: queues/
    multikueue:
      config: dispatch
      admission_check: dispatch
      cluster_queues: [team-a]
      clusters:
        - name: worker-1
          kubeconfig: "{{ worker1_kubeconfig }}"
        - name: worker-2
          kubeconfig: "{{ worker2_kubeconfig }}"

- name: Restore a backup folder without admitting anything half-way, removing what it no longer has
  kueueops.aks.kueue_queues:
    src: /backups/kueue/2025-06-01
    hold_admission: true
    prune: true
"""

RETURN = r"""
api_version:
  description: The apiVersion the objects were written in (that of ClusterQueue).
  returned: always
  type: str
  sample: kueue.x-k8s.io/v1beta2
api_versions:
  description: The served version used for each kind.
  returned: always
  type: dict
same_cluster:
  description: Whether the backup folder given in O(src) was taken from this cluster (false only with
    O(allow_other_cluster)).
  returned: when O(src) is a backup folder of M(kueueops.aks.kueue_backup)
  type: bool
local_queues:
  description: The LocalQueues the input declares, as C(NAMESPACE/NAME), sorted (what the role's smoke test takes
    when C(kueue_smoke_test_queues) is empty).
  returned: O(state=present)
  type: list
  elements: str
  sample: [team-a/user-queue]
dry_runs:
  description: How many objects went through the server-side dry-run; the others were found unchanged from their
    live version (see the description). With O(hold_admission), every ClusterQueue is dry-run when anything is.
  returned: O(state=present)
  type: int
  sample: 0
counts:
  description: Per kind, how many objects were created, updated, unchanged and pruned (deleted and absent for
    O(state=absent)).
  returned: success
  type: dict
  sample: {ClusterQueue: {created: 1, updated: 0, unchanged: 1, pruned: 0}}
changed_objects:
  description: Every object created, updated, pruned or deleted, with the action.
  returned: success
  type: list
  elements: dict
  sample: [{kind: LocalQueue, namespace: team-a, name: user-queue, action: created}]
pruned:
  description: Objects pruned (in check mode, that would be pruned).
  returned: O(state=present)
  type: list
  elements: dict
prune_waiting:
  description: Pruned objects still present after the run waited for them (at most 15 seconds, the
    C(waited) key), held by a finalizer (Kueue's resource-in-use or another), with the reason.
  returned: O(state=present)
  type: list
  elements: dict
implicit_cohorts:
  description: Cohort names used by ClusterQueues or Cohorts without a Cohort object (Kueue creates them implicitly).
  returned: O(state=present)
  type: list
  elements: str
namespaces_created:
  description: Namespaces created for LocalQueues (would be created, in check mode).
  returned: O(state=present)
  type: list
  elements: str
held:
  description: ClusterQueues that were held (O(hold_admission)) and released.
  returned: O(state=present)
  type: list
  elements: str
not_active:
  description:
    - Queues that did not report Active=True within O(timeout), with the condition reason. A ClusterQueue inactive
      because of an AdmissionCheck has the causes of the chain ClusterQueue -> AdmissionCheck -> MultiKueueConfig ->
      MultiKueueCluster (or Kueue's ProvisioningRequest controller) before Kueue's reason, deepest first.
  returned: O(wait=true)
  type: list
  elements: dict
wait_stopped:
  description:
    - Whether the wait ended before O(timeout) at a cause that cannot heal by waiting - a MultiKueueCluster that
      cannot connect because its worker lacks a kind the manager watches (C(no matches for kind)), a kubeconfig
      MultiKueue refuses, an AdmissionCheck of the ProvisioningRequest controller on a cluster without
      ProvisioningRequests. Those queues come first in RV(not_active).
  returned: O(wait=true)
  type: bool
applied:
  description: When the API server stopped answering after the run began writing, every object written before
    that (namespaces included), with the action; the message counts them. Re-running the same configuration
    converges.
  returned: failure, when the API server became unreachable during the writes
  type: list
  elements: dict
  sample: [{kind: ClusterQueue, name: team-a, action: created}]
unconfirmed:
  description: With RV(applied), the writes that were in flight when the connection broke (written or not).
  returned: failure, when the API server became unreachable during the writes
  type: list
  elements: dict
multikueue:
  description: With O(multikueue), the wiring it generated (names only).
  returned: O(state=present) and O(multikueue) given
  type: dict
  contains:
    config:
      description: The MultiKueueConfig.
      type: str
      sample: kueueops-multikueue
    admission_check:
      description: The AdmissionCheck.
      type: str
      sample: kueueops-multikueue
    clusters:
      description: The MultiKueueClusters, in order.
      type: list
      elements: str
      sample: [worker-1, worker-2]
    cluster_queues:
      description: The ClusterQueues that got the AdmissionCheck.
      type: list
      elements: str
      sample: [team-a]
    pruned_clusters:
      description: The MultiKueueClusters of this option that were (in check mode, would be) deleted, with their
        Secrets, because they are no longer listed.
      type: list
      elements: str
      sample: [worker-3]
problems:
  description: On failure, every problem found, each with the object, the field and what is wrong.
  returned: failure
  type: list
  elements: dict
  sample: [{object: LocalQueue team-a/user-queue, field: spec.clusterQueue,
            problem: "ClusterQueue 'team-x' does not exist in the input or the cluster"}]
"""

from ansible_collections.kueueops.aks.plugins.module_utils.kueue import queues
from ansible_collections.kueueops.aks.plugins.module_utils.queues.apply import not_active_message, run
from ansible_collections.kueueops.aks.plugins.module_utils.kube.kueue_cluster import MAX_WORKERS
from ansible_collections.kueueops.aks.plugins.module_utils.kube.module import KueueOpsModule


def main():
    module = KueueOpsModule(dict(
        resources=dict(type='list', elements='dict', default=[]),
        secrets=dict(type='list', elements='dict', default=[], no_log=True),
        src=dict(type='path'),
        allow_other_cluster=dict(type='bool', default=False),
        state=dict(type='str', default='present', choices=['present', 'absent']),
        prune=dict(type='bool', default=False),
        prune_drain=dict(type='bool', default=False),
        force=dict(type='bool', default=False),
        hold_admission=dict(type='bool', default=False),
        create_namespaces=dict(type='bool', default=False),
        wait=dict(type='bool', default=True),
        timeout=dict(type='int', default=300, aliases=['wait_timeout']),
        aks_extension=dict(type='bool'),
        kueue_namespace=dict(type='str', default='kueue-system'),
        workers=dict(type='int', default=8),
        multikueue=dict(type='dict', options=dict(
            config=dict(type='str', default='kueueops-multikueue'),
            admission_check=dict(type='str', default='kueueops-multikueue'),
            cluster_queues=dict(type='list', elements='str', default=[]),
            clusters=dict(type='list', elements='dict', required=True, options=dict(
                name=dict(type='str', required=True),
                kubeconfig=dict(type='str', required=True, no_log=True),
            )),
        )),
    ), supports_check_mode=True)
    params = module.params
    module.check_seconds('timeout')
    if not 1 <= params['workers'] <= MAX_WORKERS:
        module.refuse('must be between 1 and %d, got %d' % (MAX_WORKERS, params['workers']), 'workers',
                      'give the number of concurrent requests, for example the default 8')
    if not params['resources'] and not params['src'] and not params['secrets'] and not params['prune'] \
            and not params['multikueue']:
        module.refuse('nothing to do', 'resources',
                      'give resources and/or src (or prune: true to delete everything this module applied)')
    if queues.yaml is None:
        module.refuse('PyYAML is not installed', 'src', 'pip install PyYAML in the Python that runs the module')

    api_client = module.api_client
    # Secret values read from src or the cluster join no_log_values as soon as they are read, so that
    # exit_json/fail_json mask them wherever they would appear.
    result = module.run(lambda: run(api_client, params, check_mode=module.check_mode, diff=module._diff,
                                    no_log_values=module.no_log_values, identity=module.cluster_identity),
                        changed=False)
    for item in (result.get('prune_waiting') or []) + (result.get('delete_waiting') or []):
        module.warn('%s %s%s is still being deleted after %ss (the run waits at most 15s for deletions, then '
                    'reports them here): %s' % (item['kind'], item.get('namespace', '') and item['namespace'] + '/',
                                                item['name'], item.get('waited', 0), item['reason']))
    if result.get('not_active'):
        module.fail_json(msg=not_active_message(result, params['timeout']), **result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
