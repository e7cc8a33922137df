# Copyright: (c) 2026, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Why a ClusterQueue is not Active because of an AdmissionCheck (issue 44): the chain ClusterQueue -> AdmissionCheck
-> MultiKueueConfig -> MultiKueueCluster (or the ProvisioningRequest controller), followed on the cluster and told
deepest cause first. The one owner of that explanation: kueue_queues' wait (apply.py), kueue_verify and its status
report (verify.py) call ``explain``.

Kueue's words, v0.19.2: a ClusterQueue whose AdmissionCheck is not Active is ``Active=False, AdmissionCheckInactive``
(pkg/cache); a MultiKueue AdmissionCheck is ``NoUsableClusters`` / ``SomeActiveClusters`` with "Inactive clusters:
[...]" (pkg/controller/admissionchecks/multikueue/admissioncheck.go); a MultiKueueCluster that cannot connect is
``ClientConnectionFailed`` with the client's error, such as ``no matches for kind "RayCluster" in version
"ray.io/v1"`` when the worker lacks a CRD the manager watches (multikueuecluster.go). The ProvisioningRequest
controller is not started at all when the cluster serves no ``autoscaling.x-k8s.io/v1`` ProvisioningRequest
(cmd/kueue/main.go, "Skipping provisioning controller setup"), so its AdmissionChecks never get a condition.

A cause is ``final`` when waiting cannot heal it: a kind missing on a worker (a CRD must be installed, and Kueue names
one at a time), a kubeconfig MultiKueue refuses (``InsecureKubeConfig``), an AdmissionCheck of Kueue's ProvisioningRequest
controller on a cluster that does not serve ProvisioningRequests. A wait ends at once on a final cause.
"""

from ansible_collections.kueueops.aks.plugins.module_utils.kueue.kueue_api import GROUP
from ansible_collections.kueueops.aks.plugins.module_utils.kube.kueue_cluster import path
from ansible_collections.kueueops.aks.plugins.module_utils.kueue.queues import admission_check_names

MULTIKUEUE = GROUP + '/multikueue'
PROVISIONING = GROUP + '/provisioning-request'
PROVISIONING_API = 'autoscaling.x-k8s.io/v1'
INACTIVE_REASON = 'AdmissionCheckInactive'
FINAL_REASONS = ('InsecureKubeConfig',)
MISSING_KIND = 'no matches for kind'


class Cause:
    """One link of the chain: ``text`` (names the object and its reason), ``final`` (cannot heal by waiting),
    ``depth`` (1 the AdmissionCheck, 2 what it names, 3 a MultiKueueCluster: the deepest is told first)."""

    __slots__ = ('text', 'final', 'depth')

    def __init__(self, text, final=False, depth=2):
        self.text = text
        self.final = final
        self.depth = depth

    def __repr__(self):
        return '<Cause %r%s>' % (self.text, ' final' if self.final else '')


def _active(obj):
    for cond in ((obj or {}).get('status') or {}).get('conditions') or []:
        if cond.get('type') == 'Active':
            return cond
    return None


def check_names(cq):
    """The AdmissionChecks a ClusterQueue lists, once each (queues.admission_check_names reads both API versions)."""
    return list(dict.fromkeys(name for _field, name in admission_check_names(cq or {})))


def cluster_cause(name, obj):
    """The Cause of a MultiKueueCluster that is not Active (None when it is)."""
    if obj is None:
        return Cause('MultiKueueCluster %s does not exist' % name, depth=3)
    cond = _active(obj)
    if cond is None:
        return Cause('MultiKueueCluster %s has no Active condition yet' % name, depth=3)
    if cond.get('status') == 'True':
        return None
    reason, message = cond.get('reason') or 'Unknown', cond.get('message') or ''
    final = reason in FINAL_REASONS or (reason == 'ClientConnectionFailed' and MISSING_KIND in message)
    text = 'MultiKueueCluster %s: Active=False, %s: %s' % (name, reason, message or 'no message')
    if MISSING_KIND in message:
        text += (' (the worker lacks a CRD of a kind the manager watches for its integrations; Kueue names one at a '
                 'time: set the manager\'s kueue_integrations to what the workers run, or install the operator\'s '
                 'CRDs on the worker; playbooks/multikueue.yml checks every kind before it writes)')
    return Cause(text, final, depth=3)


def check_causes(cluster, version, name):
    """The Causes, deepest first, of the AdmissionCheck ``name`` (read at Kueue API ``version``) not being Active;
    empty when it is Active."""
    gv = '%s/%s' % (GROUP, version)
    ac = cluster.get(path(gv, 'admissionchecks', name=name))
    if ac is None:
        return [Cause('AdmissionCheck %s does not exist' % name)]
    cond = _active(ac)
    if cond is not None and cond.get('status') == 'True':
        return []
    spec = ac.get('spec') or {}
    controller = spec.get('controllerName')
    own = Cause('AdmissionCheck %s (controller %s): %s' % (
        name, controller, 'Active=False, %s: %s' % (cond.get('reason'), cond.get('message') or 'no message')
        if cond is not None else 'no Active condition'), depth=1)
    causes = []
    if controller == MULTIKUEUE:
        params = spec.get('parameters') or {}
        config_name = params.get('name') if params.get('kind') == 'MultiKueueConfig' else None
        config = cluster.get(path(gv, 'multikueueconfigs', name=config_name)) if config_name else None
        if config_name and config is None:
            causes.append(Cause('MultiKueueConfig %s does not exist' % config_name))
        for member in ((config or {}).get('spec') or {}).get('clusters') or []:
            found = cluster_cause(member, cluster.get(path(gv, 'multikueueclusters', name=member)))
            if found is not None:
                causes.append(found)
    elif controller == PROVISIONING and cond is None:
        if 'ProvisioningRequest' not in (cluster.served_kinds(PROVISIONING_API) or ()):
            causes.append(Cause('Kueue\'s ProvisioningRequest controller does not run: the cluster serves no %s '
                                'ProvisioningRequest (install a cluster-autoscaler with ProvisioningRequest support, '
                                'then restart the Kueue manager), so AdmissionCheck %s never becomes Active'
                                % (PROVISIONING_API, name), final=True))
    return causes + [own]


def explain(cluster, version, cq):
    """The Causes, deepest first, of the ClusterQueue ``cq`` (a live object) being inactive because of its
    AdmissionChecks: empty unless its Active condition says ``AdmissionCheckInactive``. A read that fails gives no
    Cause (the caller keeps Kueue's own reason)."""
    cond = _active(cq)
    if cond is None or cond.get('status') == 'True' or cond.get('reason') != INACTIVE_REASON:
        return []
    causes = []
    for name in check_names(cq):
        try:
            causes.extend(check_causes(cluster, version, name))
        except Exception:  # pylint: disable=broad-except  # an unreadable link leaves Kueue's reason as it was
            continue
    return sorted(causes, key=lambda c: -c.depth)


def text(causes, reason):
    """Kueue's ``reason`` with the chain's causes before it, the deepest first: "<cause>; <cause>; <reason>"."""
    return '; '.join([c.text for c in causes] + [reason]) if causes else reason
