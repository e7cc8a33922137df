#!/usr/bin/python
# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kueue_verify
short_description: Verify that Kueue is installed and working, and report its queues
version_added: 1.0.0
description:
  - Checks a Kueue installation the way the AKS documentation's "Confirm deployment status" steps do,
    but reliably and in more depth, and returns a structured report.
  - The Kueue Deployments are ready (C(kueue-controller-manager); for the AKS managed extension also
    C(kueue-extension)).
  - The expected Kueue CRDs exist and are C(Established).
  - The webhook configurations pointing at the Kueue namespace carry a CA bundle, and the webhook answers;
    a server-side dry-run create of a ClusterQueue goes through Kueue's mutating and validating webhooks
    without storing anything.
  - Every APIService served from the Kueue namespace (the chart's visibility API,
    C(v1beta1.visibility.kueue.x-k8s.io) and C(v1beta2.visibility.kueue.x-k8s.io), found by their backend Service,
    not by name) is C(Available). A failed check C(apiservice/<name>) gives the condition's reason (for example
    C(FailedDiscoveryCheck)) and message. An unavailable APIService breaks API discovery for every client and keeps
    a namespace being deleted C(Terminating).
  - For a Helm install, the release's latest revision is C(deployed) (read from Helm's own release records,
    so no helm binary is needed).
  - Optionally, the feature gates and integrations in effect (read back from the Deployment's arguments and
    the manager's ConfigMap) equal what was asked.
  - With O(multikueue_admission_check), the MultiKueue wiring of a manager cluster; the AdmissionCheck, its
    MultiKueueConfig and every MultiKueueCluster (worker) it lists are C(Active), and the smoke test proves that a
    Job is dispatched to a worker and admitted there.
  - Waits with watches, not fixed sleeps, until every check passes or O(timeout) expires - or until a check fails
    for a cause that waiting cannot heal (a MultiKueueCluster whose worker lacks a kind the manager watches, C(no
    matches for kind); a kubeconfig MultiKueue refuses), which ends the wait at once. The failure names the deepest
    cause first (such a check, then the MultiKueueClusters, then the AdmissionCheck).
  - Never changes anything; always reports C(changed=false).
author:
  - kueueops contributors (@kueueops)
options:
  namespace:
    description: Namespace Kueue runs in.
    type: str
    default: kueue-system
  install_method:
    description:
      - How Kueue was installed. C(extension) also expects the C(kueue-extension) Deployment of the AKS managed
        extension and skips the Helm release check. C(auto) detects it from the C(kueue-extension) Deployment.
    type: str
    choices: [auto, helm, extension]
    default: auto
  release_name:
    description: Helm release name (Helm installs only).
    type: str
    default: kueue
  expected_crds:
    description:
      - Plural names of the C(kueue.x-k8s.io) CRDs that must be present and established.
      - The default is the set that Kueue 0.13 through 0.19 install.
    type: list
    elements: str
    default: [admissionchecks, clusterqueues, cohorts, localqueues, multikueueclusters, multikueueconfigs,
              provisioningrequestconfigs, resourceflavors, topologies, workloadpriorityclasses, workloads]
  webhook_probe:
    description: Prove the webhook round trip with a server-side dry-run create of a ClusterQueue.
    type: bool
    default: true
  feature_gates:
    description:
      - Expected feature gates, as a mapping of gate name to enabled. Each must be set to that value on the
        manager's command line. Gates not listed are not checked.
    type: dict
  integrations:
    description:
      - Expected integration frameworks (for example C(batch/job)); each must be in the manager configuration's
        C(integrations.frameworks).
    type: list
    elements: str
  smoke_test:
    description:
      - LocalQueues to prove admission on, as C(NAMESPACE/NAME). For each, a tiny suspended Job labelled
        C(kueue.x-k8s.io/queue-name) is submitted; the check passes when Kueue admits it (its Workload is
        C(Admitted) and the Job is unsuspended). The Jobs are deleted afterwards, admitted or not, and the module
        waits for them to be gone as long as for the admission (O(timeout), 60 seconds when O(wait=false)); a Job
        still present then fails the check C(smoke-test/cleanup).
      - Runs after the other checks pass. Not run in check mode (it creates Jobs).
    type: list
    elements: str
    default: []
  multikueue_admission_check:
    description:
      - The name of a MultiKueue AdmissionCheck to verify on this (manager) cluster. The check
        C(multikueue/admissioncheck/<name>) passes when the AdmissionCheck exists, its C(controllerName) is
        C(kueue.x-k8s.io/multikueue), its C(parameters) name a MultiKueueConfig that exists, and it is C(Active)
        (else it gives the condition's reason and message).
      - For each cluster the MultiKueueConfig lists, the check C(multikueue/cluster/<name>) passes when the
        MultiKueueCluster exists and is C(Active); else it names the cluster with the reason of its C(Active)
        condition (for example C(ClientConnectionFailed) with the dial error when the worker's API server is down,
        C(BadKubeConfig), C(InsecureKubeConfig)), or C(missing).
      - With O(smoke_test), a queue whose ClusterQueue carries this AdmissionCheck passes only when the manager's
        Workload is C(Admitted) and names the worker it was dispatched to, and the copy of the Workload on that worker
        (read with the kubeconfig of the worker's MultiKueueCluster Secret, C(kubeconfig) key, read by name in
        O(namespace)) has C(QuotaReserved) or C(Admitted). That kubeconfig and its token never appear in the
        result, messages or warnings.
    type: str
  smoke_test_requests:
    description: Resource requests of the smoke-test Job's container; the queue's ClusterQueue must cover them.
    type: dict
    default: {cpu: 10m, memory: 16Mi}
  queues:
    description: Include a short status of every ClusterQueue and LocalQueue in the report.
    type: bool
    default: true
  wait:
    description: Wait until every check passes (up to O(timeout)) before reporting.
    type: bool
    default: true
  timeout:
    description:
      - Seconds to wait when O(wait=true).
      - C(wait_timeout) is an alias, the name kubernetes.core modules use.
    type: int
    default: 300
    aliases: [ wait_timeout ]
  fail_on_error:
    description:
      - Fail the task when a check fails. With V(false), the report is returned with C(ok=false) instead, for
        status dashboards.
    type: bool
    default: true
  multikueue_token_horizon:
    description:
      - On a MultiKueue manager, read when the worker token of each MultiKueueCluster expires (the C(exp) claim of
        the token in the kubeconfig of its Secret, read by name in O(namespace); no part of a token or kubeconfig is
        returned or logged) into RV(multikueue_tokens), and warn about each that expires within this many seconds,
        or has no Secret. Unset, tokens are not read. C(playbooks/status.yml) sets it from
        C(kueue_multikueue_token_warn_horizon) (7 days by default).
    type: int
attributes:
  check_mode:
    support: partial
    details: Runs every check; the smoke test, which creates Jobs, is skipped.
  diff_mode:
    support: N/A
    details: This action does not modify state other than by the smoke test.
extends_documentation_fragment:
  - kueueops.aks.attributes
  - kueueops.aks.kube_auth
notes:
  - Read-only; supports check mode.
"""

EXAMPLES = r"""
- name: Verify Kueue installed with Helm and the gates we asked for
  kueueops.aks.kueue_verify:
    kubeconfig: "{{ kubeconfig_path }}"
    install_method: helm
    feature_gates:
      TopologyAwareScheduling: true
      LocalQueueMetrics: true
    integrations: [batch/job, ray.io/rayjob]
    timeout: 300

- name: Verify a MultiKueue manager and prove a Job reaches a worker
  kueueops.aks.kueue_verify:
    kubeconfig: "{{ manager_kubeconfig }}"
    multikueue_admission_check: multikueue
    smoke_test: [team-a/user-queue]
    timeout: 120
  register: manager_status

- name: Status report that never fails the play
  kueueops.aks.kueue_verify:
    wait: false
    fail_on_error: false
  register: kueue_status
"""

RETURN = r"""
ok:
  description: Whether every check passed.
  returned: always
  type: bool
checks:
  description: Every check with its result and the reason.
  returned: always
  type: list
  elements: dict
  sample:
    - {name: deployment/kueue-controller-manager, ok: true, reason: "1/1 ready, 1 available"}
    - {name: webhook-roundtrip, ok: false, reason: "dry-run create of a ClusterQueue failed: ..."}
    - {name: apiservice/v1beta2.visibility.kueue.x-k8s.io, ok: false,
       reason: "Available=False (FailedDiscoveryCheck): failing or missing response from https://...: ...
                (Service kueue-system/kueue-visibility-server)"}
failed_checks:
  description: Names of the checks that failed.
  returned: always
  type: list
  elements: str
failure_message:
  description:
    - The message of the failure (with O(fail_on_error=false) too), the deepest cause first; empty when every check
      passed.
  returned: always
  type: str
install_method:
  description: The install method checked (after C(auto) detection).
  returned: always
  type: str
version:
  description: Kueue version, from the manager image tag.
  returned: when the controller Deployment exists
  type: str
  sample: v0.19.2
feature_gates:
  description: Feature gates set on the manager's command line (gate name to enabled).
  returned: when the controller Deployment exists
  type: dict
integrations:
  description: Integration frameworks enabled in the manager configuration.
  returned: when the controller Deployment exists
  type: list
  elements: str
multikueue_tokens:
  description:
    - With O(multikueue_token_horizon), one entry per MultiKueueCluster of the cluster - its name (C(cluster)), its
      kubeconfig Secret (C(secret)), when its worker token expires (C(expires), RFC 3339 UTC, null when the token
      carries no expiry or there is none), C(seconds_left), C(warning) (it expires within the horizon, or its Secret
      is missing) and C(reason) in words.
  returned: when O(multikueue_token_horizon) is set
  type: list
  elements: dict
  sample: [{cluster: gpu-eastus, secret: kueueops-multikueue-gpu-eastus, expires: "2026-12-31T00:00:00Z",
            seconds_left: 2160000, warning: false, reason: expires in 25.0 days}]
multikueue:
  description:
    - The MultiKueue wiring checked with O(multikueue_admission_check) - the AdmissionCheck, the MultiKueueConfig its
      parameters name, each worker cluster's state (its C(Active) condition), and, after the smoke test, the worker
      each smoke-tested queue's Job was dispatched to (C(NAMESPACE/LOCALQUEUE) to cluster name).
  returned: when O(multikueue_admission_check) is set
  type: dict
  contains:
    admission_check:
      description: The AdmissionCheck checked.
      type: str
    config:
      description: The MultiKueueConfig its parameters name (null when they name none).
      type: str
    clusters:
      description: Each MultiKueueCluster the config lists, with C(active) and the reason and message of its
        C(Active) condition (reason C(missing) when it does not exist).
      type: list
      elements: dict
    dispatched:
      description: The worker each smoke-tested MultiKueue queue's Job was dispatched to.
      type: dict
  sample:
    admission_check: multikueue
    config: multikueue
    clusters: [{name: worker-1, active: true, reason: Active, message: Connected}]
    dispatched: {team-a/user-queue: worker-1}
queues:
  description:
    - ClusterQueues (cohort, flavors with nominal and used quota, active state, pending/admitted workload counts) and
      LocalQueues (their ClusterQueue, active state, pending/admitted). The C(reason) of a ClusterQueue inactive
      because of an AdmissionCheck starts with the causes of the chain AdmissionCheck -> MultiKueueConfig ->
      MultiKueueCluster (or Kueue's ProvisioningRequest controller), deepest first; C(cannot_heal) then says whether
      waiting could make it Active. The filter
      P(kueueops.aks.kueue_status_report#filter) renders them as tables.
  returned: when O(queues=true)
  type: dict
  sample:
    cluster_queues: [{name: team-a, active: true, pending: 0, admitted: 2, cohort: research,
                      flavors: [{name: on-demand, resources: [{name: cpu, nominal: "32", used: "4"}]}]}]
    local_queues: [{name: user-queue, namespace: team-a, cluster_queue: team-a, active: true, pending: 0, admitted: 2}]
"""

from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import object_name_error
from ansible_collections.kueueops.aks.plugins.module_utils.kube.module import KueueOpsModule
from ansible_collections.kueueops.aks.plugins.module_utils.kueue.queues import parse_quantity
from ansible_collections.kueueops.aks.plugins.module_utils.verify.verify import DEFAULT_CRDS, parse_queue_ref, verify_install


def main():
    module = KueueOpsModule(dict(
        namespace=dict(type="str", default="kueue-system"),
        install_method=dict(type="str", default="auto", choices=["auto", "helm", "extension"]),
        release_name=dict(type="str", default="kueue"),
        expected_crds=dict(type="list", elements="str", default=list(DEFAULT_CRDS)),
        webhook_probe=dict(type="bool", default=True),
        feature_gates=dict(type="dict"),
        integrations=dict(type="list", elements="str"),
        smoke_test=dict(type="list", elements="str", default=[]),
        multikueue_admission_check=dict(type="str"),
        smoke_test_requests=dict(type="dict", default={"cpu": "10m", "memory": "16Mi"}),
        queues=dict(type="bool", default=True),
        wait=dict(type="bool", default=True),
        timeout=dict(type="int", default=300, aliases=["wait_timeout"]),
        fail_on_error=dict(type="bool", default=True),
        multikueue_token_horizon=dict(type="int", no_log=False),  # seconds, not a secret
    ), supports_check_mode=True)
    params = module.params
    module.check_seconds("timeout", minimum=0)
    if params["multikueue_token_horizon"] is not None:
        module.check_seconds("multikueue_token_horizon", minimum=0)
    for name, value in (params.get("feature_gates") or {}).items():
        if not isinstance(value, bool) and str(value).lower() not in ("true", "false"):
            module.refuse("gate %s has value %r" % (name, value), "feature_gates", "map each gate name to true or false")
    if params.get("feature_gates"):
        params["feature_gates"] = {k: v if isinstance(v, bool) else str(v).lower() == "true"
                                   for k, v in params["feature_gates"].items()}
    for ref in params["smoke_test"]:
        try:
            parse_queue_ref(ref)
        except ValueError as exc:
            module.refuse(str(exc), "smoke_test", "write each queue as NAMESPACE/LOCALQUEUE")
    if params["multikueue_admission_check"] is not None:
        module.refuse_first([object_name_error(params["multikueue_admission_check"], "multikueue_admission_check",
                                               "AdmissionCheck")])
    for resource, quantity in (params["smoke_test_requests"] or {}).items():
        try:
            ok = parse_quantity(quantity) > 0
            reason = "must be more than zero, got %r" % (quantity,)
        except ValueError as exc:
            ok, reason = False, str(exc)
        if not ok:
            module.refuse(reason, "smoke_test_requests.%s" % resource,
                          "give a positive quantity such as 10m (cpu) or 16Mi (memory)")

    report = {}
    checks, method = module.run(lambda: verify_install(module.api_client, params, report, module.check_mode,
                                                       module.no_log_values))
    for token in report.get("multikueue_tokens") or []:
        if token["warning"]:
            module.warn("MultiKueueCluster %s: the worker token in Secret %s %s%s (within multikueue_token_horizon, "
                        "%ss): MultiKueue stops dispatching to that worker when it expires. Re-issue it: run "
                        "playbooks/multikueue.yml (it re-issues a token with less than a third of its lifetime left; "
                        "-e kueue_multikueue_rotate_tokens=true replaces every token now)"
                        % (token["cluster"], token["secret"], token["reason"],
                           " (%s)" % token["expires"] if token["expires"] else "", params["multikueue_token_horizon"]))
    failed = [c.name for c in checks if not c.ok]
    result = dict(changed=False, ok=not failed, checks=[c.as_dict() for c in checks], failed_checks=failed,
                  install_method=method, **report)
    result["failure_message"] = failure_message(checks, params) if failed else ""
    if failed and params["fail_on_error"]:
        module.fail_json(msg=result["failure_message"], **result)
    module.exit_json(**result)


def failure_message(checks, params):
    # the deepest cause first: a check that cannot heal, then the MultiKueueClusters, then the rest
    failed = sorted((c for c in checks if not c.ok),
                    key=lambda c: (not c.final, not c.name.startswith("multikueue/cluster/")))
    reasons = "; ".join("%s: %s" % (c.name, c.reason) for c in failed)
    hint = (" Look at: kubectl -n %s get deploy,pods; kubectl -n %s logs deploy/kueue-controller-manager; "
            "kubectl get crd | grep kueue" % (params["namespace"], params["namespace"]))
    unavailable = [c.name.split("/", 1)[1] for c in failed if c.name.startswith("apiservice/")]
    if unavailable:
        hint += "; kubectl get apiservice %s -o yaml (the visibility server runs in the manager)" % " ".join(
            unavailable)
    if any(c.name.startswith("multikueue/") for c in failed):
        hint += ("; kubectl get admissioncheck,multikueueconfig,multikueuecluster -o yaml (the manager's MultiKueue "
                 "objects and their Active conditions)")
    waited = " after waiting %ss (timeout)" % params["timeout"] if params["wait"] else ""
    if params["wait"] and any(c.final for c in failed):
        waited = (" at once, without waiting out the %ss timeout: waiting cannot heal %s" % (
            params["timeout"], ", ".join(c.name for c in failed if c.final)))
    return "Kueue verification failed%s (%d of %d checks): %s.%s" % (waited, len(failed), len(checks), reasons, hint)


if __name__ == "__main__":
    main()
