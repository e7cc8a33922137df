# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/module_utils/verify/verify.py: pure logic on objects as the API returns them (camelCase JSON
dicts, what the cluster layer module_utils/kube/kueue_cluster.py gives), read through a fake Cluster (the check against
the real aggregator is tests/reliability/test_faults.py)."""

import base64
import gzip
import json

import pytest

from ansible_collections.kueueops.aks.plugins.module_utils.verify import verify
from ansible_collections.kueueops.aks.plugins.module_utils.kube.kube_import import ApiException
from tests.unit.fakes import FakeCluster

APISERVICES = "/apis/apiregistration.k8s.io/v1/apiservices"


def apiservice(name, namespace="kueue-system", condition=None):
    spec = {"groupPriorityMinimum": 100, "versionPriority": 100}
    if namespace:
        spec["service"] = {"name": "kueue-visibility-server", "namespace": namespace, "port": 443}
    out = {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": name},
           "spec": spec, "status": {}}
    if condition:
        out["status"]["conditions"] = [condition]
    return out


def available(status, reason=None, message=None):
    cond = {"type": "Available", "status": status}
    if reason is not None:
        cond["reason"] = reason
    if message is not None:
        cond["message"] = message
    return cond


def verifier_on(cluster, namespace="kueue-system"):
    verifier = verify.Verifier(None, namespace=namespace)
    verifier.cluster = cluster
    return verifier


def test_only_the_apiservices_served_from_the_namespace_count():
    cluster = FakeCluster({APISERVICES: [
        apiservice("v1beta2.visibility.kueue.x-k8s.io"), apiservice("v1beta1.visibility.kueue.x-k8s.io"),
        apiservice("v1beta1.metrics.k8s.io", namespace="kube-system"), apiservice("v1.apps", namespace=None)]})
    assert [a["metadata"]["name"] for a in verify.kueue_apiservices(cluster, "kueue-system")] == [
        "v1beta1.visibility.kueue.x-k8s.io", "v1beta2.visibility.kueue.x-k8s.io"]
    assert verify.kueue_apiservices(cluster, "other") == []
    assert cluster.calls == [("items", APISERVICES, {}), ("items", APISERVICES, {})]


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
    assert unchecked.details == {"service": "kueue-system/kueue-visibility-server", "status": None, "reason": None}
    bare = verify.apiservice_check(apiservice("v1beta1.visibility.kueue.x-k8s.io", condition=available("Unknown")))
    assert bare.reason == ("Available=Unknown (no reason): no message (Service kueue-system/kueue-visibility-server)")


def test_no_apiservice_passes():
    verifier = verifier_on(FakeCluster({APISERVICES: []}))
    assert [c.as_dict() for c in verifier.check_apiservices()] == [
        {"name": "apiservices", "ok": True, "reason": "no APIService is served from namespace kueue-system"}]


def test_verifier_builds_one_cluster_on_the_api_client():
    api_client = object()
    verifier = verify.Verifier(api_client, namespace="ns", webhook_probe=False)
    assert verifier.api_client is api_client and verifier.cluster.api_client is api_client
    assert (verifier.ns, verifier.install_method, verifier.release_name) == ("ns", "helm", "kueue")


# ------------------------------------------------------------------ deployments
DEPLOYMENTS = "/apis/apps/v1/namespaces/kueue-system/deployments/"
PODS = "/api/v1/namespaces/kueue-system/pods"


def deployment(replicas, ready=None, available_replicas=None, updated=None, generation=1):
    """A Deployment whose rollout is complete unless ``updated`` says how many replicas run the newest spec."""
    want = 1 if replicas is None else replicas
    status = {"observedGeneration": 1, "replicas": want, "updatedReplicas": want if updated is None else updated}
    if ready is not None:
        status["readyReplicas"] = ready
    if available_replicas is not None:
        status["availableReplicas"] = available_replicas
    return {"metadata": {"name": "kueue-controller-manager", "generation": generation},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"control-plane": "controller-manager",
                                                                        "app": "kueue"}}},
            "status": status}


def test_check_deployments_counts_ready_and_available():
    cluster = FakeCluster(objects={DEPLOYMENTS + "kueue-controller-manager": deployment(2, 2, 2)})
    assert [c.as_dict() for c in verifier_on(cluster).check_deployments()] == [
        {"name": "deployment/kueue-controller-manager", "ok": True, "reason": "2/2 ready, 2 available",
         "details": {"ready": 2, "replicas": 2, "available": 2}}]


def test_a_rollout_that_is_not_complete_is_not_ready():
    """An upgrade whose new Pod never turns ready: the old Pod is ready and available, the rollout is not done."""
    stuck = deployment(1, 1, 1, updated=0)
    stuck["status"]["replicas"] = 1
    cluster = FakeCluster({PODS: []}, {DEPLOYMENTS + "kueue-controller-manager": stuck})
    [check] = verifier_on(cluster).check_deployments()
    assert check.ok is False and check.reason.startswith(
        "1/1 ready, 1 available, 0/1 updated to its newest spec (the rollout is not complete)")
    stuck["status"].update(updatedReplicas=1, replicas=2)
    [check] = verifier_on(cluster).check_deployments()
    assert check.ok is False and "1 old replica(s) still running" in check.reason
    cluster = FakeCluster({PODS: []}, {DEPLOYMENTS + "kueue-controller-manager": deployment(1, 1, 1, generation=2)})
    [check] = verifier_on(cluster).check_deployments()
    assert check.ok is False and "not observed yet" in check.reason


def test_check_deployments_missing_and_unreadable():
    verifier = verifier_on(FakeCluster(objects={
        DEPLOYMENTS + "kueue-extension": ApiException(status=403, reason="Forbidden")}))
    verifier.install_method = "extension"
    checks = verifier.check_deployments()
    assert [(c.name, c.ok) for c in checks] == [
        ("deployment/kueue-controller-manager", False), ("deployment/kueue-extension", False)]
    assert checks[0].reason == "not found in namespace kueue-system"
    assert "403" in checks[1].reason and "Forbidden" in checks[1].reason


def test_unready_deployment_names_what_its_pods_wait_for():
    pods = [
        {"metadata": {"name": "m-1"}, "status": {"phase": "Pending", "containerStatuses": [
            {"name": "manager", "ready": False, "restartCount": 0,
             "state": {"waiting": {"reason": "ImagePullBackOff", "message": "no such image"}}}]}},
        {"metadata": {"name": "m-2"}, "status": {"phase": "Running", "containerStatuses": [
            {"name": "manager", "ready": False, "restartCount": 3, "state": {"running": {}}}]}},
        {"metadata": {"name": "m-3"}, "status": {"phase": "Pending", "containerStatuses": [
            {"name": "manager", "ready": False, "state": {"waiting": {}}}]}},
        {"metadata": {"name": "m-4"}, "status": {"phase": "Pending"}},
    ]
    for pod in pods:  # the labels of the manager's Pods, which the Deployment selects them by
        pod["metadata"]["labels"] = {"app": "kueue", "control-plane": "controller-manager"}
    cluster = FakeCluster({PODS: pods}, {DEPLOYMENTS + "kueue-controller-manager": deployment(1)})
    [check] = verifier_on(cluster).check_deployments()
    assert check.ok is False
    assert check.reason == ("0/1 ready, 0 available; m-1: ImagePullBackOff no such image; "
                            "m-2: container manager not ready (restarts 3); m-3:; m-4: Pending")
    assert cluster.calls == [("get", DEPLOYMENTS + "kueue-controller-manager", {}),
                             ("items", PODS, {"labelSelector": "app=kueue,control-plane=controller-manager"})]


def test_unready_deployment_without_pods_or_with_unreadable_pods():
    cluster = FakeCluster({PODS: []}, {DEPLOYMENTS + "kueue-controller-manager": deployment(None)})
    [check] = verifier_on(cluster).check_deployments()
    assert check.reason == "0/1 ready, 0 available; no pods match app=kueue,control-plane=controller-manager"
    cluster.collections[PODS] = ApiException(status=403)
    [check] = verifier_on(cluster).check_deployments()
    assert check.reason == "0/1 ready, 0 available"


def test_detect_method_by_the_extension_deployment():
    assert verifier_on(FakeCluster()).detect_method() == "helm"
    found = FakeCluster(objects={DEPLOYMENTS + "kueue-extension": {"metadata": {"name": "kueue-extension"}}})
    assert verifier_on(found).detect_method() == "extension"
    with pytest.raises(ApiException):
        verifier_on(FakeCluster(objects={DEPLOYMENTS + "kueue-extension": ApiException(status=500)})).detect_method()


# ------------------------------------------------------------------ CRDs, webhooks, discovery
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def crd(plural, group=verify.GROUP, established="True"):
    return {"metadata": {"name": "%s.%s" % (plural, group)}, "spec": {"group": group},
            "status": {"conditions": [{"type": "NamesAccepted", "status": "True"},
                                      {"type": "Established", "status": established}]}}


def test_check_crds_missing_and_not_established():
    verifier = verifier_on(FakeCluster({CRDS: [crd("clusterqueues"), crd("localqueues", established="False"),
                                               crd("widgets", group="example.com")]}))
    verifier.expected_crds = ("clusterqueues", "localqueues", "workloads")
    [check] = verifier.check_crds()
    assert check.as_dict() == {"name": "crds", "ok": False,
                               "reason": "missing: workloads; not Established: localqueues",
                               "details": {"present": ["clusterqueues", "localqueues"]}}
    verifier.expected_crds = ("clusterqueues",)
    assert verifier.check_crds()[0].reason == "1 CRDs established"


def webhook_config(name, namespace, ca=True):
    client_config = {"service": {"namespace": namespace, "name": "kueue-webhook-service"}}
    if ca:
        client_config["caBundle"] = "Q0E="
    return {"metadata": {"name": name}, "webhooks": [{"name": "w", "clientConfig": client_config}]}


def test_check_webhooks_needs_a_ca_bundle_on_the_namespaces_configurations():
    validating = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
    mutating = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
    url_only = {"metadata": {"name": "by-url"}, "webhooks": [{"name": "u", "clientConfig": {"url": "https://x"}}]}
    cluster = FakeCluster({validating: [webhook_config("kueue-v", "kueue-system"), url_only,
                                        webhook_config("other", "elsewhere", ca=False)],
                           mutating: [webhook_config("kueue-m", "kueue-system", ca=False)]})
    verifier = verifier_on(cluster)
    verifier.webhook_probe = False
    assert [c.as_dict() for c in verifier.check_webhooks()] == [{
        "name": "webhook-configurations", "ok": False,
        "reason": "without a CA bundle: kueue-m (the manager has not injected its certificate yet)"}]
    cluster.collections[mutating] = [webhook_config("kueue-m", "kueue-system")]
    assert verifier.check_webhooks()[0].reason == "2 configurations with CA bundles"
    elsewhere = verifier_on(cluster, "nothing-here")
    elsewhere.webhook_probe = False
    assert [c.as_dict() for c in elsewhere.check_webhooks()] == [{
        "name": "webhook-configurations", "ok": False,
        "reason": "no webhook configuration points at a service in nothing-here"}]


def test_webhook_probe_is_a_dry_run_create_of_a_cluster_queue():
    clusterqueues = "/apis/kueue.x-k8s.io/v1beta2/clusterqueues"
    cluster = FakeCluster(objects={"/apis": {"groups": []}})
    check = verifier_on(cluster).probe_webhook()
    assert check.as_dict() == {"name": "webhook-roundtrip", "ok": True,
                               "reason": "dry-run ClusterQueue admitted through Kueue's webhooks"}
    assert cluster.calls[-1] == ("create", clusterqueues, {"dryRun": "All"})
    assert cluster.writes[-1] == ("create", clusterqueues, {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": verify.PROBE_NAME},
        "spec": {"namespaceSelector": {}}})
    cluster.objects[clusterqueues] = ApiException(status=409, reason="Conflict")
    assert verifier_on(cluster).probe_webhook().as_dict() == {
        "name": "webhook-roundtrip", "ok": True, "reason": "a ClusterQueue named %s already exists" % verify.PROBE_NAME}
    cluster.objects[clusterqueues] = ApiException(status=500, reason="Internal Server Error")
    failed = verifier_on(cluster).probe_webhook()
    assert failed.ok is False and failed.reason.startswith("dry-run create of a ClusterQueue failed: ")


def test_served_version_prefers_v1beta2():
    def groups(*versions, preferred):
        return {"groups": [{"name": "apps", "versions": [{"version": "v1"}], "preferredVersion": {"version": "v1"}},
                           {"name": verify.GROUP, "versions": [{"version": v} for v in versions],
                            "preferredVersion": {"version": preferred}}]}
    assert verifier_on(FakeCluster(objects={"/apis": groups("v1beta1", "v1beta2", preferred="v1beta1")})) \
        .served_version() == "v1beta2"
    assert verifier_on(FakeCluster(objects={"/apis": groups("v1beta1", "v1alpha1", preferred="v1beta1")})) \
        .served_version() == "v1beta1"
    assert verifier_on(FakeCluster(objects={"/apis": {"groups": []}})).served_version() == "v1beta2"
    assert verifier_on(FakeCluster()).served_version() == "v1beta2"


# ------------------------------------------------------------------ Helm's storage
SECRETS = "/api/v1/namespaces/kueue-system/secrets"


def helm_secret(name, version, status, chart=None):
    out = {"metadata": {"name": "sh.helm.release.v1.%s.v%s" % (name, version),
                        "labels": {"owner": "helm", "name": name, "version": str(version), "status": status}}}
    if chart is not None:
        release = {"name": name, "chart": {"metadata": chart}}
        blob = base64.b64encode(gzip.compress(json.dumps(release).encode()))
        out["data"] = {"release": base64.b64encode(blob).decode()}
    return out


def test_check_helm_release_reads_the_latest_revision():
    cluster = FakeCluster({SECRETS: [
        helm_secret("kueue", 1, "superseded", {"name": "kueue", "version": "0.13.0", "appVersion": "v0.13.0"}),
        helm_secret("kueue", 2, "deployed", {"name": "kueue", "version": "0.14.1", "appVersion": "v0.14.1"})]})
    verifier = verifier_on(cluster)
    verifier.release_name = "kueue"
    assert [c.as_dict() for c in verifier.check_helm_release()] == [{
        "name": "helm-release", "ok": True, "reason": "revision 2 is deployed",
        "details": {"revision": 2, "status": "deployed", "chart_version": "0.14.1", "app_version": "v0.14.1"}}]
    assert cluster.calls == [("items", SECRETS, {"labelSelector": "owner=helm,name=kueue"})]
    cluster.collections[SECRETS] = []
    assert verifier.check_helm_release()[0].reason == "no Helm release 'kueue' in namespace kueue-system"
    cluster.collections[SECRETS] = ApiException(status=403, reason="Forbidden")
    failed = verifier.check_helm_release()[0]
    assert failed.ok is False and failed.reason.startswith("cannot read Helm's release records: ")


# ------------------------------------------------------------------ queues, waiting
def test_queue_status_reads_cluster_queues_and_the_local_queues_of_every_namespace():
    cq = {"metadata": {"name": "team-a"}, "spec": {"cohortName": "research", "resourceGroups": [{"flavors": [
        {"name": "on-demand", "resources": [{"name": "cpu", "nominalQuota": "32"}]}]}]},
          "status": {"pendingWorkloads": 1, "admittedWorkloads": 2,
                     "conditions": [{"type": "Active", "status": "True", "reason": "Ready"}],
                     "flavorsUsage": [{"name": "on-demand", "resources": [{"name": "cpu", "total": "4"}]}]}}
    lqs = [{"metadata": {"name": "q", "namespace": ns}, "spec": {"clusterQueue": "team-a"}, "status": {}}
           for ns in ("b", "a")]
    cluster = FakeCluster({"/apis/kueue.x-k8s.io/v1beta2/clusterqueues": [cq],
                           "/apis/kueue.x-k8s.io/v1beta2/localqueues": lqs}, {"/apis": {"groups": []}}, page_size=2)
    assert verifier_on(cluster).queue_status() == {
        "cluster_queues": [{"name": "team-a", "active": True, "reason": "Ready", "pending": 1, "admitted": 2,
                            "cohort": "research", "flavors": [{"name": "on-demand", "resources": [
                                {"name": "cpu", "nominal": "32", "used": "4"}]}]}],
        "local_queues": [{"name": "q", "namespace": ns, "cluster_queue": "team-a", "active": False, "pending": 0,
                          "admitted": 0} for ns in ("a", "b")]}
    cluster.collections["/apis/kueue.x-k8s.io/v1beta2/localqueues"] = ApiException(status=404)
    assert verifier_on(cluster).queue_status() == {"cluster_queues": [], "local_queues": []}


def test_wait_for_change_watches_the_deployments_from_the_lists_version():
    deployments = "/apis/apps/v1/namespaces/kueue-system/deployments"
    cluster = FakeCluster({deployments: []}, resource_version="42",
                          watches=[{"type": "MODIFIED", "object": {}}, {"type": "MODIFIED", "object": {}}])
    verifier_on(cluster)._wait_for_change(7.5)
    # The watch is what is left of the 7.5 s once the LIST answered (module_utils/kube/wait.py's Deadline).
    (listed, watched) = cluster.calls
    assert listed == ("list", deployments, {}) and watched[:2] == ("watch", deployments)
    assert watched[2]["resourceVersion"] == "42"
    assert 7.0 < watched[2]["timeoutSeconds"] <= 7.5
    assert cluster.streams[0].closed is True and cluster.events_read == 1  # the watch ends with the first event


def test_queue_status_summarises_each_page_before_reading_the_next():
    """10,000 LocalQueues are never whole in memory: a page is summarised before the next is read."""
    lqs = [{"metadata": {"name": "q%d" % n, "namespace": "ns"}, "spec": {"clusterQueue": "cq"},
            "status": {"conditions": [{"type": "Active", "status": "True"}]}} for n in range(5)]
    summarised = []

    class Paged(FakeCluster):
        def pages(self, api_path, timeout=None, **query):
            for items, meta in FakeCluster.pages(self, api_path, timeout=timeout, **query):
                yield items, meta
                summarised.append(len(report_so_far()))

    cluster = Paged({"/apis/kueue.x-k8s.io/v1beta2/clusterqueues": [],
                     "/apis/kueue.x-k8s.io/v1beta2/localqueues": lqs}, {"/apis": {"groups": []}}, page_size=2)
    verifier = verifier_on(cluster)
    seen = {}
    original = verifier._local_queues

    def spy(items, out):
        seen["out"] = out
        original(items, out)
    verifier._local_queues = spy

    def report_so_far():
        return (seen.get("out") or {}).get("local_queues") or []
    report = verifier.queue_status()
    assert summarised == [0, 2, 4, 5]  # the cluster queues' one page, then 2 + 2 + 1 local queues as they came
    assert [q["name"] for q in report["local_queues"]] == ["q%d" % n for n in range(5)]
    assert all(q["active"] for q in report["local_queues"])
    # A failed page gives no queue at all, as a failed LIST did.
    cluster.collections["/apis/kueue.x-k8s.io/v1beta2/clusterqueues"] = ApiException(status=403)
    assert verifier_on(cluster).queue_status() == {"cluster_queues": [], "local_queues": []}


# ------------------------------------------------------------------ MultiKueue
KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
MK = "kueue.x-k8s.io/multikueue"


def active(status, reason=None, message=None):
    cond = {"type": "Active", "status": status}
    cond.update({k: v for k, v in (("reason", reason), ("message", message)) if v is not None})
    return {"conditions": [cond]}


def admission_check(name="mk", controller=MK, config="mk-config", status=None, kind="MultiKueueConfig"):
    out = {"metadata": {"name": name}, "spec": {"controllerName": controller, "parameters": {
        "apiGroup": "kueue.x-k8s.io", "kind": kind, "name": config}}}
    if status:
        out["status"] = status
    return out


def mk_cluster(name, status=None, secret="w1-secret", v1beta1=False):
    ref = {"locationType": "Secret", "location": secret}
    spec = {"kubeConfig": ref} if v1beta1 else {"clusterSource": {"kubeConfig": ref}}
    return {"metadata": {"name": name}, "spec": spec, "status": status or {}}


def mk_objects(**extra):
    objects = {"/apis": {"groups": []},
               KUEUE + "/admissionchecks/mk": admission_check(status=active("True", "Active")),
               KUEUE + "/multikueueconfigs/mk-config": {"metadata": {"name": "mk-config"},
                                                        "spec": {"clusters": ["w1", "w2"]}},
               KUEUE + "/multikueueclusters/w1": mk_cluster("w1", active("True", "Active", "Connected"))}
    objects.update(extra)
    return objects


def mk_verifier(objects, masked=None):
    report = {}
    return verify.MultiKueueVerifier(verifier_on(FakeCluster(objects=objects)), "mk", report,
                                     masked if masked is not None else set()), report


def test_admission_check_check_names_what_is_wrong():
    config = {"spec": {"clusters": ["w1"]}}
    assert verify.admission_check_check("mk", admission_check(status=active("True", "Active")), "mk-config",
                                        config).as_dict() == {
        "name": "multikueue/admissioncheck/mk", "ok": True, "reason": "Active, MultiKueueConfig mk-config with 1 cluster(s)"}
    cases = [
        (None, "mk-config", config, "AdmissionCheck mk does not exist (multikueue_admission_check: name the "
                                    "AdmissionCheck of controllerName kueue.x-k8s.io/multikueue"),
        (admission_check(controller="kueue.x-k8s.io/provisioning-request"), "mk-config", config,
         "AdmissionCheck mk has controllerName 'kueue.x-k8s.io/provisioning-request', not kueue.x-k8s.io/multikueue"),
        (admission_check(kind="ProvisioningRequestConfig"), None, None, "spec.parameters"),
        (admission_check(), "mk-config", None, "AdmissionCheck mk names MultiKueueConfig mk-config, which does not exist"),
        (admission_check(), "mk-config", config, "AdmissionCheck mk has no Active condition yet"),
        (admission_check(status=active("False", "NoUsableClusters", "Inactive clusters: [w1]")), "mk-config", config,
         "AdmissionCheck mk is not Active: NoUsableClusters: Inactive clusters: [w1]"),
    ]
    for ac, config_name, cfg, words in cases:
        check = verify.admission_check_check("mk", ac, config_name, cfg)
        assert check.ok is False and words in check.reason, (words, check.reason)


def test_multikueue_cluster_check_gives_the_reason_of_its_active_condition_or_missing():
    ok, summary = verify.multikueue_cluster_check("w1", mk_cluster("w1", active("True", "Active", "Connected")), "c")
    assert ok.as_dict() == {"name": "multikueue/cluster/w1", "ok": True, "reason": "worker w1 connected (Connected)"}
    assert summary == {"name": "w1", "active": True, "reason": "Active", "message": "Connected"}
    down, summary = verify.multikueue_cluster_check("w1", mk_cluster("w1", active(
        "False", "ClientConnectionFailed", "dial tcp 127.0.0.1:6443: connect: connection refused")), "c")
    assert down.ok is False and down.reason == ("worker w1 is not Active: ClientConnectionFailed: dial tcp "
                                                "127.0.0.1:6443: connect: connection refused")
    assert summary["reason"] == "ClientConnectionFailed" and summary["active"] is False
    # v1beta1 objects carry the same condition
    bad, _ = verify.multikueue_cluster_check("w1", mk_cluster("w1", active("False", "BadKubeConfig", "no Secret"),
                                                              v1beta1=True), "c")
    assert bad.reason == "worker w1 is not Active: BadKubeConfig: no Secret"
    missing, summary = verify.multikueue_cluster_check("w2", None, "mk-config")
    assert missing.ok is False and missing.reason.startswith("MultiKueueCluster w2 is missing: MultiKueueConfig "
                                                             "mk-config lists it")
    assert summary["reason"] == "missing" and summary["active"] is False
    fresh, _ = verify.multikueue_cluster_check("w1", mk_cluster("w1"), "c")
    assert fresh.ok is False and "no Active condition yet" in fresh.reason


def test_multikueue_checks_read_the_check_its_config_and_every_cluster_into_the_report():
    mk, report = mk_verifier(mk_objects())
    checks = mk.checks()
    assert [(c.name, c.ok) for c in checks] == [("multikueue/admissioncheck/mk", True), ("multikueue/cluster/w1", True),
                                                ("multikueue/cluster/w2", False)]
    assert report["multikueue"] == {"admission_check": "mk", "config": "mk-config", "dispatched": {}, "clusters": [
        {"name": "w1", "active": True, "reason": "Active", "message": "Connected"},
        {"name": "w2", "active": False, "reason": "missing", "message": "MultiKueueCluster w2 does not exist"}]}
    # No AdmissionCheck: one failed check, no cluster read.
    mk, report = mk_verifier({"/apis": {"groups": []}})
    assert [(c.name, c.ok) for c in mk.checks()] == [("multikueue/admissioncheck/mk", False)]
    assert report["multikueue"]["clusters"] == [] and report["multikueue"]["config"] is None
    # A refused read is a failed check, not an error of the module.
    mk, _ = mk_verifier(mk_objects())
    mk.verifier.cluster.get = lambda *_a, **_k: (_ for _ in ()).throw(ApiException(status=403, reason="Forbidden"))
    [check] = mk.checks()
    assert check.ok is False and "cannot read the MultiKueue objects: Kubernetes API error 403" in check.reason


def workload(name="job-x-1", namespace="team", cluster_name=None, checks=None, conditions=None):
    status = {"admissionChecks": checks or [], "conditions": conditions or []}
    if cluster_name:
        status["clusterName"] = cluster_name
    return {"metadata": {"name": name, "namespace": namespace}, "status": status}


def test_dispatched_cluster_from_status_or_from_the_check_message_of_older_kueue():
    assert verify.dispatched_cluster(workload(cluster_name="w1"), "mk") == "w1"
    ready = [{"name": "mk", "state": "Ready", "message": 'The workload got reservation on "w2"'}]
    assert verify.dispatched_cluster(workload(checks=ready), "mk") == "w2"
    assert verify.dispatched_cluster(workload(checks=[dict(ready[0], message='The workload was admitted on "w3"')]),
                                     "mk") == "w3"
    assert verify.dispatched_cluster(workload(checks=[dict(ready[0], state="Pending")]), "mk") is None
    assert verify.dispatched_cluster(workload(checks=[dict(ready[0], name="other")]), "mk") is None


def test_uses_admission_check_in_both_api_versions():
    assert verify.uses_admission_check({"spec": {"admissionChecksStrategy": {"admissionChecks": [{"name": "mk"}]}}}, "mk")
    assert verify.uses_admission_check({"spec": {"admissionChecks": ["mk"]}}, "mk")
    assert not verify.uses_admission_check({"spec": {"admissionChecks": ["other"]}}, "mk")
    assert not verify.uses_admission_check(None, "mk")


def test_dispatch_passes_only_with_an_admitted_copy_on_the_worker_and_scrubs_what_the_secret_held():
    masked = {"s3cr3t-token"}
    mk, report = mk_verifier(mk_objects(), masked)
    copy_path = KUEUE + "/namespaces/team/workloads/job-x-1"
    admitted = {"conditions": [{"type": "QuotaReserved", "status": "True"}, {"type": "Admitted", "status": "True"}]}
    mk._workers["w1"] = (FakeCluster(objects={copy_path: {"status": admitted}}), "kueue.x-k8s.io/v1beta2")
    done, reason = mk.dispatch("team/lq", workload(cluster_name="w1"), "kueueops-smoke-x", 0)
    assert done and reason.startswith("Job kueueops-smoke-x dispatched to w1 and admitted there in "), reason
    assert report["multikueue"]["dispatched"] == {"team/lq": "w1"}
    mk._workers["w1"] = (FakeCluster(objects={copy_path: {"status": {"conditions": [
        {"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": "insufficient cpu"}]}}}),
        "kueue.x-k8s.io/v1beta2")
    done, reason = mk.dispatch("team/lq", workload(cluster_name="w1"), "j", 0)
    assert not done and reason == "Job j dispatched to w1, but its Workload there is not admitted: Pending insufficient cpu"
    mk._workers["w1"] = (FakeCluster(), "kueue.x-k8s.io/v1beta2")
    done, reason = mk.dispatch("team/lq", workload(cluster_name="w1"), "j", 0)
    assert not done and reason == "Job j dispatched to w1, but its Workload team/job-x-1 is not on that worker"
    mk._workers["w1"] = (FakeCluster(error=OSError("refused with Bearer s3cr3t-token")), "kueue.x-k8s.io/v1beta2")
    done, reason = mk.dispatch("team/lq", workload(cluster_name="w1"), "j", 0)
    assert not done and "s3cr3t-token" not in reason and "refused with Bearer VALUE_REDACTED_BY_KUEUEOPS" in reason
    pending = [{"name": "mk", "state": "Pending", "message": "waiting for a worker"}]
    done, reason = mk.dispatch("team/lq", workload(checks=pending), "j", 0)
    assert not done and reason.startswith("Job j admitted on the manager but its Workload names no worker")
    assert mk.not_dispatched(workload(checks=pending), "j") == (
        "Job j not dispatched yet: admission check mk is Pending: waiting for a worker")
    assert mk.not_dispatched(workload(), "j") is None


def test_worker_client_reads_the_secret_by_name_and_masks_it(monkeypatch):
    token = "tok-worker-secret"
    kubeconfig = ("apiVersion: v1\nkind: Config\ncurrent-context: w\nclusters: [{name: w, cluster: {server: "
                  "'https://127.0.0.1:6443'}}]\nusers: [{name: u, user: {token: %s}}]\ncontexts: [{name: w, context: "
                  "{cluster: w, user: u}}]\n" % token)
    encoded = base64.b64encode(kubeconfig.encode()).decode()
    secret_path = "/api/v1/namespaces/kueue-system/secrets/w1-secret"
    masked = set()
    mk, _ = mk_verifier(mk_objects(**{secret_path: {"metadata": {"name": "w1-secret"},
                                                    "data": {"kubeconfig": encoded}}}), masked)

    def offline_cluster(api_client, timeout=None):
        return FakeCluster(objects={"/apis": {"groups": []}}, api_client=api_client, timeout=timeout)
    monkeypatch.setattr(verify, "Cluster", offline_cluster)
    worker, group_version = mk._worker("w1")
    assert group_version == "kueue.x-k8s.io/v1beta2" and worker.timeout == verify.MultiKueueVerifier.WORKER_TIMEOUT
    assert worker.api_client.configuration.host == "https://127.0.0.1:6443"
    assert {token, kubeconfig, encoded} <= masked
    assert mk._worker("w1") is mk._workers["w1"]  # built once
    assert ("get", secret_path, {}) in mk.verifier.cluster.calls  # read by name, never listed
    mk, _ = mk_verifier(mk_objects())
    with pytest.raises(verify.KueueOpsError, match="Secret kueue-system/w1-secret of MultiKueueCluster w1 does not exist"):
        mk._worker("w1")
    mk, _ = mk_verifier(mk_objects(**{KUEUE + "/multikueueclusters/w1": {"metadata": {"name": "w1"}, "spec": {
        "clusterSource": {"kubeConfig": {"locationType": "Path", "location": "/etc/w1"}}}}}))
    with pytest.raises(verify.KueueOpsError, match="reads its kubeconfig from no Secret"):
        mk._worker("w1")


def _jwt(claims):
    import base64 as _b64
    import json as _json

    def enc(data):
        return _b64.urlsafe_b64encode(_json.dumps(data).encode()).decode().rstrip("=")
    return "%s.%s.sig" % (enc({"alg": "RS256"}), enc(claims))


def test_jwt_expiry_reads_exp_without_verifying_and_refuses_what_is_not_a_jwt():
    from ansible_collections.kueueops.aks.plugins.module_utils.verify.verify import jwt_expiry
    assert jwt_expiry(_jwt({"exp": 1800000000, "sub": "x"})) == 1800000000
    assert jwt_expiry(_jwt({"sub": "legacy"})) is None
    assert jwt_expiry(_jwt({"exp": True})) is None
    assert jwt_expiry("not-a-jwt") is None and jwt_expiry("a.!!!.c") is None and jwt_expiry(None) is None


def test_multikueue_token_expiry_warns_inside_the_horizon_and_masks_the_token():
    """Issue 40: status.yml's token report, on the Secrets a manager holds (a fake read; the real wiring is in
    tests/integration/test_multikueue.py)."""
    import base64 as _b64
    from ansible_collections.kueueops.aks.plugins.module_utils.verify.verify import multikueue_token_expiry
    now = 1_800_000_000
    soon, later = _jwt({"exp": now + 3 * 86400}), _jwt({"exp": now + 20 * 86400})

    def kubeconfig(token):
        text = "apiVersion: v1\nkind: Config\nusers:\n- name: u\n  user:\n    token: %s\n" % token
        return {"data": {"kubeconfig": _b64.b64encode(text.encode()).decode()}}

    cluster = FakeCluster({
        "/apis/kueue.x-k8s.io/v1beta2/multikueueclusters": [
            {"metadata": {"name": name},
             "spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": "mk-" + name}}}}
            for name in ("a", "b", "gone")]}, {
        "/api/v1/namespaces/kueue-system/secrets/mk-a": kubeconfig(soon),
        "/api/v1/namespaces/kueue-system/secrets/mk-b": kubeconfig(later),
    })

    masked = set()
    got = multikueue_token_expiry(cluster, "kueue-system", "kueue.x-k8s.io/v1beta2", masked, now, 7 * 86400)
    by = {t["cluster"]: t for t in got}
    assert by["a"]["warning"] and by["a"]["seconds_left"] == 3 * 86400 and by["a"]["reason"] == "expires in 3.0 days"
    assert not by["b"]["warning"] and by["b"]["expires"] == "2027-02-04T08:00:00Z"
    assert by["gone"]["warning"] and "does not exist" in by["gone"]["reason"]
    assert soon in masked and later in masked
    assert soon not in repr(got) and later not in repr(got)


def test_kubeconfig_tokens_reads_the_users_tokens_and_nothing_from_what_is_not_yaml():
    from ansible_collections.kueueops.aks.plugins.module_utils.verify.verify import kubeconfig_tokens
    text = "users:\n- name: a\n  user: {token: t1}\n- name: b\n  user: {client-certificate-data: x}\n"
    assert kubeconfig_tokens(text) == ["t1"]
    assert kubeconfig_tokens("this: [is not yaml") == [] and kubeconfig_tokens("- a list") == []


def test_a_worker_missing_a_kind_fails_a_check_that_ends_the_wait():
    """Issue 44: ClientConnectionFailed on a missing kind cannot heal; the check says so (final) and how to fix it."""
    from ansible_collections.kueueops.aks.plugins.module_utils.verify.verify import multikueue_cluster_check
    obj = {'status': {'conditions': [{'type': 'Active', 'status': 'False', 'reason': 'ClientConnectionFailed',
                                      'message': 'no matches for kind "JobSet" in version "jobset.x-k8s.io/v1alpha2"'}]}}
    check, summary = multikueue_cluster_check('w1', obj, 'cfg')
    assert not check.ok and check.final and summary['reason'] == 'ClientConnectionFailed'
    assert check.reason.startswith('worker w1 is not Active: ClientConnectionFailed: no matches for kind "JobSet"')
    assert 'kueue_integrations' in check.reason
    obj['status']['conditions'][0]['message'] = 'dial tcp 127.0.0.1:1: connect: connection refused'
    check, _summary = multikueue_cluster_check('w1', obj, 'cfg')
    assert not check.ok and not check.final and 'kueue_integrations' not in check.reason
