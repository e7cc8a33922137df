#!/usr/bin/python
# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kueue_info
short_description: How Kueue is installed on a cluster, and what uninstalling it would destroy
version_added: 1.0.0
description:
  - Detects the install method, from what each method leaves in the cluster. B(Helm) - a Helm release of the
    C(kueue) chart (or named O(release_name)) recorded in Helm's own storage in O(kueue_namespace) (Secrets
    labelled C(owner=helm)); no helm binary is needed. B(Managed extension) - the C(kueue-extension) Deployment
    that the AKS managed extension C(microsoft.kueue) runs in O(kueue_namespace). RV(install_method) is V(helm),
    V(extension), V(both) or V(none).
  - The managed extension is itself a Helm release, named like the extension, in its release namespace. That
    release counts as the extension's own (RV(extension_release), not RV(helm_release)) only when the cluster says
    so unambiguously - the C(kueue-extension) Deployment runs B(and) AKS's extension manager keeps an
    C(ExtensionConfig) (C(aks.clusterconfig.azure.com/v1beta1), or C(clusterconfig.azure.com/v1beta1) on
    Arc-enabled clusters) of type C(microsoft.kueue) named like the release in O(kueue_namespace); never on the
    release's name alone. So an extension-only cluster reports V(extension). Any other Helm release of Kueue beside
    the extension (or the extension's own, when that C(ExtensionConfig) cannot be read) reports V(both); Azure
    Resource Manager can tell them apart (the role's C(uninstall_with_backup) asks it with C(kueue_aks_*)).
  - Reports what an uninstall destroys - the Kueue namespace, the Kueue CRDs and with them every Kueue object (the
    number per kind), the Secrets that MultiKueueClusters use (they live in the Kueue namespace) - and the Workloads
    pending and admitted per queue.
  - The first step of the role entry point C(uninstall_with_backup). Read-only; never reports a change; works when
    Kueue is absent (everything empty, RV(install_method=none)).
author:
  - kueueops contributors (@kueueops)
options:
  kueue_namespace:
    description: Namespace Kueue runs in (Helm release, managed extension, MultiKueue Secrets).
    type: str
    default: kueue-system
  release_name:
    description:
      - Name of the Helm release of Kueue. A release of another name counts when its chart is C(kueue).
    type: str
    default: kueue
extends_documentation_fragment:
  - kueueops.aks.attributes
  - kueueops.aks.attributes.info_module
  - kueueops.aks.kube_auth
"""

EXAMPLES = r"""
- name: How is Kueue installed, and what would an uninstall destroy?
  kueueops.aks.kueue_info:
  register: kueue

- name: Stop when the cluster runs both the Helm chart and the managed extension
  ansible.builtin.assert:
    that: kueue.install_method != 'both'
"""

RETURN = r"""
install_method:
  description: V(helm), V(extension), V(both) or V(none).
  returned: success
  type: str
  sample: helm
helm_release:
  description: The Helm release of Kueue (latest revision) that the managed extension does not manage, or null.
  returned: success
  type: dict
  sample: {name: kueue, namespace: kueue-system, revision: 2, status: deployed, chart: kueue, chart_version: 0.19.2,
           app_version: v0.19.2, extension_managed: false}
helm_releases:
  description: Every Helm release recorded in O(kueue_namespace) (a namespace may hold others than Kueue's), each
    with C(extension_managed) - whether it is the managed extension's own release.
  returned: success
  type: list
  elements: dict
extension:
  description: Whether the C(kueue-extension) Deployment of the AKS managed extension runs in O(kueue_namespace).
  returned: success
  type: bool
extension_release:
  description: The Helm release the AKS managed extension installed Kueue with (the release an C(ExtensionConfig)
    of type C(microsoft.kueue) names, with the C(kueue-extension) Deployment running), or null.
  returned: success
  type: dict
  sample: {name: kueue, namespace: kueue-system, revision: 1, status: deployed, chart: kueue, chart_version: 0.19.2,
           app_version: v0.19.2, extension_managed: true}
extension_configs:
  description: The C(ExtensionConfig) objects of type C(microsoft.kueue) in O(kueue_namespace) - AKS's extension
    manager's record of each extension instance (empty when there is none, or when they cannot be read).
  returned: success
  type: list
  elements: dict
  sample: [{name: kueue, namespace: kueue-system, extension_type: microsoft.kueue, version: 0.19.2}]
namespace_exists:
  description: Whether O(kueue_namespace) exists.
  returned: success
  type: bool
kueue_version:
  description: The Kueue manager's image tag, if its Deployment runs.
  returned: success
  type: str
  sample: v0.19.2
api_versions:
  description: The served version of each Kueue kind (empty when Kueue's API is not served).
  returned: success
  type: dict
crds:
  description: The Kueue CRDs (C(*.kueue.x-k8s.io)); an uninstall deletes them and every object they hold.
  returned: success
  type: list
  elements: str
counts:
  description: Kueue configuration objects per kind (all of them, C(aks-) ones included).
  returned: success
  type: dict
  sample: {ClusterQueue: 2, LocalQueue: 2, ResourceFlavor: 3}
objects:
  description: How many Kueue configuration objects there are in all.
  returned: success
  type: int
multikueue_secrets:
  description: The Secrets MultiKueueClusters read kubeconfigs from, with the clusters using them and whether they
    exist (names only; never their data).
  returned: success
  type: list
  elements: dict
  sample: [{namespace: kueue-system, name: worker1, clusters: [worker1], exists: true}]
workloads:
  description: Pending and admitted Workloads per LocalQueue and ClusterQueue, and totals (with finished ones).
  returned: success
  type: dict
cluster:
  description: The identity of the cluster (C(uid), the UID of its C(kube-system) namespace, which no other cluster
    shares; C(server) and C(context) as readable names), what M(kueueops.aks.kueue_backup) records in a backup.
  returned: success
  type: dict
  sample: {uid: 6f1c2b9e-8a51-4c1e-9d0a-3b1f0c2d4e5f, server: "https://aks-prod.hcp.example:443", context: aks-prod,
           resource_id: null, name: null}
"""

from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import KueueOpsError
from ansible_collections.kueueops.aks.plugins.module_utils.kube.module import KueueOpsModule
from ansible_collections.kueueops.aks.plugins.module_utils.kueue import reader as b
from ansible_collections.kueueops.aks.plugins.module_utils.kueue.kueue_api import GROUP
from ansible_collections.kueueops.aks.plugins.module_utils.kueue import install_method as im
from ansible_collections.kueueops.aks.plugins.module_utils.kueue import queues as q
from ansible_collections.kueueops.aks.plugins.module_utils.kube.kueue_cluster import Cluster, path
from ansible_collections.kueueops.aks.plugins.module_utils.helm.helm_storage import helm_releases

from ansible_collections.kueueops.aks.plugins.module_utils.kube.kube_import import ApiException


def extension_configs(cluster, namespace):
    """The ExtensionConfig objects of type microsoft.kueue in ``namespace`` (im.kueue_extension_configs), from the
    AKS group, else the Arc one. None served, or not readable (403): [] - no evidence, so no release is
    counted as the extension's own. ``cluster``: a kueue_cluster.Cluster."""
    for group in im.EXTENSION_CONFIG_GROUPS:
        try:
            items = cluster.items(path('%s/%s' % (group, im.EXTENSION_CONFIG_VERSION), im.EXTENSION_CONFIG_PLURAL,
                                       namespace))
        except ApiException as exc:
            if exc.status in (404, 403):
                continue
            raise
        configs = im.kueue_extension_configs(items, namespace)
        if configs:
            return configs
    return []


def gather(api_client, namespace, release_name):
    cluster = Cluster(api_client)
    exporter = b.Exporter(api_client, namespace)
    namespace_exists = cluster.get(path('v1', 'namespaces', name=namespace)) is not None
    releases = helm_releases(cluster, namespace) if namespace_exists else []
    extension = exporter.detect_aks_extension() if namespace_exists else False
    configs = extension_configs(cluster, namespace) if namespace_exists else []
    method = im.classify(releases, release_name, extension, configs)
    crds = sorted(c['metadata']['name'] for c in cluster.items(
        path('apiextensions.k8s.io/v1', 'customresourcedefinitions'))
        if (c.get('spec') or {}).get('group') == GROUP)

    counts = {}
    secrets = []
    workloads = b.workload_counts([], [], [])
    try:
        exporter.discover()
    except KueueOpsError:
        exporter.served = {}  # Kueue's API is not served: nothing to count
    if exporter.served:
        objects, _excluded, raw_queues = b.snapshot(exporter, False, True, extension)
        counts = dict((kind, len(items)) for kind, items in objects.items())
        for (ns, name), users in sorted(q.multikueue_secret_refs(objects.get('MultiKueueCluster', []),
                                                                 namespace).items()):
            secrets.append({'namespace': ns, 'name': name, 'clusters': users,
                            'exists': namespace_exists and exporter.read_secret(ns, name) is not None})
        workloads = b.workload_counts(exporter.list_workloads(), raw_queues.get('LocalQueue', []),
                                      raw_queues.get('ClusterQueue', []))
    image = exporter.manager_image() if namespace_exists else None
    return {
        'changed': False,
        'install_method': method['install_method'],
        'helm_release': method['helm_release'],
        'helm_releases': method['releases'],
        'extension': extension,
        'extension_release': method['extension_release'],
        'extension_configs': configs,
        'namespace_exists': namespace_exists,
        'kueue_version': b.image_tag(image),
        'api_versions': dict((k, '%s/%s' % (GROUP, v)) for k, v in exporter.served.items()),
        'crds': crds,
        'counts': counts,
        'objects': sum(counts.values()),
        'multikueue_secrets': secrets,
        'workloads': workloads,
    }


def main():
    module = KueueOpsModule(dict(
        kueue_namespace=dict(type='str', default='kueue-system'),
        release_name=dict(type='str', default='kueue'),
    ), supports_check_mode=True)
    module.check_namespace('kueue_namespace')
    api_client = module.api_client
    result = module.run(lambda: dict(gather(api_client, module.params['kueue_namespace'],
                                            module.params['release_name']), cluster=module.cluster_identity()),
                        changed=False)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
