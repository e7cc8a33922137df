"""Bad-input corpus, module half (issue 8, item 1): every case is one task calling a kueueops.aks module by
its FQCN with one wrong input, on the real local control plane where Kueue is installed (Helm) and a small
queue configuration (a ResourceFlavor, a ClusterQueue, a LocalQueue in a namespace) is applied, and, for
kueue_extension, against the ARM emulator.

Each case must fail safely (tests/reliability/badinput.py): the run fails, no traceback, the message names
the field or object and the fix, and `rbac.snapshot` (resourceVersions of every Kueue object, namespaces,
the Helm release records hence the release revision, the CRDs, the Jobs, the chart's objects) is the same
before and after. kueue_extension cases also send no write (PUT/PATCH/DELETE) to ARM.

Cases of wrong types, unknown choices, unknown options and missing/exclusive options are refused by Ansible's
own argument validation before the module runs; they are here so that a change of argument spec that lets such
input through is noticed, and their messages (Ansible's) name the option and what it accepts.

A pinned `version` together with a `release_train` is valid ARM input (the pin wins), so it is no conflict case;
the conflicting option pair kueue_extension checks is auto_upgrade_mode=none without a version.

The cases run in batches (issue 19): one ansible-playbook run per group of cases that share an environment
(`_group`: the cluster cases; the kueue_extension cases, with the ARM emulator and NO_KUBE_OPTIONS; the
fake_extension case, with the kueue-extension Deployment in AKS_NS), one task per case with `ignore_errors: true`,
each case still its own test. The corpus_snapshot callback (tests/integration/callback_plugins) takes
`rbac.snapshot` at the play's start and after each task result, in the ansible-playbook process (the linear
strategy sends a task's result callbacks before it starts the next task), with the length of the ARM emulator's
request log (logged before the emulator answers), so each case is judged on exactly what changed while its own
task ran; its {tmp} is a folder of its own. test_a_writing_case_in_a_batch_fails_alone proves that a writing
task in a batch fails alone. No module case needs a run of its own: none changes the environment of the run
(kubeconfig, PATH, binaries) and none needs cleanup after it (a write to ARM, which fails its case, is cleaned
up after the kueue_extension batch).

The role entry points, playbooks and environment cases (kubeconfig, API server, helm binary) are in
test_bad_input_roles.py.
"""
from __future__ import annotations

import copy
import json
import os
import sys

import pytest

from tests.emulators.arm.control import Control
from tests.integration.ansible import run_playbook
from tests.integration.kubeutil import delete_namespaces, wait_for

from . import rbac
from .badinput import Case, assert_task_fails_safely, fake_extension_deployment

GROUP, VERSION = "kueue.x-k8s.io", "v1beta2"
API = GROUP + "/" + VERSION
TEAM_NS = "corpus-team"        # the LocalQueue's namespace
AKS_NS = "corpus-aks"          # where a kueue-extension Deployment makes kueue_queues see a managed cluster
FLAVOR, CQ, LQ = "corpus-flavor", "corpus-cq", "corpus-lq"
# The preflight of kueue_extension reads Deployments with the credentials it fetches from ARM.
NO_KUBE_OPTIONS = {"K8S_AUTH_KUBECONFIG": ""}


# ----------------------------------------------------------------------------------------- objects
def rf(name=FLAVOR, **spec):
    return {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": spec}


def cq(name=CQ, flavor=FLAVOR, cpu="4", memory="8Gi", covered=("cpu", "memory"), resources=None, cpu_limits=None):
    """A ClusterQueue of ``flavor`` with ``cpu`` and ``memory`` quotas (``cpu_limits``: the cpu's borrowingLimit or
    lendingLimit), or the ``resources`` given."""
    res = resources if resources is not None else [dict({"name": "cpu", "nominalQuota": cpu}, **(cpu_limits or {})),
                                                   {"name": "memory", "nominalQuota": memory}]
    return {"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": name},
            "spec": {"namespaceSelector": {},
                     "resourceGroups": [{"coveredResources": list(covered),
                                         "flavors": [{"name": flavor, "resources": res}]}]}}


def lq(name=LQ, namespace=TEAM_NS, cluster_queue=CQ):
    spec = {"clusterQueue": cluster_queue} if cluster_queue is not None else {}
    return {"apiVersion": API, "kind": "LocalQueue", "metadata": {"name": name, "namespace": namespace},
            "spec": spec}


def _with(obj, **spec):
    """``obj`` with these spec fields set."""
    out = copy.deepcopy(obj)
    out["spec"].update(spec)
    return out


def _rg(obj, **group):
    """``obj`` with these fields set in its first resource group."""
    out = copy.deepcopy(obj)
    out["spec"]["resourceGroups"][0].update(group)
    return out


BASELINE = [rf(), cq(), lq()]


def helm_args(**kw):
    args = {"chart_ref": "{chart_ref}", "chart_version": "0.19.2", "plain_http": True, "wait": False}
    args.update(kw)
    return args


def plan_args(**kw):
    args = {"chart_ref": "{chart_ref}", "plain_http": True}
    args.update(kw)
    return args


def ext_args(**kw):
    args = {"resource_group": os.environ.get("AKS_RESOURCE_GROUP", "kueueops-rg"),
            "cluster_name": os.environ.get("AKS_CLUSTER_NAME", "kueueops-aks"), "timeout": 60}
    args.update(kw)
    return args


# A folder of bad files, written once per module run (see the `files` fixture).
FILES = {
    "not-yaml.yml": "controllerManager: [unclosed\n",
    "list.yml": "- a\n- b\n",
    "config-v1beta1.yml": "managerConfig:\n  controllerManagerConfigYaml: |\n    apiVersion: config.kueue.x-k8s.io/v1beta1\n"
                          "    kind: Configuration\n",
    "gitops-not-json.json": "{not json",
    "existing-backup/.keep": "",
    "a-file": "not a folder\n",
    # A kueue_backup folder (no object files, a valid manifest) and a GitOps state file of another cluster (issue 40).
    "foreign-backup/manifest.json": '{"format": "kueueops.aks/kueue_backup/v1", "files": {}, "counts": {}, '
                                    '"cluster": {"uid": "uid-of-another-cluster", "context": "aks-prod"}}\n',
    "gitops-foreign.json": '{"format": "kueueops.aks/kueue_gitops/v1", "objects": [], '
                           '"cluster": {"uid": "uid-of-another-cluster", "context": "aks-prod"}}\n',
}


def q(resources=None, **kw):
    args = {"resources": resources or [], "timeout": 60}
    args.update(kw)
    return args


# The multikueue option of kueue_queues (issue 18, the manager side): a worker kubeconfig in block YAML (no braces,
# which _fill would read as placeholders), its user given as indented lines.
def mk_kubeconfig(user="    token: corpus-mk-token\n", cluster="    certificate-authority-data: Q0E=\n"):
    return ("apiVersion: v1\nkind: Config\nclusters:\n- name: w\n  cluster:\n    server: https://127.0.0.1:1\n" + cluster
            + "users:\n- name: w\n  user:\n" + user
            + "contexts:\n- name: w\n  context:\n    cluster: w\n    user: w\ncurrent-context: w\n")


def mk(clusters=None, resources=None, **kw):
    option = {"config": "corpus-mk", "admission_check": "corpus-mk-check", "cluster_queues": [CQ],
              "clusters": clusters if clusters is not None else [{"name": "corpus-w1", "kubeconfig": mk_kubeconfig()}]}
    option.update(kw)
    return q([rf(), cq(), lq()] + (resources or []), multikueue=option)


