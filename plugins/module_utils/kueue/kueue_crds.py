# Copyright: (c) 2026, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kueue's CRDs as the cluster has them: the one reader of them (``kueue_crds``) and what each says of its versions
(the storage version, ``status.storedVersions``, whether objects may still be stored at another one). A small file
of its own: the storage migration, the upgrade plan and kueue_helm's check before a hop (release_train) read it,
and kueue_helm's payload should not carry the migration's write engine to do so."""

from ansible_collections.kueueops.aks.plugins.module_utils.kueue.kueue_api import GROUP
from ansible_collections.kueueops.aks.plugins.module_utils.kube.kueue_cluster import path

CRD_API = 'apiextensions.k8s.io/v1'


def storage_version(crd):
    """The version a CRD stores new writes at (``spec.versions[].storage``)."""
    return next((v['name'] for v in (crd.get('spec') or {}).get('versions') or [] if v.get('storage')), None)


def stored_versions(crd):
    return list((crd.get('status') or {}).get('storedVersions') or [])


def needs_migration(crd):
    """Whether objects of this CRD may still be stored at another version than its storage version."""
    return stored_versions(crd) != [storage_version(crd)]


def crd_state(crd):
    """What the plan and the module report of one CRD."""
    return {'name': crd['metadata']['name'], 'storage_version': storage_version(crd),
            'stored_versions': stored_versions(crd), 'needs_migration': needs_migration(crd)}


def kueue_crds(cluster):
    """Every CRD of Kueue's API group, by name."""
    crds = cluster.items(path(CRD_API, 'customresourcedefinitions'))
    return sorted((c for c in crds if (c.get('spec') or {}).get('group') == GROUP),
                  key=lambda c: c['metadata']['name'])
