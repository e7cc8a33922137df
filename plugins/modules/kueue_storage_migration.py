#!/usr/bin/python
# Copyright: (c) 2026, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kueue_storage_migration
short_description: Rewrite every Kueue object at its CRD's storage version and trim the CRDs' storedVersions
version_added: 1.0.0
description:
  - When a Kueue release changes the storage version of its CRDs (Kueue 0.16 stores C(v1beta2) instead of
    C(v1beta1)), the objects already in etcd stay encoded at the old version until something writes them, and each
    CRD keeps listing the old version in C(status.storedVersions). A release that stops serving that version
    (Kueue 0.20 stops serving C(v1beta1), 0.21 removes it) then cannot read them.
  - This module does what Kueue's C(hack/migrate-to-v1beta2.sh) and the Kubernetes storage version migrator do, for
    every CRD of the C(kueue.x-k8s.io) group whose C(status.storedVersions) is not the storage version alone
    (Workloads included) - read every object at the storage version, a page of O(page_size) at a time, and write it
    back unchanged (a PUT conditional on its resourceVersion, so nothing anyone changed meanwhile is overwritten),
    which makes the API server store it at the storage version; then set the CRD's C(status.storedVersions) to the
    storage version alone.
  - B(Resumable.) A CRD is trimmed only after every one of its objects was rewritten. A run cut short (the API
    server stopped, O(timeout) passed) fails naming the CRD it stopped at, how many of its objects were rewritten
    and the CRDs that still list an old version; running it again rewrites those (rewriting an object twice changes
    nothing).
  - Idempotent - a cluster whose Kueue CRDs all list only their storage version reports no change and sends no
    write.
  - The storage migration step of the role entry point C(upgrade) (C(playbooks/upgrade.yml)), run after each hop that
    changes a storage version; usable alone after a Kueue upgrade made by other means.
author:
  - kueueops contributors (@kueueops)
options:
  crds:
    description:
      - Names of the Kueue CRDs to migrate (for example C(workloads.kueue.x-k8s.io)); empty for every Kueue CRD that
        needs it. A name that is not a Kueue CRD of the cluster is refused before anything is written.
    type: list
    elements: str
    default: []
  page_size:
    description: Objects read per LIST request (C(limit)); each page is rewritten before the next is read.
    type: int
    default: 500
  timeout:
    description:
      - Seconds the whole migration may take. When it passes, the run stops after the page it is writing and fails
        as described for a run cut short.
    type: int
    default: 1800
  workers:
    description:
      - Concurrent writes within a page (1 to 64). The objects of a page are independent; each write goes through
        Kueue's conversion and admission webhooks.
    type: int
    default: 8
attributes:
  check_mode:
    support: full
    details: Counts the objects of the CRDs that need a migration (one LIST of one object per CRD) and reports them;
      writes nothing.
extends_documentation_fragment:
  - kueueops.aks.attributes
  - kueueops.aks.attributes.no_diff
  - kueueops.aks.kube_auth
notes:
  - The identity needs C(get), C(list) and C(update) on every Kueue resource, and C(get), C(list) and C(update) of
    C(customresourcedefinitions/status) (docs/rbac.md, the C(upgrade) role).
  - Objects are written with the field manager C(kueueops-storage-migration); an unchanged object gains no
    C(managedFields) entry.
"""

EXAMPLES = r"""
- name: After upgrading Kueue to 0.16 or later by hand, store every object as v1beta2
  kueueops.aks.kueue_storage_migration:
  register: migration

- name: Only the Workloads, 200 per page, for at most an hour
  kueueops.aks.kueue_storage_migration:
    crds: [workloads.kueue.x-k8s.io]
    page_size: 200
    timeout: 3600
"""

RETURN = r"""
crds:
  description: Every Kueue CRD looked at, sorted by name.
  returned: always
  type: list
  elements: dict
  sample:
    - {name: clusterqueues.kueue.x-k8s.io, storage_version: v1beta2, stored_versions: [v1beta2],
       needs_migration: false, objects: 3, rewritten: 3, trimmed: true}
rewritten:
  description: Objects written back in this run (0 in check mode).
  returned: always
  type: int
  sample: 1068
trimmed:
  description: CRDs whose C(status.storedVersions) this run set to the storage version alone.
  returned: always
  type: list
  elements: str
remaining:
  description:
    - Objects still to rewrite in the CRD the run stopped at and the CRDs after it, counted before the first write
      (0 after a complete run).
  returned: always
  type: int
crds_remaining:
  description: The CRDs that still list an old version after a run cut short, the one it stopped at first.
  returned: failure
  type: list
  elements: str
"""

from ansible_collections.kueueops.aks.plugins.module_utils.kube.kueue_cluster import MAX_WORKERS
from ansible_collections.kueueops.aks.plugins.module_utils.kube.module import KueueOpsModule
from ansible_collections.kueueops.aks.plugins.module_utils.upgrade.storage_migration import StorageMigration


def main():
    module = KueueOpsModule(dict(
        crds=dict(type='list', elements='str', default=[]),
        page_size=dict(type='int', default=500),
        timeout=dict(type='int', default=1800),
        workers=dict(type='int', default=8),
    ), supports_check_mode=True)
    module.check_seconds('timeout')
    if module.params['page_size'] < 1:
        module.refuse('page_size must be 1 or more, got %d' % module.params['page_size'], 'page_size',
                      'give the number of objects to read per LIST request, for example 500')
    if not 1 <= module.params['workers'] <= MAX_WORKERS:
        module.refuse('must be between 1 and %d, got %d' % (MAX_WORKERS, module.params['workers']), 'workers',
                      'give the number of concurrent requests, for example the default 8')
    params = module.params
    api_client = module.api_client
    migration = StorageMigration(api_client, params['crds'], params['page_size'], params['timeout'],
                                 module.check_mode, params['workers'])
    module.exit_json(**module.run(migration.run, changed=False))


if __name__ == '__main__':
    main()