# ------------------------------------------------------------------------------------------- cases
CASES = [
    # ---- kueue_helm: options, types, feature gates, integrations, versions, values
    Case("helm-unknown-feature-gate", "kueue_helm", ["feature_gates", "NoSuchGate"],
         ["Valid feature gates", "use names that Kueue 0.19.2 knows"],
         {"args": helm_args(feature_gates={"NoSuchGate": True})}),
    Case("helm-feature-gate-not-bool", "kueue_helm", ["feature_gates", "TopologyAwareScheduling", "sometimes"],
         ["map each feature gate name to true or false"],
         {"args": helm_args(feature_gates={"TopologyAwareScheduling": "sometimes"})}),
    Case("helm-unknown-integration", "kueue_helm", ["integrations", "example.com/nosuch"],
         ["Valid frameworks", "use names that Kueue 0.19.2 knows"],
         {"args": helm_args(integrations=["batch/job", "example.com/nosuch"])}),
    Case("helm-duplicate-integration", "kueue_helm", ["integrations", "batch/job", "listed twice"],
         ["list each integration once"],
         {"args": helm_args(integrations=["batch/job", "batch/job"])}),
    Case("helm-chart-version-not-semver", "kueue_helm", ["chart_version", "0.19"], ["exact version", "latest"],
         {"args": helm_args(chart_version="0.19")}),
    Case("helm-chart-version-words", "kueue_helm", ["chart_version", "newest"], ["exact version", "latest"],
         {"args": helm_args(chart_version="newest")}),
    # A patch of the installed minor (0.19.2) the registry does not publish (another minor is refused before the
    # registry is asked: helm-chart-version-other-minor).
    Case("helm-chart-version-absent", "kueue_helm", ["chart_version", "0.19.99"], ["published version", "0.19.2"],
         {"args": helm_args(chart_version="0.19.99")}),
    # The chart-value option (helm_values.CHART_VALUE_OPTIONS): a name Kubernetes refuses, a PriorityClass the cluster
    # does not have (the Pods would be refused after the release was written), the same chart value in values too.
    Case("helm-priority-class-not-a-name", "kueue_helm", ["manager_priority_class", "Critical_Batch"],
         ["PriorityClass name", "kubectl get priorityclasses"],
         {"args": helm_args(manager_priority_class="Critical_Batch")}),
    Case("helm-priority-class-missing", "kueue_helm", ["manager_priority_class", "PriorityClass no-such-class"],
         ["create the PriorityClass first", "kubectl get priorityclasses"],
         {"args": helm_args(manager_priority_class="no-such-class")}),
    Case("helm-priority-class-given-twice", "kueue_helm",
         ["manager_priority_class", "controllerManager.manager.priorityClassName is given twice"],
         ["one place only", "manager_priority_class option"],
         {"args": helm_args(manager_priority_class="system-cluster-critical",
                            values={"controllerManager": {"manager": {"priorityClassName": "system-node-critical"}}})}),
    Case("helm-managerconfig-misnested", "kueue_helm", ["values", "controllerManager.managerConfig"],
         ["top-level", "managerConfig.controllerManagerConfigYaml"],
         {"args": helm_args(values={"controllerManager": {"managerConfig": {
             "controllerManagerConfigYaml": "integrations:\n  frameworks: [batch/job]\n"}}})}),
    Case("helm-featuregates-misnested", "kueue_helm", ["values", "managerConfig.featureGates"],
         ["controllerManager.featureGates"],
         {"args": helm_args(values={"managerConfig": {"featureGates": {"TopologyAwareScheduling": True}}})}),
    Case("helm-config-yaml-is-mapping", "kueue_helm", ["values", "controllerManagerConfigYaml"], ["string"],
         {"args": helm_args(values={"managerConfig": {"controllerManagerConfigYaml": {
             "integrations": {"frameworks": ["batch/job"]}}}})}),
    Case("helm-password-without-username", "kueue_helm", ["registry_username", "registry_password"],
         ["give both"], {"args": helm_args(registry_password="s3cret-corpus")}),
    # ---- kueue_helm: the private registry's options (TLS with a private CA, client certificates, credentials)
    Case("helm-registry-ca-file-missing", "kueue_helm", ["registry_ca_file", "/nonexistent/registry-ca.pem"],
         ["existing PEM file"], {"args": helm_args(plain_http=False, registry_ca_file="/nonexistent/registry-ca.pem")}),
    Case("helm-registry-cert-without-key", "kueue_helm", ["registry_key_file", "registry_cert_file is set without"],
         ["give both", "or neither"], {"args": helm_args(plain_http=False, registry_cert_file="{files}/a-file")}),
    Case("helm-registry-key-without-cert", "kueue_helm", ["registry_cert_file", "registry_key_file is set without"],
         ["give both", "or neither"], {"args": helm_args(plain_http=False, registry_key_file="{files}/a-file")}),
    Case("helm-registry-insecure-with-plain-http", "kueue_helm",
         ["registry_insecure_skip_tls_verify", "plain HTTP has no TLS"], ["remove plain_http"],
         {"args": helm_args(registry_insecure_skip_tls_verify=True)}),
    Case("helm-registry-ca-file-with-plain-http", "kueue_helm", ["registry_ca_file", "plain HTTP has no TLS"],
         ["remove plain_http"], {"args": helm_args(registry_ca_file="{files}/a-file")}),
    Case("helm-registry-insecure-not-bool", "kueue_helm", ["registry_insecure_skip_tls_verify", "sometimes"],
         ["bool"], {"args": helm_args(plain_http=False, registry_insecure_skip_tls_verify="sometimes")}),
    Case("helm-registry-ca-untrusted", "kueue_helm", ["registry_ca_file", "cannot be verified"],
         ["registry_insecure_skip_tls_verify"],
         {"args": helm_args(chart_ref="{tls_chart_ref}", plain_http=False, registry_username="{tls_user}",
                            registry_password="s3cret-corpus")}),
    Case("helm-registry-wrong-password", "kueue_helm", ["registry_password", "refused"],
         ["check registry_username and registry_password"],
         {"args": helm_args(chart_ref="{tls_chart_ref}", plain_http=False, registry_ca_file="{tls_ca}",
                            registry_username="{tls_user}", registry_password="s3cret-corpus")}),
    Case("helm-timeout-zero", "kueue_helm", ["timeout"], ["timeout: 300"], {"args": helm_args(timeout=0)}),
    Case("helm-timeout-wrong-type", "kueue_helm", ["timeout", "soon"], ["int"], {"args": helm_args(timeout="soon")}),
    # The release train's rules (issue 39), refused before the registry is asked: a known-broken patch, another minor
    # than the installed 0.19.2 (only the upgrade role crosses one), a gate the pinned minor removed.
    Case("helm-chart-version-broken-patch", "kueue_helm", ["chart_version", "Kueue 0.20.3 is known to be broken"],
         ["pin 0.20.6", "latest"], {"args": helm_args(chart_version="0.20.3")}),
    Case("helm-chart-version-other-minor", "kueue_helm",
         ["chart_version", "Kueue 0.19.2 is installed, and 0.18.4 would downgrade it to another minor"],
         ["playbooks/upgrade.yml", "--check"], {"args": helm_args(chart_version="0.18.4")}),
    Case("helm-feature-gate-removed", "kueue_helm", ["feature_gates", "HierarchicalCohorts", "removed in Kueue 0.20"],
         ["remove"], {"args": helm_args(chart_version="0.20.6", feature_gates={"HierarchicalCohorts": True},
                                        allow_minor_change=True)}),
    Case("helm-state-invalid", "kueue_helm", ["state", "installed"], ["present, absent"],
         {"args": helm_args(state="installed")}),
    Case("helm-feature-gates-not-a-dict", "kueue_helm", ["feature_gates"], ["dict"],
         {"args": helm_args(feature_gates=["TopologyAwareScheduling"])}),
    Case("helm-chart-ref-missing-path", "kueue_helm", ["chart_ref", "/nonexistent/kueue-chart"], ["oci://"],
         {"args": helm_args(chart_ref="/nonexistent/kueue-chart", chart_version="latest")}),
    Case("helm-values-file-missing", "kueue_helm", ["values_files", "/nonexistent/values.yml"], ["give a path"],
         {"args": helm_args(values_files=["/nonexistent/values.yml"])}),
    Case("helm-values-file-not-yaml", "kueue_helm", ["values_files", "not-yaml.yml"], ["correct the file"],
         {"args": helm_args(values_files=["{files}/not-yaml.yml"])}),
    Case("helm-values-file-not-a-mapping", "kueue_helm", ["values_files", "list.yml", "mapping"], ["YAML mapping"],
         {"args": helm_args(values_files=["{files}/list.yml"])}),

    # ---- kueue_queues: every class of invalid Kueue object, checked before any write
    Case("queues-bad-quantity", "kueue_queues", ["ClusterQueue corpus-bad", "nominalQuota", "ten"],
         ["a number with an optional suffix"],
         {"args": q([cq("corpus-bad", cpu="ten")])}),
    Case("queues-negative-quota", "kueue_queues", ["ClusterQueue corpus-bad", "nominalQuota", "-4"],
         ["give 0 or more"],
         {"args": q([cq("corpus-bad", cpu="-4")])}),
    Case("queues-flavor-resource-mismatch", "kueue_queues", ["ClusterQueue corpus-bad", "spec.resourceGroups[0]"],
         ["flavors must have the same number of resources as the coveredResources"],
         {"args": q([cq("corpus-bad", covered=("cpu",))])}),
    Case("queues-invalid-dns-name", "kueue_queues", ["ResourceFlavor Bad_Flavor", "metadata.name"],
         ["must consist of lower case alphanumeric characters"],
         {"args": q([rf("Bad_Flavor")])}),
    Case("queues-unknown-kind", "kueue_queues", ["ClusterQueu", "kind"], ["supported: Secret"],
         {"args": q([dict(cq("corpus-bad"), kind="ClusterQueu")])}),
    Case("queues-wrong-apiversion", "kueue_queues", ["apiVersion", "apps/v1"], ["write kueue.x-k8s.io/v1beta2"],
         {"args": q([dict(rf("corpus-bad"), apiVersion="apps/v1")])}),
    Case("queues-unknown-kueue-version", "kueue_queues", ["apiVersion", "kueue.x-k8s.io/v9"],
         ["write kueue.x-k8s.io/v1beta2"],
         {"args": q([dict(rf("corpus-bad"), apiVersion="kueue.x-k8s.io/v9")])}),
    Case("queues-missing-required-field", "kueue_queues", ["LocalQueue corpus-team/corpus-bad", "spec.clusterQueue"],
         ["name the ClusterQueue to submit to"],
         {"args": q([lq("corpus-bad", cluster_queue=None)])}),
    Case("queues-missing-name", "kueue_queues", ["ResourceFlavor", "resources[0]", "metadata.name"],
         ["give every object a metadata.name"],
         {"args": q([{"apiVersion": API, "kind": "ResourceFlavor", "metadata": {}, "spec": {}}])}),
    Case("queues-duplicate-object", "kueue_queues", ["ResourceFlavor corpus-dup", "declared twice"],
         ["keep one of them"],
         {"args": q([rf("corpus-dup"), rf("corpus-dup", nodeLabels={"pool": "a"})])}),
    Case("queues-localqueue-missing-clusterqueue", "kueue_queues",
         ["LocalQueue corpus-team/corpus-lq2", "spec.clusterQueue", "corpus-nocq"],
         ["declare it in resources/src or correct the name"],
         {"args": q([lq("corpus-lq2", cluster_queue="corpus-nocq")])}),
    Case("queues-clusterqueue-missing-flavor", "kueue_queues", ["ClusterQueue corpus-bad", "corpus-noflavor"],
         ["declare it in resources/src or correct the name"],
         {"args": q([cq("corpus-bad", flavor="corpus-noflavor")])}),
    Case("queues-multikueueconfig-missing-cluster", "kueue_queues",
         ["MultiKueueConfig corpus-mk", "spec.clusters[0]", "corpus-nowhere"],
         ["declare it in resources/src or correct the name"],
         {"args": q([{"apiVersion": API, "kind": "MultiKueueConfig", "metadata": {"name": "corpus-mk"},
                      "spec": {"clusters": ["corpus-nowhere"]}}])}),
    Case("queues-localqueue-namespace-missing", "kueue_queues", ["LocalQueue", "corpus-nons"], ["create_namespaces"],
         {"args": q([lq("corpus-lq3", namespace="corpus-nons")])}),
    Case("queues-valid-update-with-invalid-object", "kueue_queues", ["LocalQueue", "corpus-nocq"],
         ["declare it in resources/src or correct the name"],
         # the valid change to corpus-cq must not be written either
         {"args": q([rf(), cq(cpu="6"), lq("corpus-lq2", cluster_queue="corpus-nocq")])}),
    Case("queues-aks-name-declared-managed", "kueue_queues", ["aks-", "aks-gpu"], ["choose another name"],
         {"args": q([rf("aks-gpu")], aks_extension=True)}),
    Case("queues-aks-name-detected-managed", "kueue_queues", ["aks-", "aks-gpu"], ["choose another name"],
         {"args": q([rf("aks-gpu")], kueue_namespace=AKS_NS), "fake_extension": True}),
    Case("queues-nothing-to-do", "kueue_queues", ["resources"], ["give resources"], {"args": q([])}),
    Case("queues-workers-out-of-range", "kueue_queues", ["workers", "got 0"], ["the default 8"],
         {"args": q([rf()], workers=0)}),
    Case("queues-src-missing", "kueue_queues", ["src", "/nonexistent/queues.yml"],
         ["give a readable YAML file"],
         {"args": q([], src="/nonexistent/queues.yml")}),
    Case("queues-src-not-yaml", "kueue_queues", ["src", "not-yaml.yml", "not valid YAML"],
         ["give a readable YAML file"],
         {"args": q([], src="{files}/not-yaml.yml")}),
    Case("queues-state-invalid", "kueue_queues", ["state", "applied"], ["present, absent"],
         {"args": q([rf()], state="applied")}),
    # no autoscaling.x-k8s.io ProvisioningRequest API on the local control plane
    Case("queues-provisioning-request-without-api", "kueue_queues",
         ["AdmissionCheck corpus-prov", "spec.controllerName", "kueue.x-k8s.io/provisioning-request",
          "autoscaling.x-k8s.io/v1 provisioningrequests"],
         ["Install cluster-autoscaler's ProvisioningRequest CRD", "or remove this AdmissionCheck"],
         {"args": q([{"apiVersion": API, "kind": "AdmissionCheck", "metadata": {"name": "corpus-prov"},
                      "spec": {"controllerName": "kueue.x-k8s.io/provisioning-request"}}])}),
    # parentName is the v1beta1/v1beta2 name; a v1alpha1 Cohort has spec.parent (a v1alpha1 server drops it)
    Case("queues-v1alpha1-field-without-equivalent", "kueue_queues",
         ["Cohort corpus-alpha", "spec.parentName", "kueue.x-k8s.io/v1alpha1"],
         ["write spec.parent", "declare apiVersion kueue.x-k8s.io/v1beta2"],
         {"args": q([{"apiVersion": GROUP + "/v1alpha1", "kind": "Cohort", "metadata": {"name": "corpus-alpha"},
                      "spec": {"parentName": "corpus-root"}}])}),

    # ---- kueue_queues: refusals of the API server, translated (issue 20). Types and undeclared fields are
    # refused from the CRD schema before the dry-run (schema_check); the rest is the API server's: its structural
    # schema, Kueue's CEL rules and Kueue's webhooks (server_errors). (No Kueue kind has a boolean field.)
    Case("queues-type-integer-as-word", "kueue_queues", ["WorkloadPriorityClass corpus-wpc", "value", '"high"'],
         ["write a number without quotes"],
         {"args": q([{"apiVersion": API, "kind": "WorkloadPriorityClass", "metadata": {"name": "corpus-wpc"},
                      "value": "high"}])}),
    Case("queues-type-string-as-number", "kueue_queues", ["ClusterQueue corpus-bad", "spec.stopPolicy", "the number 5"],
         ['stopPolicy: "5"'], {"args": q([_with(cq("corpus-bad"), stopPolicy=5)])}),
    Case("queues-type-mapping-as-list", "kueue_queues", ["ResourceFlavor corpus-bad", "spec.nodeLabels", "a list"],
         ["write it as a mapping"], {"args": q([rf("corpus-bad", nodeLabels=["pool=gpu"])])}),
    Case("queues-type-list-as-string", "kueue_queues",
         ["ClusterQueue corpus-bad", "spec.resourceGroups[0].coveredResources", 'the string "cpu"'],
         ["write it as a list", "coveredResources: [cpu]"],
         {"args": q([_rg(cq("corpus-bad", covered=("cpu",), resources=[{"name": "cpu", "nominalQuota": "4"}]),
                         coveredResources="cpu")])}),
    Case("queues-type-quantity-as-list", "kueue_queues",
         ["ClusterQueue corpus-bad", "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota", "a list"],
         ["such as 10, 500m or 64Gi"], {"args": q([cq("corpus-bad", cpu=["4"])])}),
    Case("queues-undeclared-field", "kueue_queues", ["ClusterQueue corpus-bad", "spec.stopPolicyy", "not a field"],
         ["did you mean stopPolicy"], {"args": q([_with(cq("corpus-bad"), stopPolicyy="Hold")])}),
    Case("queues-enum-unsupported-value", "kueue_queues", ["ClusterQueue corpus-bad", "spec.queueingStrategy", "Sideways"],
         ["use one of", "BestEffortFIFO"], {"args": q([_with(cq("corpus-bad"), queueingStrategy="Sideways")])}),
    Case("queues-pattern-mismatch", "kueue_queues", ["Topology corpus-topo", "spec.levels[0].nodeLabel",
                                                     'the value "Not A Label" should match'],
         ["write a value that matches"],
         {"args": q([{"apiVersion": API, "kind": "Topology", "metadata": {"name": "corpus-topo"},
                      "spec": {"levels": [{"nodeLabel": "Not A Label"}]}}])}),
    Case("queues-too-many-items", "kueue_queues", ["Topology corpus-topo", "spec.levels"], ["16 or fewer"],
         {"args": q([{"apiVersion": API, "kind": "Topology", "metadata": {"name": "corpus-topo"},
                      "spec": {"levels": [{"nodeLabel": "example.com/level-%d" % i} for i in range(17)]}}])}),
    Case("queues-too-few-items", "kueue_queues", ["ClusterQueue corpus-bad", "spec.resourceGroups[0].coveredResources"],
         ["give at least 1"], {"args": q([cq("corpus-bad", covered=(), resources=[])])}),
    Case("queues-too-long", "kueue_queues", ["WorkloadPriorityClass corpus-wpc", "description"], ["2048 or fewer"],
         {"args": q([{"apiVersion": API, "kind": "WorkloadPriorityClass", "metadata": {"name": "corpus-wpc"},
                      "value": 100, "description": "x" * 2049}])}),
    Case("queues-cel-borrowing-limit-without-cohort", "kueue_queues",
         ["ClusterQueue corpus-bad", "spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit"],
         ["set spec.cohortName", "or remove the limit"],
         {"args": q([cq("corpus-bad", cpu_limits={"borrowingLimit": "2"})])}),
    Case("queues-cel-flavor-fungibility-preference", "kueue_queues",
         ["ClusterQueue corpus-bad", "spec.flavorFungibility.preference"], ["TryNextFlavor"],
         {"args": q([_with(cq("corpus-bad"), flavorFungibility={
             "whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor",
             "preference": "BorrowingOverPreemption"})])}),
    Case("queues-cel-reclaim-never-borrow-within-cohort", "kueue_queues",
         ["ClusterQueue corpus-bad", "spec.preemption"], ["reclaimWithinCohort to Any or LowerPriority"],
         {"args": q([_with(cq("corpus-bad"), cohortName="corpus-cohort", preemption={
             "reclaimWithinCohort": "Never", "borrowWithinCohort": {"policy": "LowerPriority"}})])}),
    Case("queues-cel-topology-flavor-without-node-labels", "kueue_queues",
         ["ResourceFlavor corpus-bad", "spec.topologyName"], ["add the spec.nodeLabels"],
         {"args": q([{"apiVersion": API, "kind": "Topology", "metadata": {"name": "corpus-topo"},
                      "spec": {"levels": [{"nodeLabel": "kubernetes.io/hostname"}]}},
                     rf("corpus-bad", topologyName="corpus-topo")])}),
    Case("queues-cel-taint-effect", "kueue_queues", ["ResourceFlavor corpus-bad", "spec.nodeTaints"],
         ["NoSchedule, PreferNoSchedule or NoExecute"],
         {"args": q([rf("corpus-bad", nodeTaints=[{"key": "k", "value": "v", "effect": "Sometimes"}])])}),
    Case("queues-cel-toleration-without-key", "kueue_queues", ["ResourceFlavor corpus-bad", "spec.tolerations"],
         ["give the toleration a key", "operator: Exists"],
         {"args": q([rf("corpus-bad", tolerations=[{"operator": "Equal", "value": "v", "effect": "NoSchedule"}])])}),
    Case("queues-cel-toleration-value-with-exists", "kueue_queues", ["ResourceFlavor corpus-bad", "spec.tolerations"],
         ["remove value", "operator: Equal"],
         {"args": q([rf("corpus-bad", tolerations=[{"key": "k", "operator": "Exists", "value": "v"}])])}),
    Case("queues-cel-toleration-seconds", "kueue_queues", ["ResourceFlavor corpus-bad", "spec.tolerations"],
         ["effect: NoExecute", "remove tolerationSeconds"],
         {"args": q([rf("corpus-bad", tolerations=[{"key": "k", "operator": "Exists", "effect": "NoSchedule",
                                                    "tolerationSeconds": 30}])])}),
    Case("queues-cel-topology-hostname-not-lowest", "kueue_queues", ["Topology corpus-topo", "spec.levels"],
         ["last entry of spec.levels"],
         {"args": q([{"apiVersion": API, "kind": "Topology", "metadata": {"name": "corpus-topo"},
                      "spec": {"levels": [{"nodeLabel": "kubernetes.io/hostname"},
                                          {"nodeLabel": "topology.kubernetes.io/zone"}]}}])}),
    Case("queues-cel-topology-levels-unique", "kueue_queues", ["Topology corpus-topo", "spec.levels"],
         ["remove the repeated entries"],
         {"args": q([{"apiVersion": API, "kind": "Topology", "metadata": {"name": "corpus-topo"},
                      "spec": {"levels": [{"nodeLabel": "topology.kubernetes.io/zone"},
                                          {"nodeLabel": "topology.kubernetes.io/zone"}]}}])}),
    Case("queues-cel-immutable-field", "kueue_queues", ["LocalQueue corpus-team/corpus-lq", "spec.clusterQueue"],
         ["cannot be changed on an existing object", "state: absent, then present"],
         # force: the baseline LocalQueue was written by another field manager (the test's client)
         {"args": q([rf(), cq(), cq("corpus-cq2"), lq(cluster_queue="corpus-cq2")], force=True)}),
    Case("queues-webhook-lending-limit-without-cohort", "kueue_queues",
         ["ClusterQueue corpus-bad", "spec.resourceGroups[0].flavors[0].resources[0].lendingLimit"],
         ["set spec.cohortName", "or remove the limit"],
         {"args": q([cq("corpus-bad", cpu_limits={"lendingLimit": "2"})])}),
    Case("queues-webhook-lending-limit-above-quota", "kueue_queues",
         ["ClusterQueue corpus-bad", "spec.resourceGroups[0].flavors[0].resources[0].lendingLimit", "above the nominalQuota"],
         ["no higher than the nominalQuota"],
         {"args": q([_with(cq("corpus-bad", cpu_limits={"lendingLimit": "10"}),
                           cohortName="corpus-cohort")])}),
    Case("queues-webhook-resources-out-of-order", "kueue_queues",
         ["ClusterQueue corpus-bad", "spec.resourceGroups[0].flavors[0].resources[0].name"],
         ["in the order of the resource group's coveredResources"],
         {"args": q([cq("corpus-bad", resources=[{"name": "memory", "nominalQuota": "8Gi"},
                                                 {"name": "cpu", "nominalQuota": "4"}])])}),
    Case("queues-webhook-admission-check-on-unknown-flavor", "kueue_queues",
         ["ClusterQueue corpus-bad", "spec.admissionChecksStrategy.admissionChecks[0].onFlavors[0]"],
         ["use one of: corpus-flavor"],
         {"args": q([{"apiVersion": API, "kind": "AdmissionCheck", "metadata": {"name": "corpus-check"},
                      "spec": {"controllerName": "example.com/corpus"}},
                     _with(cq("corpus-bad"), admissionChecksStrategy={"admissionChecks": [
                         {"name": "corpus-check", "onFlavors": ["corpus-ghost"]}]})])}),
    Case("queues-webhook-duplicate-flavor", "kueue_queues", ["ClusterQueue corpus-bad", "listed twice"],
         ["keep one of the entries"],
         {"args": q([_with(cq("corpus-bad"), resourceGroups=[
             {"coveredResources": ["cpu"], "flavors": [{"name": FLAVOR, "resources": [{"name": "cpu", "nominalQuota": "4"}]}]},
             {"coveredResources": ["memory"], "flavors": [{"name": FLAVOR, "resources": [
                 {"name": "memory", "nominalQuota": "8Gi"}]}]}])])}),
    Case("queues-negative-fair-sharing-weight", "kueue_queues", ["ClusterQueue corpus-bad", "spec.fairSharing.weight"],
         ["give 0 or more"], {"args": q([_with(cq("corpus-bad"), fairSharing={"weight": "-1"})])}),
    Case("queues-cel-multikueue-cluster-source", "kueue_queues",
         ["MultiKueueCluster corpus-mkc", "spec.clusterSource"], ["set exactly one"],
         {"args": q([{"apiVersion": API, "kind": "MultiKueueCluster", "metadata": {"name": "corpus-mkc"},
                      "spec": {"clusterSource": {}}}])}),

    # ---- kueue_queues multikueue (issue 18, the manager side): the option's refusals, before any write
    Case("queues-multikueue-no-clusters", "kueue_queues", ["multikueue.clusters", "is empty"],
         ["list each worker"], {"args": mk(clusters=[])}),
    Case("queues-multikueue-cluster-missing-kubeconfig", "kueue_queues", ["kubeconfig", "clusters"], ["required"],
         {"args": mk(clusters=[{"name": "corpus-w1"}])}),
    Case("queues-multikueue-duplicate-cluster", "kueue_queues", ["multikueue.clusters[1].name", "listed twice"],
         ["one entry per worker"],
         {"args": mk(clusters=[{"name": "corpus-w1", "kubeconfig": mk_kubeconfig()},
                               {"name": "corpus-w1", "kubeconfig": mk_kubeconfig()}])}),
    Case("queues-multikueue-invalid-cluster-name", "kueue_queues", ["multikueue.clusters[0].name", "Corpus_W1"],
         ["DNS-1123 subdomain of at most 63"],
         {"args": mk(clusters=[{"name": "Corpus_W1", "kubeconfig": mk_kubeconfig()}])}),
    Case("queues-multikueue-invalid-config-name", "kueue_queues", ["multikueue.config", "not a valid name"],
         ["DNS-1123 subdomain"], {"args": mk(config="corpus_mk")}),
    Case("queues-multikueue-exec-kubeconfig", "kueue_queues",
         ["MultiKueueCluster corpus-w1", "multikueue.clusters[0].kubeconfig", "users[0].user.exec",
          "InsecureKubeConfig"], ["ServiceAccount token", "certificate-authority-data"],
         {"args": mk(clusters=[{"name": "corpus-w1", "kubeconfig": mk_kubeconfig(
             user="    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: kubelogin\n")}])}),
    Case("queues-multikueue-ca-file-kubeconfig", "kueue_queues",
         ["multikueue.clusters[0].kubeconfig", "clusters[0].cluster.certificate-authority"],
         ["certificate-authority-data"],
         {"args": mk(clusters=[{"name": "corpus-w1", "kubeconfig": mk_kubeconfig(
             cluster="    certificate-authority: /etc/worker-ca.crt\n")}])}),
    Case("queues-multikueue-garbage-kubeconfig", "kueue_queues", ["multikueue.clusters[0].kubeconfig", "not valid YAML"],
         ["ServiceAccount token"], {"args": mk(clusters=[{"name": "corpus-w1", "kubeconfig": "clusters: [unclosed\n"}])}),
    Case("queues-multikueue-cluster-queue-not-in-input", "kueue_queues",
         ["multikueue.cluster_queues[1]", "corpus-elsewhere"], ["remove it from kueue_multikueue_cluster_queues"],
         {"args": mk(cluster_queues=[CQ, "corpus-elsewhere"])}),
    Case("queues-multikueue-name-clash", "kueue_queues", ["multikueue.clusters[0].name", "also declared"],
         ["the multikueue option generates it"],
         {"args": mk(resources=[{"apiVersion": API, "kind": "MultiKueueCluster", "metadata": {"name": "corpus-w1"},
                                 "spec": {"clusterSource": {"kubeConfig": {"location": "corpus-other",
                                                                           "locationType": "Secret"}}}}])}),
    Case("queues-multikueue-second-multikueue-check", "kueue_queues",
         ["ClusterQueue corpus-cq", "multikueue.cluster_queues[0]", "MultipleMultiKueueAdmissionChecks"],
         ["remove 'corpus-other-check' from the ClusterQueue"],
         {"args": q([rf(), _with(cq(), admissionChecksStrategy={"admissionChecks": [{"name": "corpus-other-check"}]}),
                     lq(), {"apiVersion": API, "kind": "AdmissionCheck", "metadata": {"name": "corpus-other-check"},
                            "spec": {"controllerName": "kueue.x-k8s.io/multikueue",
                                     "parameters": {"apiGroup": GROUP, "kind": "MultiKueueConfig",
                                                    "name": "corpus-mk"}}}],
                    multikueue={"config": "corpus-mk", "admission_check": "corpus-mk-check", "cluster_queues": [CQ],
                                "clusters": [{"name": "corpus-w1", "kubeconfig": mk_kubeconfig()}]})}),
    Case("queues-secret-insecure-kubeconfig", "kueue_queues",
         ["data.kubeconfig", "clusters[0].cluster.insecure-skip-tls-verify"],
         ["certificate-authority-data"],
         {"args": q([{"apiVersion": API, "kind": "MultiKueueCluster", "metadata": {"name": "corpus-mkc"},
                      "spec": {"clusterSource": {"kubeConfig": {"location": "corpus-mkc-secret",
                                                                "locationType": "Secret"}}}}],
                    secrets=[{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "corpus-mkc-secret"},
                              "stringData": {"kubeconfig": mk_kubeconfig(
                                  cluster="    insecure-skip-tls-verify: true\n")}}])}),

    # ---- kueue_backup: bad dest/path/verify_path and options
    Case("backup-dest-and-path", "kueue_backup", ["dest", "path"], ["mutually exclusive"],
         {"args": {"dest": "{tmp}/b1", "path": "{tmp}/b2"}}),
    Case("backup-nothing-given", "kueue_backup", ["dest", "path", "verify_path"], ["one of"], {"args": {}}),
    Case("backup-path-exists", "kueue_backup", ["path", "existing-backup", "already exists"], ["choose a new path"],
         {"args": {"path": "{files}/existing-backup"}}),
    Case("backup-dest-is-a-file", "kueue_backup", ["dest", "a-file", "not a folder"], ["choose another dest"],
         {"args": {"dest": "{files}/a-file"}}),
    Case("backup-verify-path-missing", "kueue_backup", ["verify_path", "/nonexistent/backup"],
         ["give the path of a backup folder"],
         {"args": {"verify_path": "/nonexistent/backup"}}),
    Case("backup-bad-resource-id", "kueue_backup", ["cluster_resource_id"], ["/subscriptions/"],
         {"args": {"dest": "{tmp}/b3", "cluster_resource_id": "/subscriptions/x/clusters/y"}}),

    # ---- kueue_gitops: bad state file and object references
    Case("gitops-paused-no-objects", "kueue_gitops", ["objects"], ["list the Flux"],
         {"args": {"state": "paused", "state_file": "{tmp}/gitops.json"}}),
    Case("gitops-object-missing-keys", "kueue_gitops", ["objects[0]", "namespace"], ["give apiVersion"],
         {"args": {"state": "paused", "state_file": "{tmp}/gitops.json",
                   "objects": [{"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
                                "name": "apps"}]}}),
    Case("gitops-object-unknown-kind", "kueue_gitops", ["objects[0]", "Deployment"], ["Flux Kustomization"],
         {"args": {"state": "paused", "state_file": "{tmp}/gitops.json",
                   "objects": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "x", "namespace": "y"}]}}),
    Case("gitops-apiversion-without-group", "kueue_gitops", ["objects[0]", "apiVersion 'v1'"], ["GROUP/VERSION"],
         {"args": {"state": "paused", "state_file": "{tmp}/gitops.json",
                   "objects": [{"apiVersion": "v1", "kind": "Kustomization", "name": "x", "namespace": "y"}]}}),
    # Ansible's own argument validation refuses it before the module runs (elements: dict).
    Case("gitops-object-not-a-dict", "kueue_gitops", ["objects"], ["dictionary requested"],
         {"args": {"state": "paused", "state_file": "{tmp}/gitops.json", "objects": ["flux-system/apps"]}}),
    Case("gitops-object-not-found", "kueue_gitops", ["objects", "apps"], ["check the name"],
         {"args": {"state": "paused", "state_file": "{tmp}/gitops.json",
                   "objects": [{"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
                                "name": "apps", "namespace": "flux-system"}]}}),
    Case("gitops-resume-missing-state-file", "kueue_gitops", ["state_file", "/nonexistent/gitops.json"],
         ["state=paused wrote"], {"args": {"state": "resumed", "state_file": "/nonexistent/gitops.json"}}),
    Case("gitops-state-file-not-json", "kueue_gitops", ["state_file", "gitops-not-json.json", "not valid JSON"],
         ["give the gitops.json that state=paused wrote"],
         {"args": {"state": "resumed", "state_file": "{files}/gitops-not-json.json"}}),
    Case("gitops-state-invalid", "kueue_gitops", ["state", "suspended"], ["paused, resumed"],
         {"args": {"state": "suspended", "state_file": "{tmp}/gitops.json"}}),

    # ---- kueue_jobs_info / kueue_info
    Case("jobs-info-bad-label", "kueue_jobs_info", ["label", "queue name!"], ["give a label key"],
         {"args": {"label": "queue name!"}}),
    Case("jobs-info-bad-namespace", "kueue_jobs_info", ["namespaces[0]", "Team_A"], ["DNS-1123 label"],
         {"args": {"namespaces": ["Team_A"]}}),
    Case("jobs-info-unknown-option", "kueue_jobs_info", ["namespace"], ["Supported parameters"],
         {"args": {"namespace": TEAM_NS}}),
    Case("info-bad-namespace", "kueue_info", ["kueue_namespace", "Kueue System"], ["DNS-1123 label"],
         {"args": {"kueue_namespace": "Kueue System"}}),
    Case("info-unknown-option", "kueue_info", ["namespace"], ["Supported parameters"],
         {"args": {"namespace": "kueue-system"}}),

    # ---- kueue_capacity_info (issue 16)
    Case("capacity-strict-not-bool", "kueue_capacity_info", ["strict", "perhaps"], ["valid booleans"],
         {"args": {"strict": "perhaps"}}),
    Case("capacity-resource-group-without-cluster-name", "kueue_capacity_info", ["cluster_name", "resource_group"],
         ["set both resource_group and cluster_name"], {"args": {"resource_group": "kueueops-rg"}}),
    Case("capacity-src-missing", "kueue_capacity_info", ["src", "/nonexistent/queues.yaml"], ["readable YAML"],
         {"args": {"src": "/nonexistent/queues.yaml"}}),
    Case("capacity-resources-not-a-list", "kueue_capacity_info", ["resources"], ["list"],
         {"args": {"resources": {"kind": "ResourceFlavor"}}}),
    # ---- kueue_drift_info (issue 16): every option; read-only, so "unchanged" holds by construction, and is checked
    Case("drift-malformed-object", "kueue_drift_info", ["LocalQueue", "corpus-nocq", "spec.clusterQueue"],
         ["declare it in resources/src or correct the name"],
         {"args": {"resources": [rf(), lq("corpus-lq2", cluster_queue="corpus-nocq")]}}),
    # (the secrets option is no_log: Ansible masks every string of it in the message, the Secret's name and kind too)
    Case("drift-secret-not-base64", "kueue_drift_info", ["data.kubeconfig", "not valid base64"], ["stringData"],
         {"args": {"secrets": [{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "corpus-mk-secret"},
                                "data": {"kubeconfig": "%%% not base64 %%%"}}]}}),
    Case("drift-src-missing", "kueue_drift_info", ["src", "/nonexistent/queues.yml"], ["give a readable YAML file"],
         {"args": {"src": "/nonexistent/queues.yml"}}),
    Case("drift-bad-namespace", "kueue_drift_info", ["kueue_namespace", "Kueue System"], ["DNS-1123 label"],
         {"args": {"kueue_namespace": "Kueue System"}}),
    Case("drift-bad-release-name", "kueue_drift_info", ["release_name", "Kueue Release"], ["DNS-1123 label"],
         {"args": {"release_name": "Kueue Release"}}),
    Case("drift-install-not-a-bool", "kueue_drift_info", ["install", "perhaps"], ["Valid booleans"],
         {"args": {"install": "perhaps"}}),
    Case("drift-version-not-a-version", "kueue_drift_info", ["version", "newest"], ["latest"],
         {"args": {"version": "newest"}}),
    Case("drift-unknown-feature-gate", "kueue_drift_info", ["feature_gates", "NoSuchGate"], ["Valid feature gates"],
         {"args": {"feature_gates": {"NoSuchGate": True}}}),
    Case("drift-unknown-integration", "kueue_drift_info", ["integrations", "example.com/nosuch"], ["Valid frameworks"],
         {"args": {"integrations": ["batch/job", "example.com/nosuch"]}}),
    Case("drift-priority-class-not-a-name", "kueue_drift_info", ["manager_priority_class", "Critical_Batch"],
         ["PriorityClass name"], {"args": {"manager_priority_class": "Critical_Batch"}}),
    Case("drift-values-misnested", "kueue_drift_info", ["values", "featureGates"], ["controllerManagerConfigYaml"],
         {"args": {"values": {"featureGates": [{"name": "TopologyAwareScheduling", "enabled": True}]}}}),
    Case("drift-values-file-missing", "kueue_drift_info", ["values_files", "/nonexistent/values.yml"], ["give a path"],
         {"args": {"values_files": ["/nonexistent/values.yml"]}}),
    Case("drift-extension-not-arm-json", "kueue_drift_info", ["extension", "properties"], ["kueue_extension"],
         {"args": {"extension": {"properties": "Succeeded"}}}),
    Case("drift-extension-setting-not-a-scalar", "kueue_drift_info", ["configuration_settings", "replicas"],
         ["give a scalar"], {"args": {"configuration_settings": {"replicas": [1, 2]}}}),
    Case("drift-extension-version-malformed", "kueue_drift_info", ["extension_version", "soon"], ["AKS's form"],
         {"args": {"extension_version": "soon"}}),

    # ---- kueue_verify
    Case("verify-smoke-ref-without-namespace", "kueue_verify", ["smoke_test"], ["NAMESPACE/LOCALQUEUE"],
         {"args": {"smoke_test": [LQ], "timeout": 60}}),
    Case("verify-smoke-missing-localqueue", "kueue_verify", ["smoke_test", "corpus-team/corpus-nolq"],
         ["create it first with kueueops.aks.kueue_queues"],
         {"args": {"smoke_test": [TEAM_NS + "/corpus-nolq"], "timeout": 30}}),
    Case("verify-smoke-bad-requests", "kueue_verify", ["smoke_test_requests.cpu", "lots"], ["positive quantity"],
         {"args": {"smoke_test": [TEAM_NS + "/" + LQ], "smoke_test_requests": {"cpu": "lots"}, "timeout": 30}}),
    Case("verify-gate-not-bool", "kueue_verify", ["feature_gates", "TopologyAwareScheduling"], ["true or false"],
         {"args": {"feature_gates": {"TopologyAwareScheduling": "maybe"}}}),
    Case("verify-negative-timeout", "kueue_verify", ["timeout"], ["non-negative"], {"args": {"timeout": -5}}),
    Case("verify-install-method-invalid", "kueue_verify", ["install_method", "operator"], ["auto, helm, extension"],
         {"args": {"install_method": "operator"}}),
    # ---- kueue_verify's MultiKueue checks (issue 18, piece C: multikueue_admission_check)
    Case("verify-multikueue-check-bad-name", "kueue_verify", ["multikueue_admission_check", "Multi_Kueue"],
         ["DNS-1123 subdomain"], {"args": {"multikueue_admission_check": "Multi_Kueue"}}),
    Case("verify-multikueue-check-missing", "kueue_verify",
         ["multikueue/admissioncheck/corpus-no-mk", "AdmissionCheck corpus-no-mk does not exist",
          "multikueue_admission_check"], ["create it with kueueops.aks.kueue_queues"],
         {"args": {"multikueue_admission_check": "corpus-no-mk", "wait": False}}),

    # ---- kueue_extension against the ARM emulator: no write may reach ARM
    Case("extension-release-train-unknown", "kueue_extension", ["release_train", "nightly"], ["stable", "preview"],
         {"args": ext_args(release_train="nightly", preflight=False)}),
    Case("extension-release-train-empty", "kueue_extension", ["release_train"], ["preview"],
         {"args": ext_args(release_train=" ", preflight=False)}),
    Case("extension-version-malformed", "kueue_extension", ["version", "newest"], ["exact version"],
         {"args": ext_args(version="newest", preflight=False)}),
    # The release train's rules (issue 39): a Kueue release the catalog knows as broken, refused before any ARM write.
    Case("extension-version-broken-patch", "kueue_extension", ["version", "Kueue 0.20.3 is known to be broken"],
         ["pin 0.20.6"], {"args": ext_args(version="0.20.3-aks.0.4.4")}),
    # Well-formed but not offered: the preflight lists what the release train offers (before its Kubernetes check,
    # which would refuse this cluster's Helm Kueue).
    Case("extension-version-not-offered", "kueue_extension", ["version", "0.1.0", "offered: "], ["omit version"],
         {"args": ext_args(version="0.1.0")}),
    Case("extension-release-namespace-invalid", "kueue_extension", ["release_namespace", "Kueue System"],
         ["DNS-1123 label"], {"args": ext_args(release_namespace="Kueue System", preflight=False)}),
    Case("extension-timeout-zero", "kueue_extension", ["timeout"], ["for example 900"],
         {"args": ext_args(timeout=0, preflight=False)}),
    Case("extension-upgrade-none-without-version", "kueue_extension", ["auto_upgrade_mode", "version"],
         ["pinned version"], {"args": ext_args(auto_upgrade_mode="none", preflight=False)}),
    Case("extension-setting-both-protected", "kueue_extension", ["configuration_protected_settings", "a.key"],
         ["one of the two"], {"args": ext_args(configuration_settings={"a.key": "1"},
                                               configuration_protected_settings={"a.key": "2"}, preflight=False)}),
    Case("extension-setting-not-scalar", "kueue_extension", ["configuration_settings", "tolerations"],
         ["dotted key"], {"args": ext_args(configuration_settings={"tolerations": [{"key": "a"}]},
                                           preflight=False)}),
    Case("extension-invalid-name", "kueue_extension", ["name", "Kueue_Ext"], ["lowercase"],
         {"args": ext_args(name="Kueue_Ext", preflight=False)}),
    Case("extension-wrong-subscription", "kueue_extension", ["subscription_id"], ["check subscription_id"],
         {"args": ext_args(subscription_id="00000000-0000-4000-8000-0000000000ff", preflight=False)}),
    Case("extension-wrong-resource-group", "kueue_extension", ["resource_group", "no-such-rg"],
         ["resource group must exist"], {"args": ext_args(resource_group="no-such-rg", preflight=False)}),
    Case("extension-wrong-cluster-name", "kueue_extension", ["cluster_name", "no-such-aks"],
         ["cluster must exist"], {"args": ext_args(cluster_name="no-such-aks", preflight=False)}),
    Case("extension-list-versions-with-absent", "kueue_extension", ["list_versions", "state=present only"],
         ["remove list_versions", "use state=present"],
         {"args": ext_args(list_versions=True, state="absent", preflight=False)}),
    Case("extension-missing-cluster-name", "kueue_extension", ["cluster_name"], ["missing required"],
         {"args": {"resource_group": "kueueops-rg"}}),
    # ---- Kubernetes options of every module (issue 13): kubernetes.core's no_proxy, proxy_headers, several
    # kubeconfig paths, wait_timeout; one module each (the options and their checks are shared).
    Case("kube-no-proxy-not-a-string", "kueue_info", ["no_proxy", "'localhost'"], ["one comma-separated string"],
         {"args": {"proxy": "http://127.0.0.1:9", "no_proxy": ["localhost", "10.0.0.0/8"]}}),
    Case("kube-proxy-headers-unknown-key", "kueue_verify", ["proxy_headers", "proxy_auth"],
         ["Supported parameters include: basic_auth, proxy_basic_auth, user_agent"],
         {"args": {"wait": False, "proxy": "http://127.0.0.1:9", "proxy_headers": {"proxy_auth": "x"}}}),
    Case("kube-proxy-headers-without-proxy", "kueue_jobs_info", ["proxy_headers", "without a proxy"], ["set proxy"],
         {"args": {"proxy_headers": {"user_agent": "corpus/1"}}}),
    Case("kube-proxy-not-a-url", "kueue_queues", ["proxy", "127.0.0.1:3128", "not a proxy URL"],
         ["http://proxy.example.com:3128"], {"args": q([rf("corpus-bad")], proxy="127.0.0.1:3128")}),
    Case("kube-kubeconfig-paths-one-missing", "kueue_backup", ["kubeconfig", "/nonexistent/second.kubeconfig"],
         ["existing kubeconfig", "joined by ':'"],
         {"args": {"dest": "{tmp}/backups", "kubeconfig": "{kubeconfig}:/nonexistent/second.kubeconfig"}}),
    Case("helm-proxy-header-helm-cannot-send", "kueue_helm", ["proxy_headers", "user_agent", "helm cannot send"],
         ["drop proxy_headers user_agent"],
         {"args": helm_args(proxy="http://127.0.0.1:9", proxy_headers={"user_agent": "corpus/1"})}),
    Case("helm-wait-timeout-alias-zero", "kueue_helm", ["timeout"], ["timeout: 300"],
         {"args": helm_args(wait_timeout=0)}),
    # ---- the upgrade's options (issue 15): kueue_helm's rollback, kueue_backup's compare, the plan, the migration
    Case("helm-rollback-without-revision", "kueue_helm", ["rollback_revision", "state is rolled_back"], ["missing"],
         {"args": helm_args(state="rolled_back")}),
    Case("helm-rollback-revision-with-present", "kueue_helm", ["rollback_revision", "only to state=rolled_back"],
         ["set state: rolled_back"], {"args": helm_args(rollback_revision=1)}),
    Case("helm-rollback-revision-zero", "kueue_helm", ["rollback_revision", "got 0"], ["helm history lists"],
         {"args": helm_args(state="rolled_back", rollback_revision=0)}),
    Case("helm-rollback-revision-unknown", "kueue_helm", ["rollback_revision", "no revision 99"],
         ["helm history lists"], {"args": helm_args(state="rolled_back", rollback_revision=99)}),
    Case("helm-rollback-revision-not-int", "kueue_helm", ["rollback_revision", "previous"], ["int"],
         {"args": helm_args(state="rolled_back", rollback_revision="previous")}),
    Case("backup-compare-path-missing", "kueue_backup", ["compare_path", "/nonexistent/backup"],
         ["give the path of a backup folder"], {"args": {"compare_path": "/nonexistent/backup"}}),
    Case("backup-compare-path-with-dest", "kueue_backup", ["dest", "compare_path"], ["mutually exclusive"],
         {"args": {"dest": "{tmp}/b4", "compare_path": "{tmp}/b5"}}),
    Case("upgrade-plan-target-not-a-version", "kueue_upgrade_plan", ["target_version", "'0.19'"],
         ["exact version such as 0.19.2", "latest"], {"args": plan_args(target_version="0.19")}),
    Case("upgrade-plan-target-not-published", "kueue_upgrade_plan", ["target_version", "0.18.0"],
         ["published"], {"args": plan_args(target_version="0.18.0")}),
    Case("upgrade-plan-downgrade", "kueue_upgrade_plan", ["target_version", "0.17.0 is older than the installed 0.19.2"],
         ["Fix:"], {"args": plan_args(target_version="0.17.0")}),
    Case("upgrade-plan-current-version-on-helm", "kueue_upgrade_plan", ["current_version", "Helm release"],
         ["remove current_version"], {"args": plan_args(current_version="0.15.0")}),
    Case("upgrade-plan-chart-ref-not-oci", "kueue_upgrade_plan", ["chart_ref", "not an oci:// reference"],
         ["oci://REGISTRY/REPO/kueue"], {"args": plan_args(chart_ref="/nonexistent/kueue-chart")}),
    Case("upgrade-plan-no-release", "kueue_upgrade_plan", ["release_name", "no Helm release corpus-none"],
         ["name its release in release_name"], {"args": plan_args(release_name="corpus-none")}),
    Case("upgrade-plan-unknown-gate", "kueue_upgrade_plan", ["feature_gates", "NoSuchGate"], ["Fix:"],
         {"args": plan_args(feature_gates={"NoSuchGate": True})}),
    Case("upgrade-plan-extension-without-current", "kueue_upgrade_plan", ["current_version", "None"],
         ["the version kueue_extension reports"], {"args": {"install_method": "extension"}}),
    Case("upgrade-plan-extension-offers-not-versions", "kueue_upgrade_plan", ["available_versions", "newest"],
         ["as ARM lists them"], {"args": {"install_method": "extension", "current_version": "0.19.2-aks.0.4.4",
                                          "available_versions": ["0.19.2-aks.0.4.4", "newest"]}}),
    # Into Kueue 0.20 (issue 39): the plan runs on the extension path with a train that offers 0.20.6 (the local
    # registry has no 0.20 chart), and refuses what the inventory still declares at v1beta1, or a broken target.
    Case("upgrade-plan-declared-v1beta1-queue", "kueue_upgrade_plan",
         ["ClusterQueue corpus-v1 (resources[0]) is declared as kueue.x-k8s.io/v1beta1", "Kueue 0.20"],
         ["declare it as kueue.x-k8s.io/v1beta2"],
         {"args": {"install_method": "extension", "current_version": "0.19.2-aks.0.4.4",
                   "available_versions": ["0.19.2-aks.0.4.4", "0.20.6-aks.0.4.4"], "target_version": "latest",
                   "resources": [{"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue",
                                  "metadata": {"name": "corpus-v1"}, "spec": {}}]}}),
    Case("upgrade-plan-values-v1beta1-configuration", "kueue_upgrade_plan",
         ["kueue_helm_values", "config.kueue.x-k8s.io/v1beta1", "Kueue 0.20"], ["config.kueue.x-k8s.io/v1beta2"],
         {"args": {"install_method": "extension", "current_version": "0.19.2-aks.0.4.4",
                   "available_versions": ["0.20.6-aks.0.4.4"], "target_version": "0.20.6-aks.0.4.4",
                   "values": {"managerConfig": {"controllerManagerConfigYaml":
                                                "apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\n"}}}}),
    # The same Configuration in a values file: the plan reads kueue_helm_values_files as the hops install them.
    Case("upgrade-plan-values-file-v1beta1-configuration", "kueue_upgrade_plan",
         ["kueue_helm_values_files: managerConfig.controllerManagerConfigYaml", "config.kueue.x-k8s.io/v1beta1",
          "Kueue 0.20"], ["config.kueue.x-k8s.io/v1beta2"],
         {"args": {"install_method": "extension", "current_version": "0.19.2-aks.0.4.4",
                   "available_versions": ["0.20.6-aks.0.4.4"], "target_version": "0.20.6-aks.0.4.4",
                   "values_files": ["{files}/config-v1beta1.yml"]}}),
    Case("upgrade-plan-values-file-missing", "kueue_upgrade_plan", ["values_files", "/nonexistent/values.yml"],
         ["give a path on the controller"], {"args": plan_args(values_files=["/nonexistent/values.yml"])}),
    Case("upgrade-plan-target-broken-patch", "kueue_upgrade_plan", ["target_version", "0.20.3 is known to be broken"],
         ["pin 0.20.6"], {"args": {"install_method": "extension", "current_version": "0.19.2-aks.0.4.4",
                                   "available_versions": ["0.20.3-aks.0.4.4"], "target_version": "0.20.3-aks.0.4.4"}}),
    Case("upgrade-plan-install-method-invalid", "kueue_upgrade_plan", ["install_method", "operator"],
         ["helm, extension"], {"args": plan_args(install_method="operator")}),
    Case("migration-page-size-zero", "kueue_storage_migration", ["page_size", "got 0"], ["for example 500"],
         {"args": {"page_size": 0}}),
    Case("migration-unknown-crd", "kueue_storage_migration", ["crds", "nosuch.kueue.x-k8s.io"], ["Fix:"],
         {"args": {"crds": ["nosuch.kueue.x-k8s.io"]}}),
    Case("migration-timeout-zero", "kueue_storage_migration", ["timeout"], ["Fix:"], {"args": {"timeout": 0}}),
    Case("migration-workers-zero", "kueue_storage_migration", ["workers", "got 0"], ["the default 8"],
         {"args": {"workers": 0}}),
    # ---- kueue_multikueue_worker (issue 18, the worker side of MultiKueue): every option; refused before any write
    Case("mk-worker-state-invalid", "kueue_multikueue_worker", ["state", "removed"], ["present, absent"],
         {"args": {"state": "removed"}}),
    Case("mk-worker-namespace-missing", "kueue_multikueue_worker", ["namespace", "corpus-no-such-ns", "does not exist"],
         ["install Kueue on the worker first"], {"args": {"namespace": "corpus-no-such-ns"}}),
    Case("mk-worker-service-account-invalid", "kueue_multikueue_worker", ["service_account", "Kueue_SA"],
         ["DNS-1123 label"], {"args": {"service_account": "Kueue_SA"}}),
    Case("mk-worker-token-type-unknown", "kueue_multikueue_worker", ["token_type", "projected"], ["request, secret"],
         {"args": {"token_type": "projected"}}),
    Case("mk-worker-token-ttl-too-short", "kueue_multikueue_worker", ["token_ttl", "599 seconds"], ["at least 600"],
         {"args": {"token_ttl": 599}}),
    Case("mk-worker-rotate-not-bool", "kueue_multikueue_worker", ["rotate", "perhaps"], ["valid booleans"],
         {"args": {"rotate": "perhaps"}}),
    Case("mk-worker-revoke-previous-not-bool", "kueue_multikueue_worker", ["revoke_previous", "always"],
         ["valid booleans"], {"args": {"revoke_previous": "always"}}),
    Case("mk-worker-server-not-https", "kueue_multikueue_worker", ["server", "http://127.0.0.1:6443", "requires TLS"],
         ["give the https:// URL"], {"args": {"server": "http://127.0.0.1:6443"}}),
    Case("mk-worker-ca-data-not-pem", "kueue_multikueue_worker", ["ca_data", "neither a PEM certificate"],
         ["CA certificate"], {"args": {"ca_data": "not a certificate"}}),
    Case("mk-worker-cluster-name-invalid", "kueue_multikueue_worker", ["cluster_name", "'aks worker'"],
         ["letters, digits"], {"args": {"cluster_name": "aks worker"}}),
    Case("mk-worker-timeout-zero", "kueue_multikueue_worker", ["timeout"], ["give the seconds"],
         {"args": {"timeout": 0}}),
    # ---- issue 40: the cluster a backup or a GitOps state file belongs to, the token horizon
    Case("backup-check-cluster-without-verify-path", "kueue_backup", ["check_cluster", "without verify_path"],
         ["give verify_path"], {"args": {"dest": "{tmp}/b6", "check_cluster": True}}),
    Case("backup-verify-path-of-another-cluster", "kueue_backup",
         ["verify_path", "taken from another cluster", "uid-of-another-cluster", "context aks-prod"],
         ["allow_other_cluster: true", "nothing was changed"],
         {"args": {"verify_path": "{files}/foreign-backup", "check_cluster": True}}),
    Case("backup-compare-path-of-another-cluster", "kueue_backup",
         ["compare_path", "taken from another cluster", "uid-of-another-cluster"], ["allow_other_cluster: true"],
         {"args": {"compare_path": "{files}/foreign-backup"}}),
    Case("backup-allow-other-cluster-not-bool", "kueue_backup", ["allow_other_cluster", "perhaps"],
         ["valid booleans"], {"args": {"compare_path": "{files}/foreign-backup", "allow_other_cluster": "perhaps"}}),
    Case("queues-src-backup-of-another-cluster", "kueue_queues",
         ["src", "taken from another cluster", "uid-of-another-cluster", "context aks-prod"],
         ["allow_other_cluster: true", "nothing was changed"], {"args": {"src": "{files}/foreign-backup"}}),
    Case("queues-allow-other-cluster-not-bool", "kueue_queues", ["allow_other_cluster", "sometimes"],
         ["valid booleans"], {"args": {"src": "{files}/foreign-backup", "allow_other_cluster": "sometimes"}}),
    Case("gitops-state-file-of-another-cluster", "kueue_gitops",
         ["state_file", "another cluster", "uid-of-another-cluster"], ["resume them on the cluster"],
         {"args": {"state": "resumed", "state_file": "{files}/gitops-foreign.json"}}),
    Case("verify-token-horizon-negative", "kueue_verify", ["multikueue_token_horizon"],
         ["non-negative number of seconds"], {"args": {"multikueue_token_horizon": -1, "wait": False}}),
    # ---- kueue_multikueue_worker state=preflight and its manager option (issue 44): refused before any read
    Case("mk-worker-preflight-without-manager", "kueue_multikueue_worker",
         ["manager", "required with state=preflight"], ["integrations"], {"args": {"state": "preflight"}}),
    Case("mk-worker-manager-unknown-integration", "kueue_multikueue_worker",
         ["manager.integrations[1]", "ray.io/rayjobs", "not an integration framework"], ["ray.io/rayjob,"],
         {"args": {"state": "preflight", "manager": {"integrations": ["batch/job", "ray.io/rayjobs"]}}}),
    Case("mk-worker-manager-api-version-not-kueue", "kueue_multikueue_worker",
         ["manager.api_version", "'v1beta2'"], ["kueue.x-k8s.io/v1beta2"],
         {"args": {"state": "preflight", "manager": {"integrations": ["batch/job"], "api_version": "v1beta2"}}}),
    Case("mk-worker-manager-without-preflight", "kueue_multikueue_worker",
         ["manager", "only with state=preflight"], ["set state: preflight"],
         {"args": {"manager": {"integrations": ["batch/job"]}}}),
]


