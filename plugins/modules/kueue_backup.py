#!/usr/bin/python
# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kueue_backup
short_description: Back up every Kueue configuration object to a verified, re-appliable folder
version_added: 1.0.0
description:
  - Exports every Kueue configuration object (ResourceFlavor, Cohort, ClusterQueue, LocalQueue,
    WorkloadPriorityClass, AdmissionCheck, Topology, ProvisioningRequestConfig, MultiKueueConfig, MultiKueueCluster)
    at the version the cluster serves (C(kueue.x-k8s.io/v1beta2) where served), so that uninstalling Kueue (which
    deletes its CRDs and with them every object) loses nothing.
  - B(Clean manifests.) C(status), C(uid), C(resourceVersion), C(generation), C(creationTimestamp), C(managedFields),
    the deletion fields, C(selfLink), C(ownerReferences), the C(kubectl.kubernetes.io/last-applied-configuration)
    annotation and Kueue-owned finalizers (C(kueue.x-k8s.io/...)) are dropped.
  - B(Deterministic layout.) A new folder holds a file per kind, numbered in dependency order
    (C(01-secrets.yaml) with O(include_secrets), C(02-multikueueclusters.yaml), C(03-multikueueconfigs.yaml),
    C(05-topologies.yaml), C(10-resourceflavors.yaml), C(20-cohorts.yaml), C(30-provisioningrequestconfigs.yaml),
    C(40-admissionchecks.yaml), C(50-workloadpriorityclasses.yaml), C(60-clusterqueues.yaml),
    C(70-localqueues.yaml)), objects sorted by namespace and name, keys sorted; two backups of the same state have
    byte-identical object files (only the creation time in C(manifest.json) differs) and diff well in Git.
  - B(Restore.) The whole folder is directly usable as O(kueueops.aks.kueue_queues#module:src) (for example with
    C(hold_admission=true)), MultiKueueClusters, MultiKueueConfigs and the Secrets they use included (kueue_queues
    applies the Secrets first and never prints their values). C(manifest.json) names the module that restores each
    file. A backup taken without O(include_secrets) restores only where the Secrets exist (kueue_queues names the
    missing ones before writing anything).
  - B(manifest.json) records the Kueue version (the manager image tag), the served API versions, the cluster
    identity (the UID of its C(kube-system) namespace, which survives renames and no other cluster shares, with the
    API server URL, the kubeconfig context, O(cluster_name) and O(cluster_resource_id) as readable names), the
    creation time, per-kind counts, the
    excluded objects, how many Workloads were pending and admitted per LocalQueue and ClusterQueue (Workloads are
    not configuration; Kueue recreates them from their Jobs), and the sha256 of every file.
  - B(Atomic and private.) Everything is written to a temporary folder next to the destination, fsynced, verified,
    then renamed into place; folders are 0700 and files 0600 whatever the umask. An existing backup is never
    overwritten. On any failure (unwritable or read-only destination, full disk, verification) no partial backup is
    left and the module fails naming O(dest) or O(path) and the fix, so a playbook can stop before uninstalling.
  - B(Verified.) With O(verify), the files are read back from disk, their checksums checked, and every object
    compared with a fresh read of the live cluster (normalised the same way); any difference fails the module naming
    the object. C(kueueops.aks) restores call the same checksum verification on the folder before applying it.
author:
  - kueueops contributors (@kueueops)
