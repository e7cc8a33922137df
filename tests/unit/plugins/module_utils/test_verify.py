# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for the APIService check of plugins/module_utils/verify.py: pure logic on the
kubernetes client's own models (the check against the real aggregator is tests/reliability/test_faults.py)."""

from kubernetes import client

from ansible_collections.kueueops.aks.plugins.module_utils import verify


def apiservice(name, namespace="kueue-system", condition=None):
    status = client.V1APIServiceStatus(conditions=[condition] if condition else None)
    service = client.ApiregistrationV1ServiceReference(name="kueue-visibility-server", namespace=namespace,
                                                       port=443) if namespace else None
    return client.V1APIService(metadata=client.V1ObjectMeta(name=name), status=status,
                               spec=client.V1APIServiceSpec(group_priority_minimum=100, version_priority=100,
                                                            service=service))


def available(status, reason=None, message=None):
    return client.V1APIServiceCondition(type="Available", status=status, reason=reason, message=message)


class FakeRegistration:
    def __init__(self, items):
        self.items = items

    def list_api_service(self):
        return client.V1APIServiceList(items=self.items)


def test_only_the_apiservices_served_from_the_namespace_count():
    reg = FakeRegistration([
        apiservice("v1beta2.visibility.kueue.x-k8s.io"), apiservice("v1beta1.visibility.kueue.x-k8s.io"),
        apiservice("v1beta1.metrics.k8s.io", namespace="kube-system"), apiservice("v1.apps", namespace=None)])
    assert [a.metadata.name for a in verify.kueue_apiservices(reg, "kueue-system")] == [
        "v1beta1.visibility.kueue.x-k8s.io", "v1beta2.visibility.kueue.x-k8s.io"]
    assert verify.kueue_apiservices(reg, "other") == []


def test_apiservice_check_names_reason_and_message():
    ok = verify.apiservice_check(apiservice("v1beta2.visibility.kueue.x-k8s.io", condition=available(
        "True", "Passed", "all checks passed")))
    assert (ok.name, ok.ok) == ("apiservice/v1beta2.visibility.kueue.x-k8s.io", True)
    failed = verify.apiservice_check(apiservice("v1beta2.visibility.kueue.x-k8s.io", condition=available(
        "False", "FailedDiscoveryCheck", "failing or missing response from https://127.0.50.12:443/apis/"
        "visibility.kueue.x-k8s.io/v1beta2: connection refused")))
    assert failed.ok is False
    assert failed.reason == ("Available=False (FailedDiscoveryCheck): failing or missing response from "
                             "https://127.0.50.12:443/apis/visibility.kueue.x-k8s.io/v1beta2: connection refused "
                             "(Service kueue-system/kueue-visibility-server)")
    assert failed.details == {"service": "kueue-system/kueue-visibility-server", "status": "False",
                              "reason": "FailedDiscoveryCheck"}
    unchecked = verify.apiservice_check(apiservice("v1beta1.visibility.kueue.x-k8s.io"))
    assert unchecked.ok is False and unchecked.reason.startswith("no Available condition yet")


def test_no_apiservice_passes():
    verifier = verify.Verifier.__new__(verify.Verifier)
    verifier.ns, verifier.reg = "kueue-system", FakeRegistration([])
    assert [c.as_dict() for c in verifier.check_apiservices()] == [
        {"name": "apiservices", "ok": True, "reason": "no APIService is served from namespace kueue-system"}]