# ------------------------------------------------------------------------------------------ fixtures
def _custom(kube):
    from kubernetes import client
    return client.CustomObjectsApi(kube)


def _active(kube, plural, name, namespace=None):
    custom = _custom(kube)
    if namespace:
        obj = custom.get_namespaced_custom_object(GROUP, VERSION, namespace, plural, name)
    else:
        obj = custom.get_cluster_custom_object(GROUP, VERSION, plural, name)
    return any(c["type"] == "Active" and c["status"] == "True"
               for c in (obj.get("status") or {}).get("conditions") or [])


@pytest.fixture(scope="module")
def corpus(kueue, tmp_path_factory):
    """Kueue installed, a ResourceFlavor, a ClusterQueue (Active) and a LocalQueue (Active) in TEAM_NS, the
    AKS_NS namespace, and a folder of bad files; all removed afterwards."""
    from kubernetes import client

    kube = kueue
    core, custom = client.CoreV1Api(kube), _custom(kube)
    for ns in (TEAM_NS, AKS_NS):
        try:
            core.create_namespace({"metadata": {"name": ns}})
        except client.exceptions.ApiException as exc:
            if exc.status != 409:
                raise
    for create, args in ((custom.create_cluster_custom_object, ("resourceflavors", rf())),
                         (custom.create_cluster_custom_object, ("clusterqueues", cq())),
                         (custom.create_namespaced_custom_object, (TEAM_NS, "localqueues", lq()))):
        try:
            create(GROUP, VERSION, *args)
        except client.exceptions.ApiException as exc:  # left by an interrupted run
            if exc.status != 409:
                raise
    wait_for("the corpus queues to be Active", lambda: _active(kube, "clusterqueues", CQ) and _active(
        kube, "localqueues", LQ, TEAM_NS), timeout=120)
    # Kueue's status updates settle: the snapshot is stable before the first case.
    rbac.stable_snapshot(kube)
    folder = tmp_path_factory.mktemp("corpus-files")
    for name, text in FILES.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    yield {"kube": kube, "files": str(folder)}
    custom.delete_namespaced_custom_object(GROUP, VERSION, TEAM_NS, "localqueues", LQ)
    custom.delete_cluster_custom_object(GROUP, VERSION, "clusterqueues", CQ)
    custom.delete_cluster_custom_object(GROUP, VERSION, "resourceflavors", FLAVOR)
    delete_namespaces(kube, [TEAM_NS, AKS_NS])