options:
  dest:
    description:
      - Folder under which a new backup folder C(<cluster_name>-<UTC timestamp>) is created (a C(-2), C(-3)...
        suffix is added if that name is taken). Created (0700) if missing.
      - Exactly one of O(dest), O(path) and O(verify_path) is required.
    type: path
  path:
    description:
      - Exact path of the backup folder to create. It must not exist; an existing backup is never overwritten.
    type: path
  include_secrets:
    description:
      - Also back up the Secrets that MultiKueueClusters reference, from O(kueue_namespace) (which a Helm uninstall
        deletes). They hold kubeconfigs of the worker clusters; keep the backup private.
      - Without it, such Secrets are listed in RV(excluded).
    type: bool
    default: false
  include_aks_managed:
    description:
      - Also back up the C(aks-) objects that the AKS managed Kueue extension owns and recreates (its generated
        ResourceFlavors and priority classes). By default they are excluded and listed in RV(excluded).
    type: bool
    default: false
  aks_extension:
    description:
      - Whether the cluster runs the AKS managed Kueue extension (which owns the C(aks-*) objects). Detected from the
        C(kueue-extension) Deployment in O(kueue_namespace) when not set. C(aks-) objects of a cluster without the
        extension are ordinary objects and are backed up.
    type: bool
  kueue_namespace:
    description: Namespace Kueue runs in (manager Deployment, MultiKueue Secrets, extension detection).
    type: str
    default: kueue-system
  cluster_name:
    description:
      - Name of the cluster, recorded in the manifest and used for the backup folder's name under O(dest).
        Defaults to the last segment of O(cluster_resource_id), else C(kueue).
    type: str
  cluster_resource_id:
    description:
      - ARM resource ID of the AKS cluster
        (C(/subscriptions/<id>/resourceGroups/<group>/providers/Microsoft.ContainerService/managedClusters/<name>)),
        recorded in the manifest.
    type: str
  verify_path:
    description:
      - Take no backup; check the existing backup folder at this path instead. Every file the folder's
        C(manifest.json) lists must be present with its recorded sha256, and no other file may be in the folder
        (except C(gitops.json), the record of the role C(uninstall_with_backup)); otherwise the module fails
        naming every file at fault. Reads nothing from the cluster (but its identity with O(check_cluster)) and never
        reports a change.
      - What restores run on a backup before applying it. Exclusive with O(dest) and O(path).
    type: path
  check_cluster:
    description:
      - With O(verify_path), also read the identity of the cluster the module connects to (the UID of its
        C(kube-system) namespace) and fail, naming both clusters, when the backup was taken from another cluster
        or records no identity, unless O(allow_other_cluster). What C(playbooks/restore.yml) runs before anything
        is written. RV(same_cluster) says the outcome.
    type: bool
    default: false
  allow_other_cluster:
    description:
      - With O(check_cluster) or O(compare_path), accept a backup of another cluster (a clone, a rebuilt cluster),
        or one that records no identity, instead of failing; RV(same_cluster) is then false.
    type: bool
    default: false
  compare_path:
    description:
      - Compare the live cluster with this existing backup folder instead of writing one (its checksums are checked
        first, then that it is a backup of this cluster, as with O(check_cluster)) - every object of the backup,
        converted to the API version the cluster serves now, against the live object, normalised the same way (what
        a backup would hold), and the Workloads counted now against the backup's counts (none lost, none that was
        admitted pending again). Reads only; RV(matches) and RV(differences) say the outcome and the module does not fail on a difference (the role entry point
        C(upgrade) asserts it after the last hop). Exclusive with O(dest), O(path) and O(verify_path).
    type: path
  verify:
    description:
      - Read the written files back and compare every object with the live cluster before the backup is put in
        place. The checksums of the files are always checked.
    type: bool
    default: true
attributes:
  check_mode:
    support: full
    details: Reads the cluster and reports the path, files, counts and checksums it would write; writes nothing.
extends_documentation_fragment:
  - kueueops.aks.attributes
  - kueueops.aks.attributes.no_diff
  - kueueops.aks.kube_auth
notes:
  - Check mode reads the cluster and reports the path, files, counts and checksums that would be written, and writes
    nothing.
  - Workload objects are not backed up; after a reinstall Kueue creates new Workloads for the Jobs that still carry a
    queue label.
requirements:
  - PyYAML
"""

EXAMPLES = r"""
- name: Back up the Kueue configuration before uninstalling
  kueueops.aks.kueue_backup:
    dest: /var/backups/kueue
    cluster_name: aks-prod
    cluster_resource_id: /subscriptions/0000/resourceGroups/rg/providers/Microsoft.ContainerService/managedClusters/aks-prod
    include_secrets: true
  register: backup

- name: Before restoring, check that no file of the backup changed since it was taken
  kueueops.aks.kueue_backup:
    verify_path: "{{ backup.backup_path }}"

- name: Restore it later without admitting anything half-way
  kueueops.aks.kueue_queues:
    src: "{{ backup.backup_path }}"
    hold_admission: true
"""

RETURN = r"""
backup_path:
  description: The backup folder written (in check mode, that would be written); with O(verify_path), the folder
    checked.
  returned: success
  type: str
  sample: /var/backups/kueue/aks-prod-20250601T120000Z
