#!/usr/bin/python
# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kueue_info
short_description: How Kueue is installed on a cluster, and what uninstalling it would destroy
version_added: 0.1.0
description:
  - Detects the install method, from what each method leaves in the cluster. B(Helm) - a Helm release of the
    C(kueue) chart (or named O(release_name)) recorded in Helm's own storage in O(kueue_namespace) (Secrets
    labelled C(owner=helm)); no helm binary is needed. B(Managed extension) - the C(kueue-extension) Deployment
    that the AKS managed extension C(microsoft.kueue) runs in O(kueue_namespace). RV(install_method) is V(helm),
    V(extension), V(both) or V(none).
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
  - kueueops.aks.kube_auth
requirements:
  - kubernetes >= 29.0.0
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
  description: The Helm release of Kueue (latest revision), or null.
  returned: success
  type: dict
  sample: {name: kueue, namespace: kueue-system, revision: 2, status: deployed, chart: kueue, chart_version: 0.19.2,
           app_version: v0.19.2}
helm_releases:
  description: Every Helm release recorded in O(kueue_namespace) (a namespace may hold others than Kueue's).
  returned: success
  type: list
  elements: dict
extension:
  description: Whether the C(kueue-extension) Deployment of the AKS managed extension runs in O(kueue_namespace).
  returned: success
  type: bool
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
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kueueops.aks.plugins.module_utils.errors import KueueOpsError, namespace_name_error
from ansible_collections.kueueops.aks.plugins.module_utils.kube_client import (
    KUBE_AUTH_ARGSPEC,
    describe_kube_error,
    get_api_client,
)
from ansible_collections.kueueops.aks.plugins.module_utils import backup as b
from ansible_collections.kueueops.aks.plugins.module_utils.verify import helm_releases

try:
    from kubernetes import client as k8s
    from kubernetes.client.exceptions import ApiException
except ImportError:  # pragma: no cover - get_api_client reports missing_required_lib
    k8s = None
    ApiException = Exception

KUEUE_CHART = 'kueue'


def install_method(helm, extension):
    """'helm', 'extension', 'both' or 'none'."""
    if helm and extension:
        return 'both'
    if helm:
        return 'helm'
    if extension:
        return 'extension'
    return 'none'


def pick_release(releases, release_name):
    """The release named ``release_name``, else the (only, or first by name) release of the kueue chart."""
    for release in releases:
        if release['name'] == release_name:
            return release
    for release in releases:
        if release.get('chart') == KUEUE_CHART:
            return release
    return None


def gather(api_client, namespace, release_name):
    core = k8s.CoreV1Api(api_client)
    exporter = b.Exporter(api_client, namespace)
    try:
        core.read_namespace(namespace, _request_timeout=b.REQUEST_TIMEOUT)
        namespace_exists = True
    except ApiException as exc:
        if exc.status != 404:
            raise
        namespace_exists = False
    releases = helm_releases(core, namespace) if namespace_exists else []
    release = pick_release(releases, release_name)
    extension = exporter.detect_aks_extension() if namespace_exists else False
    crds = sorted(c.metadata.name for c in k8s.ApiextensionsV1Api(api_client).list_custom_resource_definition(
        _request_timeout=b.REQUEST_TIMEOUT).items if c.spec.group == b.GROUP)

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
        for (ns, name), users in sorted(b.multikueue_secret_refs(objects.get('MultiKueueCluster', []),
                                                                 namespace).items()):
            secrets.append({'namespace': ns, 'name': name, 'clusters': users,
                            'exists': namespace_exists and _secret_exists(core, ns, name)})
        workloads = b.workload_counts(exporter.list_workloads(), raw_queues.get('LocalQueue', []),
                                      raw_queues.get('ClusterQueue', []))
    image = exporter.manager_image() if namespace_exists else None
    return {
        'changed': False,
        'install_method': install_method(release is not None, extension),
        'helm_release': release,
        'helm_releases': releases,
        'extension': extension,
        'namespace_exists': namespace_exists,
        'kueue_version': b.image_tag(image),
        'api_versions': dict((k, '%s/%s' % (b.GROUP, v)) for k, v in exporter.served.items()),
        'crds': crds,
        'counts': counts,
        'objects': sum(counts.values()),
        'multikueue_secrets': secrets,
        'workloads': workloads,
    }


def _secret_exists(core, namespace, name):
    """Whether the Secret exists (its metadata only is used; the data is never returned)."""
    try:
        core.read_namespaced_secret(name, namespace, _preload_content=False, _request_timeout=b.REQUEST_TIMEOUT)
    except ApiException as exc:
        if exc.status == 404:
            return False
        raise
    return True


def main():
    argument_spec = dict(
        kueue_namespace=dict(type='str', default='kueue-system'),
        release_name=dict(type='str', default='kueue'),
    )
    argument_spec.update(KUBE_AUTH_ARGSPEC)
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    problem = namespace_name_error(module.params['kueue_namespace'], 'kueue_namespace')
    if problem is not None:
        module.fail_json(changed=False, msg=problem.message())
    api_client = get_api_client(module)
    try:
        result = gather(api_client, module.params['kueue_namespace'], module.params['release_name'])
    except Exception as exc:  # pylint: disable=broad-except
        failure = describe_kube_error(exc, host=api_client.configuration.host).message()
    else:
        failure = None
    if failure is not None:
        # Outside the except block: a user-facing message, no traceback attached.
        module.fail_json(changed=False, msg=failure)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