def _fill(value, subst):
    if isinstance(value, str):
        return value.format(**subst)
    if isinstance(value, list):
        return [_fill(v, subst) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, subst) for k, v in value.items()}
    return value


def _group(case) -> tuple:
    """The environment a case needs: cases of one group share one ansible-playbook run. kueue_extension
    cases need the ARM emulator and NO_KUBE_OPTIONS; a fake_extension case needs the kueue-extension
    Deployment in AKS_NS (which would make kueue_queues see a managed cluster in AKS_NS for every case)."""
    return (case.entry == "kueue_extension", bool(case.data.get("fake_extension")))


def _task_results(result) -> dict:
    """{task name: its result} of a run whose task names are the case ids (one result each)."""
    out = {}
    for name, res in result.tasks():
        assert name not in out, "two results for the task %r" % name
        out[name] = res
    return out


def run_batch(cases: list, kube_config: str, files: str, tmp_of, env: dict | None = None, arm=None,
              extra_tasks: dict | None = None) -> dict:
    """Run `cases` in ONE ansible-playbook run, one task per case (named by its id, ignore_errors: true), the
    corpus_snapshot callback taking rbac.snapshot (and the ARM request log's length) at the play's start and
    after each task. Returns {case id: {"task", "output", "before", "after", "arm"}}: that task's result, the
    run's stdout+stderr, the snapshots just before and just after that task, and the ARM requests made while
    it ran (None without `arm`). `tmp_of(case)` is the case's own {tmp} folder; `extra_tasks` maps a case id
    to the task to run instead of the module call (the self-test's writing task)."""
    subst = {"files": files, "chart_ref": os.environ["KUEUE_CHART_REF"],
             "tls_chart_ref": os.environ["KUEUE_TLS_CHART_REF"], "tls_ca": os.environ["KUEUE_TLS_REGISTRY_CA"],
             "tls_user": os.environ["KUEUE_TLS_REGISTRY_USER"], "kubeconfig": os.environ["K8S_AUTH_KUBECONFIG"]}
    tasks = []
    for case in cases:
        task = (extra_tasks or {}).get(case.id) or {
            "kueueops.aks." + case.entry: _fill(case.data["args"], dict(subst, tmp=str(tmp_of(case))))}
        tasks.append(dict({"name": case.id}, **task, ignore_errors=True))
    snapshots = os.path.join(str(tmp_of(None)), "snapshots.jsonl")
    run_env = dict(env or {}, ANSIBLE_CALLBACKS_ENABLED="corpus_snapshot", KUEUEOPS_CORPUS_SNAPSHOTS=snapshots,
                   KUEUEOPS_CORPUS_KUBECONFIG=kube_config)
    if arm is not None:
        run_env.update(KUEUEOPS_CORPUS_ARM_URL=arm.url, KUEUEOPS_CORPUS_ARM_CA=arm.ca_path)
    result = run_playbook([{"name": "corpus", "hosts": "local", "gather_facts": False, "tasks": tasks}],
                          env=run_env, timeout=300 + 120 * len(cases))
    output = result.stdout + result.stderr
    with open(snapshots) as handle:
        lines = [json.loads(line) for line in handle]
    assert [line["task"] for line in lines] == [None] + [c.id for c in cases], \
        "a snapshot is missing (the callback failed?):\n%s" % output[-4000:]
    requests = Control(arm.url, arm.ca_path).requests() if arm is not None else None
    results = _task_results(result)
    out = {}
    for i, case in enumerate(cases):
        made = None
        if requests is not None:
            made = requests[lines[i]["arm_requests"]:lines[i + 1]["arm_requests"]]
        out[case.id] = {"task": results.get(case.id), "output": output, "before": lines[i]["snapshot"],
                        "after": lines[i + 1]["snapshot"], "arm": made}
    return out


