# Copyright: (c) 2026, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/module_utils/kueue/admission_checks.py (no cluster; the chain on the local control plane is
tests/integration/test_multikueue.py): the causes of a ClusterQueue inactive because of an AdmissionCheck, deepest
first, and which of them cannot heal by waiting."""

from ansible_collections.kueueops.aks.plugins.module_utils.kueue import admission_checks as ac
from tests.unit.fakes import FakeCluster

GV = '/apis/kueue.x-k8s.io/v1beta2/'
MISSING = 'no matches for kind "RayCluster" in version "ray.io/v1"'


def active(status, reason=None, message=None):
    return {'status': {'conditions': [{'type': 'Active', 'status': status, 'reason': reason, 'message': message}]}}


def cq(*checks, reason=ac.INACTIVE_REASON):
    obj = active('False', reason, 'references inactive AdmissionCheck(s): %s' % ', '.join(checks))
    obj.update(metadata={'name': 'team'}, spec={'admissionChecksStrategy': {'admissionChecks': [
        {'name': n} for n in checks]}})
    return obj


def multikueue(clusters):
    objs = {GV + 'admissionchecks/mk': dict(active('False', 'NoUsableClusters', 'Inactive clusters: [w1]'),
                                            spec={'controllerName': ac.MULTIKUEUE, 'parameters': {
                                                'apiGroup': 'kueue.x-k8s.io', 'kind': 'MultiKueueConfig',
                                                'name': 'cfg'}}),
            GV + 'multikueueconfigs/cfg': {'spec': {'clusters': list(clusters)}}}
    for name, obj in clusters.items():
        if obj is not None:
            objs[GV + 'multikueueclusters/' + name] = obj
    return objs


def test_a_missing_kind_on_a_worker_is_the_first_cause_and_cannot_heal():
    cluster = FakeCluster(objects=multikueue({'w1': active('False', 'ClientConnectionFailed', MISSING),
                                              'w2': active('True', 'Active', 'Connected')}))
    causes = ac.explain(cluster, 'v1beta2', cq('mk'))
    assert [c.depth for c in causes] == [3, 1]
    assert causes[0].final and causes[0].text.startswith('MultiKueueCluster w1: Active=False, ClientConnectionFailed')
    assert 'kueue_integrations' in causes[0].text and 'install the operator' in causes[0].text
    assert causes[1].text.startswith('AdmissionCheck mk (controller kueue.x-k8s.io/multikueue): Active=False, '
                                     'NoUsableClusters') and not causes[1].final
    text = ac.text(causes, 'AdmissionCheckInactive: references inactive AdmissionCheck(s): mk')
    assert text.index('MultiKueueCluster w1') < text.index('AdmissionCheck mk') < text.index('AdmissionCheckInactive')


def test_causes_that_can_heal_are_not_final():
    for obj in (None, {'status': {}}, active('False', 'ClientConnectionFailed', 'dial tcp 127.0.0.1:1: refused'),
                active('False', 'BadConfig', 'load client config failed: secret not found')):
        causes = ac.explain(FakeCluster(objects=multikueue({'w1': obj})), 'v1beta2', cq('mk'))
        assert causes and not any(c.final for c in causes), obj
    assert ac.cluster_cause('w1', active('False', 'InsecureKubeConfig', 'exec')).final


def test_an_active_queue_or_another_reason_has_no_chain():
    cluster = FakeCluster(objects=multikueue({'w1': active('False', 'ClientConnectionFailed', MISSING)}))
    assert ac.explain(cluster, 'v1beta2', dict(cq('mk'), **active('True', 'Ready'))) == []
    assert ac.explain(cluster, 'v1beta2', cq('mk', reason='FlavorNotFound')) == []
    # an AdmissionCheck that is Active adds nothing; one that does not exist is named
    causes = ac.explain(FakeCluster(), 'v1beta2', cq('gone'))
    assert [c.text for c in causes] == ['AdmissionCheck gone does not exist']


def test_the_provisioning_controller_absent_cannot_heal():
    objs = {GV + 'admissionchecks/prov': {'spec': {'controllerName': ac.PROVISIONING}}}
    causes = ac.explain(FakeCluster(objects=objs), 'v1beta2', cq('prov'))
    assert causes[0].final and 'ProvisioningRequest controller does not run' in causes[0].text
    assert causes[1].text.endswith('no Active condition')
    served = FakeCluster(objects=objs, served={ac.PROVISIONING_API: {'provisioningrequests': 'ProvisioningRequest'}})
    assert [c.final for c in ac.explain(served, 'v1beta2', cq('prov'))] == [False]


def test_a_read_that_fails_leaves_kueues_reason():
    assert ac.explain(FakeCluster(error=OSError('connection refused')), 'v1beta2', cq('mk')) == []