counts:
  description: Objects backed up per kind (kinds the cluster serves); with O(verify_path), those of its manifest.
  returned: success
  type: dict
  sample: {ClusterQueue: 2, LocalQueue: 2, ResourceFlavor: 3}
files:
  description: The files of the backup in dependency order, with kind, object count, sha256 and the module to restore
    them with (C(manifest.json) is not listed).
  returned: success
  type: list
  elements: dict
  sample: [{name: 10-resourceflavors.yaml, kind: ResourceFlavor, count: 3, sha256: 3f1c..., restore_with:
            kueueops.aks.kueue_queues}]
excluded:
  description: Objects not backed up, with the reason (C(aks-) objects of the managed extension, Secrets referenced by
    MultiKueueClusters that are not included or do not exist).
  returned: success
  type: list
  elements: dict
  sample: [{kind: ResourceFlavor, name: aks-default, reason: owned by the AKS managed Kueue extension}]
workloads:
  description: Pending and admitted Workloads per LocalQueue and ClusterQueue, and totals (with finished ones).
  returned: success
  type: dict
  sample: {local_queues: [{namespace: team-a, name: user-queue, cluster_queue: team-a, pending: 3, admitted: 1}],
           cluster_queues: [{name: team-a, pending: 3, admitted: 1}], total: {pending: 3, admitted: 1, finished: 0}}
manifest:
  description: The content of C(manifest.json).
  returned: success
  type: dict
api_version:
  description: The Kueue API version the objects were exported at (that of ClusterQueue).
  returned: success
  type: str
  sample: kueue.x-k8s.io/v1beta2
kueue_version:
  description: The Kueue manager's image tag, if its Deployment was found.
  returned: success
  type: str
  sample: v0.19.2
verified:
  description: Whether the objects read back from the files were compared with the live cluster and matched; with
    O(verify_path), whether every checksum matched (always true when the module succeeds).
  returned: success
  type: bool
matches:
  description: With O(compare_path), whether the live cluster holds every object of the backup unchanged and has
    lost no Workload.
  returned: when O(compare_path) is set
  type: bool
differences:
  description: With O(compare_path), one line per object that is missing, extra or different (naming the fields).
  returned: when O(compare_path) is set
  type: list
  elements: str
  sample: ["ClusterQueue cq-a differs from the cluster at spec.resourceGroups[0].flavors[0].resources[0].nominalQuota"]
lost_workloads:
  description:
    - With O(compare_path), what the Workload counts show was lost since the backup (empty when nothing).
    - A Workload pending or admitted at the backup must still be there (pending, admitted or newly finished), and as
      many admitted or newly finished as were admitted. Workloads finished at the backup may be gone since, not lost
      (their Jobs' C(ttlSecondsAfterFinished), their Jobs deleted, Kueue's retention of finished Workloads).
  returned: when O(compare_path) is set
  type: list
  elements: str
workloads_before:
  description: With O(compare_path), the Workload counts the backup recorded.
  returned: when O(compare_path) is set
  type: dict
backup_cluster:
  description: The identity of the cluster the backup was taken from, as its manifest records it (C(uid), the
    C(kube-system) namespace UID; C(server), C(context), C(name), C(resource_id) as readable names); C({}) for a
    backup that records none.
  returned: with O(verify_path)
  type: dict
  sample: {uid: 6f1c2b9e-8a51-4c1e-9d0a-3b1f0c2d4e5f, context: aks-prod, server: "https://aks-prod.hcp.example:443",
           name: aks-prod, resource_id: null}
cluster:
  description: The identity of the cluster the module connects to (same keys as RV(backup_cluster)).
  returned: with O(check_cluster)
  type: dict
same_cluster:
  description: Whether the backup was taken from the cluster the module connects to (false only with
    O(allow_other_cluster)).
  returned: with O(check_cluster) or O(compare_path)
  type: bool