def _arm_writes(made: list) -> list:
    return [(r["method"], r["path"]) for r in made
            if "/extensions" in r["path"].lower() and r["method"] in ("PUT", "PATCH", "DELETE", "POST")]


@pytest.fixture(scope="module")
def batches(corpus, request, tmp_path_factory):
    """The cases of this session (those pytest selected), run once per group (see _group) and cached: the
    first test of a group runs its batch, every test asserts on its own case's record."""
    selected = {item.callspec.params["case"].id for item in request.session.items
                if item.originalname == "test_bad_input_fails_safely" and hasattr(item, "callspec")}
    done = {}
    kube = corpus["kube"]
    folders = {}

    def tmp_of(case):
        key = case.id if case is not None else "batch-%d" % len(folders)
        if key not in folders:
            folders[key] = tmp_path_factory.mktemp(key)
        return folders[key]

    def record(case):
        group = _group(case)
        if group not in done:
            cases = [c for c in CASES if _group(c) == group and (c.id in selected or c.id == case.id)]
            extension, fake = group
            arm, env = None, {}
            if extension:
                arm = request.getfixturevalue("arm")
                Control(arm.url, arm.ca_path).reset()
                env = dict(NO_KUBE_OPTIONS)
            if fake:
                fake_extension_deployment(kube, AKS_NS)
            try:
                done[group] = run_batch(cases, request.getfixturevalue("cluster").kubeconfig, corpus["files"],
                                        tmp_of, env=env, arm=arm)
            except AssertionError as exc:  # every case of the group reports it
                done[group] = exc
            finally:
                if fake:
                    fake_extension_deployment(kube, AKS_NS, create=False)
                if extension:
                    ctl = Control(arm.url, arm.ca_path)
                    if _arm_writes(ctl.requests()):  # leave no extension behind for what runs next
                        run_playbook([{"name": "cleanup", "hosts": "local", "gather_facts": False, "tasks": [
                            {"kueueops.aks.kueue_extension": ext_args(state="absent", force_delete=True,
                                                                      timeout=300)}]}], env=env)
                    ctl.reset()
        if isinstance(done[group], AssertionError):
            raise done[group]
        return done[group][case.id]
    return record


