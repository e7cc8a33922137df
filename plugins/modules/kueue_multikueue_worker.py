#!/usr/bin/python
# Copyright: (c) 2026, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kueue_multikueue_worker
short_description: Prepare a MultiKueue worker cluster - a restricted ServiceAccount, its token and the manager's kubeconfig
version_added: 1.0.0
description:
  - Runs against one worker cluster of MultiKueue (the connection options) and gives the manager cluster what it
    needs to reach it - a kubeconfig that Kueue accepts. Kueue refuses kubeconfigs with exec plugins (the kubelogin of
    C(az aks get-credentials) on Entra ID clusters), C(tokenFile), insecure TLS, certificate-authority file paths,
    basic auth and auth providers; this kubeconfig holds the server, the CA data and a ServiceAccount token.
  - B(RBAC.) V(present) applies (server-side apply, field manager C(kueueops)) in O(namespace) the ServiceAccount
    O(service_account), and the ClusterRole and ClusterRoleBinding of that name, whose rules are exactly those Kueue
    documents for MultiKueue workers at v0.19.2 (C(site/static/examples/multikueue/create-multikueue-kubeconfig.sh)
    - batch Jobs, Pods, StatefulSets, LeaderWorkerSets, JobSets, Kueue Workloads, ClusterQueues and LocalQueues
    (read), Kubeflow, Ray and AppWrapper jobs), plus the same access to TrainJobs and JAXJobs, which the manager
    watches on every worker when their integrations are enabled (TrainJob is a chart default) but the script omits
    (without it the worker would never become Active, forbidden). Every object is labelled
    C(app.kubernetes.io/managed-by=kueueops) and C(kueueops.aks/multikueue-worker=<service_account>).
  - B(The token) lives in a holder Secret C(<service_account>-token-<5 characters>) labelled
    C(kueueops.aks/multikueue-token=<service_account>). With O(token_type=request) a TokenRequest of O(token_ttl)
    seconds bound to that Secret (deleting the Secret revokes the token; its expiry, which the API server may cap,
    is the annotation C(kueueops.aks/token-expires)); with O(token_type=secret) a legacy
    C(kubernetes.io/service-account-token) Secret that kube-controller-manager fills, without expiry.
  - B(Reuse.) The newest holder's token is reused (the run reports no change) when it is of O(token_type), O(rotate)
    is false, (request) more than a third of its lifetime remains (O(token_ttl), or what the API server granted if
    it capped it) and a TokenReview still authenticates it as the ServiceAccount. Otherwise a new token is issued;
    RV(token.reason) says why.
  - B(Rotation without a pause.) Issue a new token with O(revoke_previous=false) (the old one stays valid), put the
    new kubeconfig in the manager's Secret, then run again with O(revoke_previous=true) to delete every other holder
    Secret, which revokes their tokens.
  - B(Secrets.) The token is returned only inside RV(kubeconfig); register the task with C(no_log) true. No other
    result key, message or warning holds it. In check mode RV(kubeconfig) holds C(VALUE_REDACTED_BY_KUEUEOPS) in
    place of the token, even when a token exists.
  - V(absent) deletes the holder Secrets (revoking every token), the ClusterRoleBinding, the ClusterRole and the
    ServiceAccount - each only if it carries the C(kueueops.aks/multikueue-worker=<service_account>) label (one
    without it is left, with a warning) - and waits until they are gone.
  - V(preflight) (issue 44) changes nothing and needs no Kueue on the worker - it reads, by API discovery, whether
    the worker serves every kind that the manager's MultiKueue watches on each worker for O(manager.integrations)
    (Kueue's MultiKueue adapters, the table C(WATCHED_KINDS) of C(plugins/module_utils/kueue/multikueue.py)) and, when
    Kueue runs there, the versions its Workload API is served at against O(manager.api_version). It never fails on
    what it finds - RV(problems) lists every missing kind at once with the fixes, RV(skew_warnings) a different
    Kueue minor; the role entry point C(multikueue) refuses the run with them before anything is written.
  - The identity that runs the module needs, on the worker - get namespaces, the kube-root-ca.crt ConfigMap (when
    neither O(ca_data) nor the connection gives the CA), get, patch (apply) and delete ServiceAccounts, ClusterRoles
    and ClusterRoleBindings (and the RBAC C(escalate)/C(bind) verbs or the permissions of the rules), list, get,
    create, patch and delete Secrets, create C(serviceaccounts/token) and C(tokenreviews).
author:
  - kueueops contributors (@kueueops)
options:
  state:
    description:
      - V(present) prepares the worker and returns the kubeconfig; V(absent) removes what V(present) made;
        V(preflight) reads what MultiKueue needs of the worker (O(manager)) and changes nothing.
    type: str
    choices: [present, absent, preflight]
    default: present
  namespace:
    description:
      - The namespace of the ServiceAccount and of the holder Secrets, which must exist (Kueue's namespace, by
        default; install Kueue on the worker first).
    type: str
    default: kueue-system
  service_account:
    description:
      - The name of the ServiceAccount, of the ClusterRole and of the ClusterRoleBinding (a DNS-1123 label; also
        the value of the C(kueueops.aks/multikueue-worker) label).
    type: str
    default: kueueops-multikueue
  token_type:
    description:
      - V(request) - a TokenRequest bound to its holder Secret, expiring after O(token_ttl) seconds (or earlier,
        when the API server caps it).
      - V(secret) - a legacy C(kubernetes.io/service-account-token) Secret, without expiry (the API server may warn
        about legacy tokens).
    type: str
    choices: [request, secret]
    default: request
  token_ttl:
    description:
      - The lifetime asked for a V(request) token, in seconds (at least 600, the API server's minimum). A token is
        replaced once no more than a third of its lifetime remains, so run the module (the role's MultiKueue entry
        point) more often than every two thirds of it.
    type: int
    default: 2592000
  rotate:
    description: Issue a new token even when the newest one could be reused.
    type: bool
    default: false
  revoke_previous:
    description:
      - Delete every holder Secret of O(service_account) but the one whose token is returned (RV(revoked)); their
        tokens stop working. Nothing changes when there is none.
    type: bool
    default: false
  server:
    description:
      - The URL of this worker's API server as the manager cluster reaches it (C(https://), a host that is an IP
        address or a DNS name). Default - the server of the connection this module uses.
    type: str
  ca_data:
    description:
      - The worker cluster's CA certificate for the kubeconfig, as PEM text or base64-encoded PEM (a kubeconfig's
        C(certificate-authority-data)). Default - the CA of the connection (its C(certificate-authority-data) or
        O(ca_cert)), else the C(ca.crt) of the C(kube-root-ca.crt) ConfigMap of O(namespace). Public data, not a
        secret.
    type: str
  cluster_name:
    description:
      - The name of the cluster, user (C(<cluster_name>-<service_account>)) and context of the kubeconfig, and of
        the worker in messages (the MultiKueueCluster's name, typically).
    type: str
    default: kueueops-worker
  manager:
    description:
      - With V(preflight) - what the manager's Kueue runs, to check this worker against.
    type: dict
    suboptions:
      integrations:
        description:
          - The manager's effective integration frameworks (its Configuration's C(integrations.frameworks)); null
            skips the kind check (the manager's integrations are not known yet).
        type: list
        elements: str
      kueue_version:
        description: The manager's Kueue version (such as C(0.19.2)), for RV(skew_warnings).
        type: str
      api_version:
        description:
          - The Kueue API version at which the manager's Kueue creates and watches Workloads on workers (such as
            C(kueue.x-k8s.io/v1beta2)); the worker's Workload API must serve it.
        type: str
      source:
        description: Where the integrations come from, for the message (such as C(the manager's live Configuration)).
        type: str
  timeout:
    description:
      - Seconds to wait for kube-controller-manager to fill a V(secret) token, and for deleted objects to be gone.
    type: int
    default: 60
attributes:
  check_mode:
    support: full
    details:
      - Applies nothing, issues no token and deletes nothing; reports what would change (RV(would_issue),
        RV(token.reason), RV(revoked), RV(deleted)), with the token in RV(kubeconfig) replaced by
        C(VALUE_REDACTED_BY_KUEUEOPS).
  diff_mode:
    support: none
    details: No diff is returned (it would hold a token).
extends_documentation_fragment:
  - kueueops.aks.attributes
  - kueueops.aks.kube_auth
"""

EXAMPLES = r"""
- name: Prepare the worker (its API server as the manager reaches it)
  kueueops.aks.kueue_multikueue_worker:
    kubeconfig: ~/.kube/aks-worker-1.yaml
    cluster_name: aks-worker-1
    server: https://aks-worker-1-dns-0123abcd.hcp.westeurope.azmk8s.io:443
  register: worker
  no_log: true  # the result holds the token (in kubeconfig)

- name: Store the kubeconfig in a Secret on the manager
  kubernetes.core.k8s:
    kubeconfig: ~/.kube/aks-manager.yaml
    definition:
      apiVersion: v1
      kind: Secret
      metadata: {name: aks-worker-1, namespace: kueue-system}
      stringData: {kubeconfig: "{{ worker.kubeconfig }}"}
  no_log: true

- name: Once the manager uses the new token, revoke the older ones
  kueueops.aks.kueue_multikueue_worker:
    kubeconfig: ~/.kube/aks-worker-1.yaml
    cluster_name: aks-worker-1
    server: https://aks-worker-1-dns-0123abcd.hcp.westeurope.azmk8s.io:443
    revoke_previous: true
  no_log: true

- name: What a run would do (no token shown, safe without no_log)
  kueueops.aks.kueue_multikueue_worker:
    kubeconfig: ~/.kube/aks-worker-1.yaml
    cluster_name: aks-worker-1
  check_mode: true

- name: Does the worker serve every kind the manager's MultiKueue watches? (changes nothing)
  kueueops.aks.kueue_multikueue_worker:
    kubeconfig: ~/.kube/aks-worker-1.yaml
    cluster_name: aks-worker-1
    state: preflight
    manager:
      integrations: [batch/job, jobset.x-k8s.io/jobset]
      api_version: kueue.x-k8s.io/v1beta2
  register: preflight
  failed_when: preflight.problems | length > 0

- name: Remove the worker's ServiceAccount, RBAC and tokens
  kueueops.aks.kueue_multikueue_worker:
    kubeconfig: ~/.kube/aks-worker-1.yaml
    state: absent
"""

RETURN = r"""
kubeconfig:
  description:
    - The kubeconfig for the manager's Secret (YAML) - one cluster O(cluster_name) (server and
      C(certificate-authority-data)), one user with the token, one context, its current-context. It holds the
      token; in check mode C(VALUE_REDACTED_BY_KUEUEOPS) instead.
  returned: state=present
  type: str
server:
  description: The server in the kubeconfig.
  returned: state=present
  type: str
  sample: https://aks-worker-1-dns-0123abcd.hcp.westeurope.azmk8s.io:443
ca_source:
  description: Where the CA data came from - V(ca_data), V(connection) or V(kube-root-ca.crt).
  returned: state=present
  type: str
service_account:
  description: The ServiceAccount (namespace O(namespace)).
  returned: always
  type: str
rbac_changed:
  description: The kinds among ServiceAccount, ClusterRole and ClusterRoleBinding that were (would be) applied.
  returned: state=present
  type: list
  elements: str
token:
  description: The token of the kubeconfig (never the token itself).
  returned: state=present
  type: dict
  contains:
    name:
      description: Its holder Secret; null in check mode when a new token would be issued.
      type: str
    type:
      description: O(token_type).
      type: str
    expires:
      description: When it expires (RFC 3339, UTC); null for a V(secret) token.
      type: str
    issued:
      description: Whether this run issued it (always false in check mode).
      type: bool
    reason:
      description:
        - Why a new token was (would be) issued - V(none yet), V(rotate), V(expires soon), V(invalid) (rejected by
          a TokenReview, or its holder is incomplete) or V(type changed); null when the newest token is reused.
      type: str
  sample: {name: kueueops-multikueue-token-x7k2p, type: request, expires: '2026-02-01T10:00:00Z', issued: true,
           reason: none yet}
would_issue:
  description: Whether a new token is (in check mode, would be) issued.
  returned: state=present
  type: bool
revoked:
  description: The holder Secrets deleted (in check mode, to delete) by O(revoke_previous).
  returned: state=present
  type: list
  elements: str
problems:
  description:
    - V(preflight) - one sentence per need of MultiKueue the worker does not meet, each naming every missing kind (or
      the Workload API version) and the fixes; empty when MultiKueue can use the worker.
  returned: state=preflight
  type: list
  elements: str
missing_kinds:
  description: V(preflight) - each kind the manager watches that the worker does not serve.
  returned: state=preflight
  type: list
  elements: dict
  sample: [{integration: ray.io/rayjob, api_version: ray.io/v1, kind: RayJob}]
kueue_version:
  description: V(preflight) - the worker's Kueue version (its manager image's tag), null when unknown.
  returned: state=preflight
  type: str