"""

import os
import re

from ansible_collections.kueueops.aks.plugins.module_utils.kube.module import KueueOpsModule
from ansible_collections.kueueops.aks.plugins.module_utils.backup import backup as b
from ansible_collections.kueueops.aks.plugins.module_utils.kube import cluster_identity

_RESOURCE_ID_RE = re.compile(r'^/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.ContainerService/'
                             r'managedClusters/(?P<name>[^/]+)$', re.IGNORECASE)


def main():
    module = KueueOpsModule(dict(
        dest=dict(type='path'),
        path=dict(type='path'),
        include_secrets=dict(type='bool', default=False),
        include_aks_managed=dict(type='bool', default=False),
        aks_extension=dict(type='bool'),
        kueue_namespace=dict(type='str', default='kueue-system'),
        cluster_name=dict(type='str'),
        cluster_resource_id=dict(type='str'),
        verify=dict(type='bool', default=True),
        verify_path=dict(type='path'),
        compare_path=dict(type='path'),
        check_cluster=dict(type='bool', default=False),
        allow_other_cluster=dict(type='bool', default=False),
    ), supports_check_mode=True, mutually_exclusive=[('dest', 'path', 'verify_path', 'compare_path')],
        required_one_of=[('dest', 'path', 'verify_path', 'compare_path')])
    params = module.params
    if params['check_cluster'] and not params['verify_path']:
        module.refuse('is set without verify_path', 'check_cluster',
                      'give verify_path (the backup to check), or drop check_cluster (compare_path always checks)')
    if params['verify_path']:
        verify_only(module, params['verify_path'])
    if params['compare_path']:
        path = os.path.abspath(params['compare_path'])
        api_client = module.api_client
        module.exit_json(**module.run(lambda: b.compare_with_live(api_client, params, path, module.cluster_identity()),
                                      changed=False, backup_path=path))
    if b.yaml is None:
        module.refuse('PyYAML is not installed', 'dest', 'pip install PyYAML in the Python that runs the module')
    resource_id = params['cluster_resource_id']
    cluster_name = params['cluster_name']
    if resource_id:
        match = _RESOURCE_ID_RE.match(resource_id)
        if not match:
            module.refuse('%r is not the ARM resource ID of an AKS cluster' % resource_id, 'cluster_resource_id',
                          'give /subscriptions/<id>/resourceGroups/<group>/providers/Microsoft.ContainerService/'
                          'managedClusters/<name> (az aks show --query id -o tsv)')
        cluster_name = cluster_name or match.group('name')
    field = 'dest' if params['dest'] else 'path'

    api_client = module.api_client
    result = module.run(lambda: b.take(api_client, params, cluster_name, field, module.check_mode,
                                       module.cluster_identity(params['cluster_resource_id'], cluster_name)),
                        changed=False,
                        describe=lambda exc: module.failure(exc)['msg'] + ' (nothing was written)')
    for item in result['excluded']:
        if item['kind'] == 'Secret' and 'does not exist' in item['reason']:
            module.warn('Secret %s/%s %s' % (item['namespace'], item['name'], item['reason']))
    module.exit_json(**result)


def verify_only(module, path):
    """Check the checksums of an existing backup folder and exit (no cluster access), and with check_cluster that
    it is a backup of the cluster the module connects to."""
    path = os.path.abspath(path)
    try:
        manifest = b.verify_backup(path)
    except b.BackupError as exc:
        exc.field = 'verify_path'
        failure = exc.message()
        module.fail_json(changed=False, msg=failure, backup_path=path, problems=exc.problems,
                         files_at_fault=sorted(set(p.split(':', 1)[0] for p in exc.problems)), verified=False)
    recorded = manifest.get('cluster') if isinstance(manifest.get('cluster'), dict) else {}
    identity = {}
    if module.params['check_cluster']:
        identity = module.run(module.cluster_identity)
        same = module.run(lambda: cluster_identity.check(
            recorded, identity, 'the backup %s' % path, 'verify_path', 'allow_other_cluster',
            module.params['allow_other_cluster']), backup_path=path, backup_cluster=recorded, cluster=identity)
        identity = dict(cluster=identity, same_cluster=same)
    module.exit_json(
        changed=False,
        backup_cluster=recorded,
        backup_path=path,
        counts=manifest.get('counts') or {},
        files=[dict(info, name=name) for name, info in sorted(manifest['files'].items())],
        excluded=manifest.get('excluded') or [],
        workloads=manifest.get('workloads') or {},
        manifest=manifest,
        api_version=manifest.get('api_version'),
        kueue_version=(manifest.get('kueue') or {}).get('version'),
        verified=True,
        **identity
    )


if __name__ == '__main__':
    main()