def assert_case(case, rec) -> str:
    """Every per-case assertion of the corpus on one case's record of its batch."""
    message = assert_task_fails_safely(case, rec["task"], rec["output"], rec["before"], rec["after"])
    if os.environ.get("KUEUEOPS_SHOW_MESSAGES"):
        sys.stderr.write("\n[%s] %s\n" % (case.id, message))
    assert "s3cret-corpus" not in rec["output"], "a secret reached the output"
    assert "s3cret-corpus" not in json.dumps(rec["task"], default=str), "a secret reached the task's result"
    if case.entry == "kueue_extension":
        assert rec["arm"] is not None, "%s: the ARM request log was not read" % case.id
        written = _arm_writes(rec["arm"])
        assert written == [], "%s: a write reached ARM: %s" % (case.id, written)
    assert len(message) < 4000, "the message is not one readable paragraph (%d characters)" % len(message)
    return message


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_fails_safely(case, batches):
    assert_case(case, batches(case))


def test_a_writing_case_in_a_batch_fails_alone(corpus, cluster, tmp_path_factory):
    """The mechanism's self-test: in a batch of three, the middle "case" writes (creates a ConfigMap in
    kueue-system, one of the chart's namespaces the snapshot covers) and then fails like a refused input;
    exactly that case is reported as having changed the cluster, its neighbours pass."""
    first, last = CASES[0], next(c for c in CASES if c.entry == "kueue_queues")
    writer = Case("selftest-writes", "kueue_queues", [], [])
    create = "kubectl --kubeconfig %s -n kueue-system create configmap corpus-selftest" % cluster.kubeconfig
    tmp = {}
    try:
        records = run_batch([first, writer, last], cluster.kubeconfig, corpus["files"],
                            lambda c: tmp[c and c.id] if (c and c.id) in tmp else tmp.setdefault(
                                c and c.id, tmp_path_factory.mktemp("selftest")),
                            extra_tasks={writer.id: {"ansible.builtin.command": create, "failed_when": True}})
    finally:
        rbac.kubectl(cluster, "-n", "kueue-system", "delete", "configmap", "corpus-selftest", "--ignore-not-found")
    assert_case(first, records[first.id])
    assert_case(last, records[last.id])
    with pytest.raises(AssertionError, match=r"selftest-writes changed the cluster: .*ConfigMap\|kueue-system\|"
                                             r"corpus-selftest"):
        assert_task_fails_safely(writer, records[writer.id]["task"], records[writer.id]["output"],
                                 records[writer.id]["before"], records[writer.id]["after"])


def test_the_corpus_covers_every_module():
    modules = sorted(f[:-3] for f in os.listdir(os.path.join(rbac.REPO, "plugins", "modules")) if f.endswith(".py"))
    assert sorted(set(c.entry for c in CASES)) == modules
    assert len(CASES) >= 24 and len(set(c.id for c in CASES)) == len(CASES)