workload_versions:
  description: V(preflight) - the versions the worker's Kueue Workload API is served at; null without Kueue.
  returned: state=preflight
  type: list
  elements: str
skew_warnings:
  description: V(preflight) - the worker runs another Kueue minor than the manager.
  returned: state=preflight
  type: list
  elements: str
deleted:
  description: What V(absent) deleted (would delete), as C(Kind/name).
  returned: state=absent
  type: list
  elements: str
  sample: [Secret/kueueops-multikueue-token-x7k2p, ClusterRoleBinding/kueueops-multikueue,
           ClusterRole/kueueops-multikueue, ServiceAccount/kueueops-multikueue]
"""

from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import namespace_name_error
from ansible_collections.kueueops.aks.plugins.module_utils.kube.module import KueueOpsModule
from ansible_collections.kueueops.aks.plugins.module_utils.kueue.multikueue import manager_error
from ansible_collections.kueueops.aks.plugins.module_utils.multikueue.multikueue_worker import (
    MultiKueueWorker, cluster_name_error, normalise_ca, server_error, token_ttl_error)


def main():
    module = KueueOpsModule(dict(
        state=dict(type='str', default='present', choices=['present', 'absent', 'preflight']),
        namespace=dict(type='str', default='kueue-system'),
        service_account=dict(type='str', default='kueueops-multikueue'),
        token_type=dict(type='str', default='request', choices=['request', 'secret'], no_log=False),
        token_ttl=dict(type='int', default=2592000, no_log=False),
        rotate=dict(type='bool', default=False),
        revoke_previous=dict(type='bool', default=False),
        server=dict(type='str'),
        ca_data=dict(type='str'),
        cluster_name=dict(type='str', default='kueueops-worker'),
        timeout=dict(type='int', default=60),
        manager=dict(type='dict', options=dict(
            integrations=dict(type='list', elements='str'),
            kueue_version=dict(type='str'),
            api_version=dict(type='str'),
            source=dict(type='str'),
        )),
    ), supports_check_mode=True)
    p = module.params
    module.check_namespace('namespace')
    module.check_seconds('timeout')
    module.refuse_first([namespace_name_error(p['service_account'], 'service_account', 'ServiceAccount'),
                         cluster_name_error(p['cluster_name']), token_ttl_error(p['token_ttl']),
                         server_error(p['server']) if p['server'] is not None else None,
                         manager_error(p['state'], p['manager'])])
    if p['ca_data'] is not None:
        module.run(lambda: normalise_ca(p['ca_data']))
    worker = MultiKueueWorker(module.api_client, p, check_mode=module.check_mode)
    result = module.run(worker.run, warnings=worker.warnings)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
