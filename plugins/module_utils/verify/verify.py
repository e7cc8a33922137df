# -*- coding: utf-8 -*-
# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Verification of a Kueue installation: the seed's "Confirm deployment status",
made reliable. Every check returns pass/fail with a reason; waiting uses watches
on the objects concerned, never fixed sleeps.

Importable without Ansible: takes a kubernetes ApiClient, read through the cluster layer
(module_utils/kube/kueue_cluster.py): objects are the API's JSON (camelCase dicts).
"""
import base64
import binascii
import datetime
import json
import re
import time

from ansible_collections.kueueops.aks.plugins.module_utils.kueue.admission_checks import cluster_cause, explain
from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import KueueOpsError, api_exception_message, scrub
from ansible_collections.kueueops.aks.plugins.module_utils.helm.helm_storage import decode_helm_release, latest_release_secret
from ansible_collections.kueueops.aks.plugins.module_utils.kueue.manager_config import effective_from_deployment, read_manager

from ansible_collections.kueueops.aks.plugins.module_utils.kube.kube_import import ApiException
from ansible_collections.kueueops.aks.plugins.module_utils.kueue.kueue_api import CRD_PLURALS, GROUP, condition, condition_true
from ansible_collections.kueueops.aks.plugins.module_utils.kube.kueue_cluster import MANAGER_DEPLOYMENT, Cluster, path
from ansible_collections.kueueops.aks.plugins.module_utils.kueue.queues import (
    MULTIKUEUE_CONTROLLER,
    MULTIKUEUE_SECRET_KEY,
    admission_check_names,
    secret_ref,
    secret_values,
)
from ansible_collections.kueueops.aks.plugins.module_utils.kube.wait import Deadline, WatchRules, poll_until, watch_until
from ansible_collections.kueueops.aks.plugins.module_utils.common import yaml_docs

# The CRDs a healthy install has: every kind of the configuration, and Workloads.
DEFAULT_CRDS = CRD_PLURALS
PROBE_NAME = "kueueops-verify-probe"


def queue_state(queue):
    """What the status of a ClusterQueue or LocalQueue says: whether it is Active, the reason of its Active condition,
    and its pending and admitted Workloads."""
    status = queue.get("status") or {}
    active = condition(queue, "Active")
    return {"active": bool(active and active.get("status") == "True"), "reason": (active or {}).get("reason"),
            "pending": status.get("pendingWorkloads", 0), "admitted": status.get("admittedWorkloads", 0)}


def flavor_quotas(cq):
    """``[{name, resources: [{name, nominal, used}]}]`` of a ClusterQueue: nominal quota from its spec,
    used from ``status.flavorsUsage`` (what admitted workloads use)."""
    used = {}
    for flavor in (cq.get("status") or {}).get("flavorsUsage") or []:
        for res in flavor.get("resources") or []:
            used[(flavor.get("name"), res.get("name"))] = res.get("total")
    out = []
    for group in (cq.get("spec") or {}).get("resourceGroups") or []:
        for flavor in group.get("flavors") or []:
            out.append({"name": flavor.get("name"), "resources": [
                {"name": res.get("name"), "nominal": str(res.get("nominalQuota", "")),
                 "used": str(used.get((flavor.get("name"), res.get("name")), "0"))}
                for res in flavor.get("resources") or []]})
    return out


class Check:
    """One check; ``final``: failed for a cause that waiting cannot heal (admission_checks), which ends the wait."""

    def __init__(self, name, ok, reason, details=None, final=False):
        self.name, self.ok, self.reason, self.details, self.final = name, ok, reason, details, final

    def as_dict(self):
        out = {"name": self.name, "ok": self.ok, "reason": self.reason}
        if self.details is not None:
            out["details"] = self.details
        return out


def rollout_pending(dep, want):
    """What keeps a Deployment's rollout from being complete, as ``kubectl rollout status`` judges it, or None:
    ready old Pods are not the new version running (an upgrade whose new Pods never turn ready keeps the old ones)."""
    status = dep.get("status") or {}
    if (status.get("observedGeneration") or 0) < ((dep.get("metadata") or {}).get("generation") or 0):
        return "the rollout of its newest spec is not observed yet"
    updated = status.get("updatedReplicas") or 0
    if updated < want:
        return "%d/%d updated to its newest spec (the rollout is not complete)" % (updated, want)
    old = (status.get("replicas") or 0) - updated
    if old > 0:
        return "%d old replica(s) still running (the rollout is not complete)" % old
    return None


class Verifier:
    def __init__(self, api_client, namespace="kueue-system", install_method="helm", release_name="kueue",
                 expected_crds=DEFAULT_CRDS, webhook_probe=True):
        self.api_client = api_client
        self.ns = namespace
        self.install_method = install_method
        self.release_name = release_name
        self.expected_crds = tuple(expected_crds)
        self.webhook_probe = webhook_probe
        self.cluster = Cluster(api_client)

    # ------------------------------------------------------------- helpers
    def deployments_expected(self):
        names = [MANAGER_DEPLOYMENT]
        if self.install_method == "extension":
            names.append("kueue-extension")
        return names

    def detect_method(self):
        """auto: the managed extension runs a kueue-extension Deployment; the Helm path does not."""
        if self.cluster.deployment(self.ns, "kueue-extension") is None:
            return "helm"
        return "extension"

    # -------------------------------------------------------------- checks
    def check_deployments(self):
        out = []
        for name in self.deployments_expected():
            try:
                dep = self.cluster.deployment(self.ns, name)
            except ApiException as exc:
                out.append(Check("deployment/%s" % name, False, api_exception_message(exc)))
                continue
            if dep is None:
                out.append(Check("deployment/%s" % name, False, "not found in namespace %s" % self.ns))
                continue
            spec, status = dep.get("spec") or {}, dep.get("status") or {}
            want = spec["replicas"] if spec.get("replicas") is not None else 1
            ready = status.get("readyReplicas") or 0
            available = status.get("availableReplicas") or 0
            rollout = rollout_pending(dep, want)
            ok = want > 0 and ready >= want and available >= want and not rollout
            reason = "%d/%d ready, %d available" % (ready, want, available)
            if rollout:
                reason += ", %s" % rollout
            if not ok:
                reason += self._pod_hint(dep)
            out.append(Check("deployment/%s" % name, ok, reason,
                             {"ready": ready, "replicas": want, "available": available}))
        return out

    def _pod_hint(self, dep):
        match_labels = ((dep.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
        selector = ",".join("%s=%s" % kv for kv in sorted(match_labels.items()))
        try:
            pods = self.cluster.items(path("v1", "pods", self.ns), labelSelector=selector)
        except ApiException:
            return ""
        hints = []
        for pod in pods:
            pod_name = pod["metadata"]["name"]
            statuses = (pod.get("status") or {}).get("containerStatuses")
            for cs in statuses or []:
                waiting = (cs.get("state") or {}).get("waiting")
                if waiting is not None:  # an empty waiting state ({}) is still waiting
                    hints.append("%s: %s %s" % (pod_name, waiting.get("reason") or "", waiting.get("message") or ""))
                elif not cs.get("ready"):
                    hints.append("%s: container %s not ready (restarts %d)" % (
                        pod_name, cs.get("name"), cs.get("restartCount") or 0))
            if not statuses:
                hints.append("%s: %s" % (pod_name, (pod.get("status") or {}).get("phase")))
        if not pods:
            hints.append("no pods match %s" % selector)
        return "; " + "; ".join(h.strip() for h in hints) if hints else ""

    def check_crds(self):
        listed = self.cluster.items(path("apiextensions.k8s.io/v1", "customresourcedefinitions"))
        crds = {c["metadata"]["name"]: c for c in listed if (c.get("spec") or {}).get("group") == GROUP}
        missing, unestablished = [], []
        for plural in self.expected_crds:
            crd = crds.get("%s.%s" % (plural, GROUP))
            if crd is None:
                missing.append(plural)
                continue
            if not condition_true(crd, "Established"):
                unestablished.append(plural)
        ok = not missing and not unestablished
        parts = []
        if missing:
            parts.append("missing: " + ", ".join(missing))
        if unestablished:
            parts.append("not Established: " + ", ".join(unestablished))
        return [Check("crds", ok, "; ".join(parts) or "%d CRDs established" % len(self.expected_crds),
                      {"present": sorted(n.split(".")[0] for n in crds)})]

    def check_webhooks(self):
        adm = "admissionregistration.k8s.io/v1"
        configs = [c for c in self.cluster.items(path(adm, "validatingwebhookconfigurations"))
                   + self.cluster.items(path(adm, "mutatingwebhookconfigurations"))
                   if any(_webhook_service(w).get("namespace") == self.ns for w in c.get("webhooks") or [])]
        checks = []
        if not configs:
            checks.append(Check("webhook-configurations", False,
                                "no webhook configuration points at a service in %s" % self.ns))
        else:
            no_ca = sorted({c["metadata"]["name"] for c in configs for w in c.get("webhooks") or []
                            if not (w.get("clientConfig") or {}).get("caBundle")})
            checks.append(Check("webhook-configurations", not no_ca,
                                "without a CA bundle: %s (the manager has not injected its certificate yet)" % ", ".join(no_ca)
                                if no_ca else "%d configurations with CA bundles" % len(configs)))
        if self.webhook_probe:
            checks.append(self.probe_webhook())
        return checks

    def check_apiservices(self):
        """Every APIService served from Kueue's namespace (the chart registers the visibility API,
        ``v1beta1``/``v1beta2.visibility.kueue.x-k8s.io``, backed by its visibility Service) is
        Available. An unavailable one breaks discovery for every client (kubectl, the namespace
        controller); the check names it with the condition's reason and message."""
        services = kueue_apiservices(self.cluster, self.ns)
        if not services:
            return [Check("apiservices", True, "no APIService is served from namespace %s" % self.ns)]
        return [apiservice_check(svc) for svc in services]

    def probe_webhook(self):
        """A server-side dry-run create of a ClusterQueue: the API server calls Kueue's
        mutating and validating webhooks, and nothing is stored."""
        version = self.served_version()
        body = {"apiVersion": "%s/%s" % (GROUP, version), "kind": "ClusterQueue",
                "metadata": {"name": PROBE_NAME}, "spec": {"namespaceSelector": {}}}
        try:
            self.cluster.create(path("%s/%s" % (GROUP, version), "clusterqueues"), body, dryRun="All")
        except ApiException as exc:
            if exc.status == 409:
                return Check("webhook-roundtrip", True, "a ClusterQueue named %s already exists" % PROBE_NAME)
            return Check("webhook-roundtrip", False, "dry-run create of a ClusterQueue failed: %s" % api_exception_message(exc))
        return Check("webhook-roundtrip", True, "dry-run ClusterQueue admitted through Kueue's webhooks")

    def served_version(self):
        return served_kueue_version(self.cluster)

    def check_helm_release(self):
        """The release status from Helm's own storage (Secrets labelled owner=helm): no helm binary needed."""
        try:
            latest = latest_release_secret(self.cluster, self.ns, self.release_name)
        except ApiException as exc:
            return [Check("helm-release", False, "cannot read Helm's release records: %s" % api_exception_message(exc))]
        if latest is None:
            return [Check("helm-release", False, "no Helm release %r in namespace %s" % (self.release_name, self.ns))]
        labels = latest["metadata"]["labels"]
        status = labels.get("status")
        details = {"revision": int(labels.get("version", "0")), "status": status}
        release = decode_helm_release(latest["data"].get("release")) if latest.get("data") else None
        if release:
            details["chart_version"] = release.get("chart", {}).get("metadata", {}).get("version")
            details["app_version"] = release.get("chart", {}).get("metadata", {}).get("appVersion")
        return [Check("helm-release", status == "deployed",
                      "revision %s is %s" % (details["revision"], status), details)]

    def effective_configuration(self):
        """(the manager's args, its ``controller_manager_config.yaml``, its image): manager_config.read_manager."""
        return read_manager(self.cluster, self.ns)

    # ---------------------------------------------------------------- queues
    def queue_status(self):
        """ClusterQueues (cohort, flavors with nominal and used quota, pending/admitted) and LocalQueues (of every
        namespace); both read page by page, each page summarised before the next is read, so 10,000 live queues
        are never in memory at once (only their summaries). A read that fails gives no queue at all."""
        version = self.served_version()
        out = {"cluster_queues": [], "local_queues": []}
        group_version = "%s/%s" % (GROUP, version)
        try:
            for plural, summarise in (("clusterqueues", self._cluster_queues), ("localqueues", self._local_queues)):
                for items, _meta in self.cluster.pages(path(group_version, plural)):
                    summarise(items, out)
                    if plural == "clusterqueues":
                        self._explain(items, out, version)
        except ApiException:
            return {"cluster_queues": [], "local_queues": []}
        out["cluster_queues"].sort(key=lambda q: q["name"])
        out["local_queues"].sort(key=lambda q: (q["namespace"], q["name"]))
        return out

    def _explain(self, cqs, out, version):
        """The AdmissionCheck chain of each ClusterQueue of ``cqs`` inactive because of an AdmissionCheck
        (admission_checks.explain): its summary's ``reason`` becomes the causes, deepest first, then Kueue's reason,
        and ``cannot_heal`` says whether waiting could make it Active."""
        summaries = dict((q["name"], q) for q in out["cluster_queues"])
        for cq in cqs:
            causes = explain(self.cluster, version, cq)
            summary = summaries.get(cq["metadata"]["name"])
            if causes and summary is not None:
                summary["reason"] = "; ".join([c.text for c in causes] + [summary["reason"] or "AdmissionCheckInactive"])
                summary["cannot_heal"] = any(c.final for c in causes)

    @staticmethod
    def _cluster_queues(cqs, out):
        for cq in cqs:
            out["cluster_queues"].append(dict(
                {"name": cq["metadata"]["name"]}, **queue_state(cq),
                cohort=(cq.get("spec") or {}).get("cohortName") or (cq.get("spec") or {}).get("cohort"),
                flavors=flavor_quotas(cq)))

    @staticmethod
    def _local_queues(lqs, out):
        for lq in lqs:
            state = queue_state(lq)
            del state["reason"]
            out["local_queues"].append(dict({
                "name": lq["metadata"]["name"], "namespace": lq["metadata"]["namespace"],
                "cluster_queue": (lq.get("spec") or {}).get("clusterQueue")}, **state))

    # ------------------------------------------------------------------ run
    def run_checks(self, extra=None):
        checks = []
        for fn in (self.check_deployments, self.check_crds, self.check_webhooks, self.check_apiservices):
            try:
                checks.extend(fn())
            except ApiException as exc:
                checks.append(Check(fn.__name__.replace("check_", ""), False, api_exception_message(exc)))
        if self.install_method == "helm":
            checks.extend(self.check_helm_release())
        for fn in extra or []:
            checks.extend(fn())
        return checks

    def wait(self, timeout, extra=None):
        """Run the checks until all pass or `timeout` seconds pass; between runs, block on
        a watch of the namespace's Deployments (at most 10 s: a change elsewhere is seen by the next run)."""
        checks, _done = poll_until(lambda: self.run_checks(extra), lambda checks: all(c.ok for c in checks)
                                   or any(c.final for c in checks), Deadline(timeout), 10,
                                   pause=self._wait_for_change)
        return checks

    def _wait_for_change(self, seconds):
        """Block until a Deployment in the namespace changes (a watch from the current
        resourceVersion, so its first event is a real change), or `seconds` pass."""
        try:
            watch_until(self.cluster, path("apps/v1", "deployments", self.ns), Deadline(seconds),
                        listed=lambda _items: True, changed=lambda _event: False, rules=WatchRules(errors="relist"))
        except Exception:  # noqa: BLE001 - an API server away ends this pause; the checks run again and say so
            time.sleep(min(seconds, 1))


# ------------------------------------------------------------------------------------------------------ MultiKueue
# A manager's Workload names its worker in status.clusterName (Kueue 0.15 and later); the message of its MultiKueue
# check's Ready state names it too, for a Kueue without that field: "The workload got reservation on \"worker1\""
# (0.15's wording), "The workload was admitted on \"worker1\"" (0.19's).
_DISPATCHED_RE = re.compile(r'(?:reservation|admitted) on "([^"]+)"')
MULTIKUEUE_CONFIG_KIND = 'MultiKueueConfig'


def _active_text(obj):
    """``(active, reason, message)`` of an object's ``Active`` condition; no condition yet: (False, None, None)."""
    cond = condition(obj, "Active")
    if cond is None:
        return False, None, None
    return cond.get("status") == "True", cond.get("reason"), (cond.get("message") or "").strip()


def admission_check_check(name, ac, config_name, config):
    """The Check ``multikueue/admissioncheck/<name>`` of the AdmissionCheck ``ac`` (None: missing), whose parameters
    name the MultiKueueConfig ``config_name`` (``config``: it, or None when missing)."""
    label = "multikueue/admissioncheck/%s" % name
    if ac is None:
        return Check(label, False, "AdmissionCheck %s does not exist (multikueue_admission_check: name the "
                     "AdmissionCheck of controllerName %s that the ClusterQueues use, or create it with "
                     "kueueops.aks.kueue_queues)" % (name, MULTIKUEUE_CONTROLLER))
    spec = ac.get("spec") or {}
    if spec.get("controllerName") != MULTIKUEUE_CONTROLLER:
        return Check(label, False, "AdmissionCheck %s has controllerName %r, not %s: it is not a MultiKueue check "
                     "(multikueue_admission_check: name a MultiKueue AdmissionCheck)" % (
                         name, spec.get("controllerName"), MULTIKUEUE_CONTROLLER))
    params = spec.get("parameters") or {}
    if params.get("kind") != MULTIKUEUE_CONFIG_KIND or params.get("apiGroup") != GROUP or not config_name:
        return Check(label, False, "AdmissionCheck %s: spec.parameters (%s) must name a %s of %s" % (
            name, json.dumps(params, sort_keys=True), MULTIKUEUE_CONFIG_KIND, GROUP))
    if config is None:
        return Check(label, False, "AdmissionCheck %s names MultiKueueConfig %s, which does not exist" % (
            name, config_name))
    active, reason, message = _active_text(ac)
    if active:
        return Check(label, True, "Active, MultiKueueConfig %s with %d cluster(s)" % (
            config_name, len(config_clusters(config))))
    if reason is None:
        return Check(label, False, "AdmissionCheck %s has no Active condition yet (is Kueue's MultiKueue controller "
                     "running?)" % name)
    return Check(label, False, "AdmissionCheck %s is not Active: %s: %s" % (name, reason, message or "no message"))


def config_clusters(config):
    """The MultiKueueCluster names a MultiKueueConfig lists (``spec.clusters``)."""
    return [c for c in (config.get("spec") or {}).get("clusters") or [] if isinstance(c, str)]


def multikueue_cluster_check(name, obj, config_name):
    """``(Check multikueue/cluster/<name>, summary {name, active, reason, message})`` of the MultiKueueCluster
    ``obj`` (None: missing) that MultiKueueConfig ``config_name`` lists. Its ``Active`` condition is the same in
    v1beta1 and v1beta2."""
    label = "multikueue/cluster/%s" % name
    if obj is None:
        summary = {"name": name, "active": False, "reason": "missing",
                   "message": "MultiKueueCluster %s does not exist" % name}
        return Check(label, False, "MultiKueueCluster %s is missing: MultiKueueConfig %s lists it, but it does not "
                     "exist (create it, or remove it from the config)" % (name, config_name)), summary
    active, reason, message = _active_text(obj)
    summary = {"name": name, "active": active, "reason": reason, "message": message}
    if active:
        return Check(label, True, "worker %s connected (%s)" % (name, message or reason)), summary
    if reason is None:
        return Check(label, False, "MultiKueueCluster %s has no Active condition yet" % name), summary
    cause = cluster_cause(name, obj)
    return Check(label, False, "worker %s is not Active: %s: %s%s" % (
        name, reason, message or "no message", cause.text[cause.text.index(" (the worker lacks"):]
        if " (the worker lacks" in cause.text else ""), final=cause.final), summary


def admission_check_state(workload, check_name):
    """The entry of ``status.admissionChecks`` of a Workload for ``check_name`` ({name, state, message}), or None."""
    for entry in (workload.get("status") or {}).get("admissionChecks") or []:
        if entry.get("name") == check_name:
            return entry
    return None


def dispatched_cluster(workload, check_name):
    """The worker a manager's Workload was dispatched to: ``status.clusterName`` (Kueue 0.15 and later), else the
    cluster the admission check's state message names (older Kueue); None when it names none yet."""
    name = (workload.get("status") or {}).get("clusterName")
    if name:
        return name
    state = admission_check_state(workload, check_name) or {}
    if state.get("state") == "Ready":
        found = _DISPATCHED_RE.search(state.get("message") or "")
        if found:
            return found.group(1)
    return None


def uses_admission_check(cluster_queue, check_name):
    """Whether a ClusterQueue (v1beta2 ``admissionChecksStrategy`` or v1beta1 ``admissionChecks``) carries
    ``check_name``."""
    return any(name == check_name for _field, name in admission_check_names(cluster_queue or {}))


class MultiKueueVerifier:
    """The MultiKueue checks of ``multikueue_admission_check`` on the manager cluster: the AdmissionCheck, its
    MultiKueueConfig and every MultiKueueCluster it lists (``checks``, run in the wait loop), and in the smoke test the
    worker each Job was dispatched to (``dispatch``), read with the kubeconfig of that worker's Secret. What the Secret
    holds joins ``no_log_values`` as it is read and is scrubbed from every reason. ``report['multikueue']``:
    {admission_check, config, clusters: [{name, active, reason, message}], dispatched: {"<ns>/<lq>": cluster}}."""

    WORKER_TIMEOUT = (5, 15)  # (connect, read) seconds per request to a worker

    def __init__(self, verifier, name, report, no_log_values):
        self.verifier = verifier
        self.name = name
        self.no_log_values = no_log_values
        self.summary = report.setdefault("multikueue", {"admission_check": name, "config": None, "clusters": [],
                                                        "dispatched": {}})
        self._workers = {}

    def _group_version(self):
        return "%s/%s" % (GROUP, self.verifier.served_version())

    def checks(self):
        try:
            return self._checks()
        except ApiException as exc:
            return [Check("multikueue/admissioncheck/%s" % self.name, False, "cannot read the MultiKueue objects: %s"
                          % api_exception_message(exc))]

    def _checks(self):
        cluster = self.verifier.cluster
        group_version = self._group_version()
        ac = cluster.get(path(group_version, "admissionchecks", name=self.name))
        params = ((ac or {}).get("spec") or {}).get("parameters") or {}
        config_name = params.get("name") if params.get("kind") == MULTIKUEUE_CONFIG_KIND else None
        config = cluster.get(path(group_version, "multikueueconfigs", name=config_name)) if config_name else None
        self.summary["config"] = config_name
        out = [admission_check_check(self.name, ac, config_name, config)]
        clusters = []
        if config is not None and (ac.get("spec") or {}).get("controllerName") == MULTIKUEUE_CONTROLLER:
            for name in config_clusters(config):
                check, summary = multikueue_cluster_check(
                    name, cluster.get(path(group_version, "multikueueclusters", name=name)), config_name)
                out.append(check)
                clusters.append(summary)
        self.summary["clusters"] = clusters
        return out

    # ------------------------------------------------------------ smoke test
    def queue_uses_check(self, local_queue):
        """Whether the ClusterQueue of ``local_queue`` (a LocalQueue) carries this AdmissionCheck."""
        cq_name = (local_queue.get("spec") or {}).get("clusterQueue")
        if not cq_name:
            return False
        return uses_admission_check(self.verifier.cluster.get(path(self._group_version(), "clusterqueues",
                                                                   name=cq_name)), self.name)

    def _worker(self, cluster_name):
        """``(Cluster, Kueue group/version)`` of the worker ``cluster_name``, from the kubeconfig in its
        MultiKueueCluster's Secret (read by name in the Kueue namespace), built once."""
        if cluster_name in self._workers:
            return self._workers[cluster_name]
        # Imported here: the kubeconfig loader is the collection's one (kube_client), which needs Ansible; the rest of
        # this file does not.
        from ansible_collections.kueueops.aks.plugins.module_utils.kube.kube_client import api_client_from_kubeconfig_text
        manager, ns = self.verifier.cluster, self.verifier.ns
        mkc = manager.get(path(self._group_version(), "multikueueclusters", name=cluster_name))
        _field, secret_name = secret_ref(mkc or {})
        if not secret_name:
            raise KueueOpsError("MultiKueueCluster %s reads its kubeconfig from no Secret (locationType Path or a "
                                "ClusterProfile): the smoke test cannot read its worker" % cluster_name)
        secret = manager.get(path("v1", "secrets", ns, secret_name))
        if secret is None:
            raise KueueOpsError("Secret %s/%s of MultiKueueCluster %s does not exist" % (ns, secret_name, cluster_name))
        self.no_log_values.update(secret_values([dict(secret, kind="Secret")]))
        encoded = (secret.get("data") or {}).get(MULTIKUEUE_SECRET_KEY)
        if not encoded:
            raise KueueOpsError("Secret %s/%s of MultiKueueCluster %s has no key %s" % (
                ns, secret_name, cluster_name, MULTIKUEUE_SECRET_KEY))
        text = base64.b64decode(encoded).decode("utf-8", "replace")
        api = api_client_from_kubeconfig_text(text, "the kubeconfig of Secret %s/%s" % (ns, secret_name),
                                              self.no_log_values)
        worker = Cluster(api, timeout=self.WORKER_TIMEOUT)
        found = (worker, "%s/%s" % (GROUP, served_kueue_version(worker)))
        self._workers[cluster_name] = found
        return found

    def dispatch(self, ref, workload, job_name, started):
        """``(done, reason)`` for the smoke-test Job ``job_name`` of queue ``ref`` whose manager Workload is
        ``workload`` (Admitted on the manager): dispatched to a worker, and its copy there has QuotaReserved or
        Admitted."""
        cluster_name = dispatched_cluster(workload, self.name)
        if not cluster_name:
            state = admission_check_state(workload, self.name) or {}
            return False, "Job %s admitted on the manager but its Workload names no worker (admission check %s: %s %s)" \
                % (job_name, self.name, state.get("state", "no state"), state.get("message", ""))
        self.summary["dispatched"][ref] = cluster_name
        meta = workload["metadata"]
        try:
            worker, group_version = self._worker(cluster_name)
            copy = worker.get(path(group_version, "workloads", meta["namespace"], meta["name"]))
        except Exception as exc:  # pylint: disable=broad-except  # reported, scrubbed, as the check's reason
            text = exc.message() if isinstance(exc, KueueOpsError) else (
                api_exception_message(exc) if isinstance(exc, ApiException) else "%s: %s" % (type(exc).__name__, exc))
            return False, self._scrub("Job %s dispatched to %s, but that worker cannot be read: %s" % (
                job_name, cluster_name, text))
        if copy is None:
            return False, "Job %s dispatched to %s, but its Workload %s/%s is not on that worker" % (
                job_name, cluster_name, meta["namespace"], meta["name"])
        if condition_true(copy, "Admitted") or condition_true(copy, "QuotaReserved"):
            return True, "Job %s dispatched to %s and admitted there in %.1fs" % (
                job_name, cluster_name, time.monotonic() - started)
        cond = condition(copy, "QuotaReserved") or condition(copy, "Admitted") or {}
        return False, "Job %s dispatched to %s, but its Workload there is not admitted: %s %s" % (
            job_name, cluster_name, cond.get("reason", "pending"), cond.get("message", ""))

    def not_dispatched(self, workload, job_name):
        """The reason of a manager Workload not Admitted yet, from its state of this admission check, or None."""
        state = admission_check_state(workload, self.name)
        if state is None:
            return None
        return "Job %s not dispatched yet: admission check %s is %s: %s" % (
            job_name, self.name, state.get("state", "Pending"), state.get("message") or "no message")

    def _scrub(self, text):
        return scrub(text, self.no_log_values)


def served_kueue_version(cluster):
    """The version of Kueue's API to read on ``cluster`` (a kueue_cluster.Cluster): v1beta2 where it is served, else
    the group's preferred version (v1beta2 when discovery cannot be read)."""
    try:
        group = cluster.get("/apis")
    except ApiException:
        return "v1beta2"
    for g in (group or {}).get("groups") or []:
        if g.get("name") == GROUP:
            versions = [v.get("version") for v in g.get("versions") or []]
            return "v1beta2" if "v1beta2" in versions else g["preferredVersion"]["version"]
    return "v1beta2"


def _webhook_service(webhook):
    """The Service a webhook (of a webhook configuration, as a dict) calls; {} for one called by URL."""
    return (webhook.get("clientConfig") or {}).get("service") or {}


def kueue_apiservices(cluster, namespace):
    """The APIServices (dicts) whose backend Service is in ``namespace``, by name: those the Kueue chart
    registers there (found by where they point, not by label or name, so another release name or
    the managed extension's install count too)."""
    return sorted((svc for svc in cluster.items(path("apiregistration.k8s.io/v1", "apiservices"))
                   if ((svc.get("spec") or {}).get("service") or {}).get("namespace") == namespace),
                  key=lambda svc: svc["metadata"]["name"])


def apiservice_check(svc):
    """A Check of one APIService's (a dict's) ``Available`` condition (``apiservice/<name>``)."""
    name = svc["metadata"]["name"]
    service = svc["spec"]["service"]
    backend = "%s/%s" % (service.get("namespace"), service.get("name"))
    cond = condition(svc, "Available")
    details = {"service": backend, "status": cond.get("status") if cond else None,
               "reason": cond.get("reason") if cond else None}
    if cond is not None and cond.get("status") == "True":
        return Check("apiservice/%s" % name, True, "Available (Service %s)" % backend, details)
    if cond is None:
        reason = "no Available condition yet (the API server has not checked Service %s)" % backend
    else:
        reason = "Available=%s (%s): %s (Service %s)" % (cond.get("status"), cond.get("reason") or "no reason",
                                                         (cond.get("message") or "no message").strip(), backend)
    return Check("apiservice/%s" % name, False, reason, details)


def parse_queue_ref(ref):
    """'namespace/name' -> (namespace, name); raises ValueError with the fix."""
    parts = str(ref).split("/")
    if len(parts) != 2 or not all(parts):
        raise ValueError("%r is not NAMESPACE/LOCALQUEUE" % (ref,))
    return parts[0], parts[1]


def smoke_job(queue_name, requests):
    """A tiny suspended Job labelled for `queue_name` (the seed's way of submitting to Kueue)."""
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"generateName": "kueueops-smoke-",
                     "labels": {"kueue.x-k8s.io/queue-name": queue_name, "app.kubernetes.io/managed-by": "kueueops"}},
        "spec": {
            "suspend": True, "parallelism": 1, "completions": 1, "backoffLimit": 0,
            "activeDeadlineSeconds": 600, "ttlSecondsAfterFinished": 60,
            "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "smoke", "image": "registry.k8s.io/pause:3.10",
                                "resources": {"requests": dict(requests), "limits": dict(requests)}}],
            }},
        },
    }


def run_smoke_tests(api_client, queues, requests, timeout, multikueue=None):
    """Submit one Job per LocalQueue, wait until Kueue admits it (Workload Admitted=True and the
    Job unsuspended), then delete it. Returns a Check per queue. With ``multikueue`` (a MultiKueueVerifier), a queue
    whose ClusterQueue carries its AdmissionCheck passes only once the Job is dispatched to a worker and admitted
    there (``MultiKueueVerifier.dispatch``)."""
    verifier = Verifier(api_client, webhook_probe=False)
    cluster = verifier.cluster
    group_version = "%s/%s" % (GROUP, verifier.served_version())
    submitted, checks, dispatched = [], [], set()
    # Every LocalQueue first: a missing one fails the smoke test before any Job is created.
    for ref in queues:
        ns, name = parse_queue_ref(ref)
        local_queue = cluster.get(path(group_version, "localqueues", ns, name))
        if local_queue is None:
            checks.append(Check("smoke-test/%s" % ref, False, "LocalQueue %s does not exist, so no smoke-test Job "
                                "was submitted (smoke_test: name an existing LocalQueue as NAMESPACE/LOCALQUEUE, or "
                                "create it first with kueueops.aks.kueue_queues)" % ref))
        elif multikueue is not None and multikueue.queue_uses_check(local_queue):
            dispatched.add(ref)
    if checks:
        return checks
    for ref in queues:
        ns, name = parse_queue_ref(ref)
        try:
            job = cluster.create(path("batch/v1", "jobs", ns), smoke_job(name, requests))
            submitted.append((ref, ns, job["metadata"]["name"], job["metadata"]["uid"], time.monotonic()))
        except ApiException as exc:
            checks.append(Check("smoke-test/%s" % ref, False, "cannot submit a Job: %s" % api_exception_message(exc)))
    results = {}

    def still_pending(pending):
        """The submitted Jobs not admitted yet (each one's Check says why)."""
        still = []
        for ref, ns, job_name, uid, started in pending:
            wls = cluster.items(path(group_version, "workloads", ns))
            mine = [w for w in wls if any(o.get("uid") == uid for o in w["metadata"].get("ownerReferences") or [])]
            admitted = mine and condition_true(mine[0], "Admitted")
            if admitted and _job_suspend(cluster, ns, job_name) is False:
                done, reason = True, "Job %s admitted in %.1fs" % (job_name, time.monotonic() - started)
                if ref in dispatched:
                    done, reason = multikueue.dispatch(ref, mine[0], job_name, started)
                results[ref] = Check("smoke-test/%s" % ref, done, reason)
                if not done:
                    still.append((ref, ns, job_name, uid, started))
            else:
                still.append((ref, ns, job_name, uid, started))
                if mine:
                    cond = condition(mine[0], "QuotaReserved") or condition(mine[0], "Admitted") or {}
                    reason = multikueue.not_dispatched(mine[0], job_name) if ref in dispatched else None
                    results[ref] = Check("smoke-test/%s" % ref, False, reason or "Job %s not admitted: %s %s" % (
                        job_name, cond.get("reason", "pending"), cond.get("message", "")))
                else:
                    results[ref] = Check("smoke-test/%s" % ref, False, "Job %s has no Workload: is %s a LocalQueue "
                                         "in %s, and is Kueue managing Jobs?" % (job_name, ref.split("/")[1], ns))
        pending[:] = still
        return still

    pending = list(submitted)
    if pending:
        poll_until(lambda: still_pending(pending), lambda still: not still, Deadline(timeout), 0.5)
    for ref, *_rest in pending:
        if ref in results:
            results[ref].reason += " (still pending after %ss, the timeout)" % timeout
    for ref, ns, job_name, _uid, _started in submitted:
        cluster.delete(path("batch/v1", "jobs", ns, job_name), propagationPolicy="Foreground")  # 404: gone already
    # Wait for the Jobs to be gone: no Job of the test stays behind. As long as the admission could take (the smoke
    # test's timeout); a Job left is reported. Their finished Workloads go with them, or, right after an install
    # (the garbage collector not yet watching Kueue's new kinds), some seconds later: kueue_backup's comparison does
    # not count a finished Workload gone as lost (backup.lost_workloads).
    jobs = [(ns, job_name) for _ref, ns, job_name, _uid, _started in submitted]
    left, gone = poll_until(lambda: [j for j in jobs if cluster.get(path("batch/v1", "jobs", *j)) is not None],
                            lambda left: not left, Deadline(timeout), 0.3)
    if not gone:
        checks.append(Check("smoke-test/cleanup", False, "Job(s) %s still present %ss after their deletion (delete "
                            "them with kubectl delete job -n NAMESPACE NAME)" % (
                                ", ".join("%s/%s" % j for j in left), timeout)))
    return checks + [results[ref] for ref, *_rest in submitted if ref in results]


def _job_suspend(cluster, namespace, name):
    """The Job's ``spec.suspend``. ``request``, not ``get``: a Job gone meanwhile is the ApiException (404) it was."""
    return (cluster.request("GET", path("batch/v1", "jobs", namespace, name)).get("spec") or {}).get("suspend")


def expectation_checks(verifier, params, report):
    """Checks that the effective gates and integrations are what was asked."""
    def run():
        try:
            args, config_yaml, image = verifier.effective_configuration()
        except Exception as exc:  # pylint: disable=broad-except
            return [Check("effective-configuration", False, "cannot read the manager configuration: %s" % exc)]
        gates, frameworks = effective_from_deployment(args, config_yaml)
        report["version"] = image.rsplit(":", 1)[-1] if ":" in image else image
        report["feature_gates"] = gates
        report["integrations"] = frameworks
        out = []
        want_gates = params.get("feature_gates")
        if want_gates is not None:
            wrong = ["%s (want %s, effective %s)" % (name, bool(value), gates.get(name, "default"))
                     for name, value in sorted(want_gates.items()) if gates.get(name) != bool(value)]
            out.append(Check("feature-gates", not wrong, "differ: " + "; ".join(wrong) if wrong
                             else "all %d expected gates in effect" % len(want_gates)))
        want_frameworks = params.get("integrations")
        if want_frameworks is not None:
            missing = sorted(set(want_frameworks) - set(frameworks))
            out.append(Check("integrations", not missing, "not enabled: " + ", ".join(missing) if missing
                             else "all %d expected integrations enabled" % len(want_frameworks)))
        return out
    return run


def jwt_expiry(token):
    """The ``exp`` claim (seconds since the epoch) of a JWT, read without verifying its signature (the API server does
    that; this only tells when it will stop), or None: not a JWT, or no ``exp`` (a legacy service-account token)."""
    parts = token.split(".") if isinstance(token, str) else []
    if len(parts) != 3:
        return None
    try:
        claims = json.loads(base64.urlsafe_b64decode((parts[1] + "=" * (-len(parts[1]) % 4)).encode("ascii")))
    except (ValueError, UnicodeError, binascii.Error):
        return None
    exp = claims.get("exp") if isinstance(claims, dict) else None
    return int(exp) if isinstance(exp, (int, float)) and not isinstance(exp, bool) else None


def kubeconfig_tokens(text):
    """The bearer tokens of a kubeconfig's users (``users[].user.token``), from its YAML text."""
    try:
        docs = yaml_docs.load_all(text)
    except yaml_docs.yaml.YAMLError:  # a kubeconfig that is not YAML has no token to read
        return []
    doc = docs[0] if docs and isinstance(docs[0], dict) else {}
    users = doc.get("users") if isinstance(doc.get("users"), list) else []
    return [u["user"]["token"] for u in users if isinstance(u, dict) and isinstance(u.get("user"), dict)
            and isinstance(u["user"].get("token"), str) and u["user"]["token"]]


def multikueue_token_expiry(cluster, namespace, group_version, no_log_values, now, horizon):
    """When the worker token of each MultiKueueCluster of the manager expires (issue 40): the ``exp`` of the token in
    the kubeconfig of its Secret (read by name in ``namespace``; every value joins ``no_log_values`` as it is read,
    and no part of a token is returned). ``now``: seconds since the epoch; ``horizon``: seconds - a token that
    expires within it is marked ``warning``. One entry per MultiKueueCluster: {cluster, secret, expires (RFC 3339 or
    None), seconds_left, warning, reason}."""
    out = []
    try:
        clusters = cluster.items(path(group_version, "multikueueclusters"))
    except ApiException as exc:
        if exc.status == 404:  # Kueue not installed, or a release without MultiKueue: no token to read
            return out
        return [{"cluster": "-", "secret": None, "expires": None, "seconds_left": None, "warning": True,
                 "reason": "cannot list the MultiKueueClusters: %s" % api_exception_message(exc)}]
    for mkc in sorted(clusters, key=lambda o: o["metadata"]["name"]):
        _field, secret_name = secret_ref(mkc)
        entry = {"cluster": mkc["metadata"]["name"], "secret": secret_name, "expires": None, "seconds_left": None,
                 "warning": False, "reason": ""}
        out.append(entry)
        try:
            secret = cluster.get(path("v1", "secrets", namespace, secret_name)) if secret_name else None
        except ApiException as exc:
            entry.update(warning=True, reason="cannot read its Secret %s/%s: %s" % (
                namespace, secret_name, api_exception_message(exc)))
            continue
        if secret is None:
            entry["reason"] = ("its kubeconfig Secret %s/%s does not exist" % (namespace, secret_name) if secret_name
                               else "it reads its kubeconfig from no Secret (a Path or a ClusterProfile)")
            entry["warning"] = bool(secret_name)
            continue
        no_log_values.update(secret_values([dict(secret, kind="Secret")]))
        encoded = (secret.get("data") or {}).get(MULTIKUEUE_SECRET_KEY) or ""
        try:
            text = base64.b64decode(encoded).decode("utf-8", "replace")
        except (ValueError, binascii.Error):
            text = ""
        tokens = kubeconfig_tokens(text)
        no_log_values.update(tokens)
        expiries = [e for e in (jwt_expiry(t) for t in tokens) if e is not None]
        if not tokens:
            entry["reason"] = "its kubeconfig holds no token (another kind of credential): no expiry to read"
        elif not expiries:
            entry["reason"] = "its token carries no expiry (a legacy token Secret)"
        else:
            expires = min(expiries)
            entry["expires"] = datetime.datetime.fromtimestamp(expires, datetime.timezone.utc).strftime(
                "%Y-%m-%dT%H:%M:%SZ")
            entry["seconds_left"] = int(expires - now)
            entry["warning"] = entry["seconds_left"] <= horizon
            entry["reason"] = ("expired" if entry["seconds_left"] <= 0 else
                               "expires in %.1f days" % (entry["seconds_left"] / 86400.0))
    return out


def verify_install(api_client, params, report, check_mode=False, no_log_values=None):
    """One kueue_verify run on ``params`` (the module's options): the checks (waiting for them when ``wait``), the
    MultiKueue checks of ``multikueue_admission_check``, the smoke test unless in check mode, the queues' status into
    ``report``. ``no_log_values``: the set of values the module masks; what a MultiKueue Secret holds joins it as it
    is read. Returns (checks, install method)."""
    verifier = Verifier(api_client, namespace=params["namespace"], install_method="helm",
                        release_name=params["release_name"], expected_crds=params["expected_crds"],
                        webhook_probe=params["webhook_probe"])
    method = params["install_method"]
    if method == "auto":
        method = verifier.detect_method()
    verifier.install_method = method
    extra = [expectation_checks(verifier, params, report)]
    multikueue = None
    if params.get("multikueue_admission_check"):
        multikueue = MultiKueueVerifier(verifier, params["multikueue_admission_check"], report,
                                        no_log_values if no_log_values is not None else set())
        extra.append(multikueue.checks)
    if params["wait"]:
        checks = verifier.wait(params["timeout"], extra=extra)
    else:
        checks = verifier.run_checks(extra=extra)
    if params["smoke_test"] and all(c.ok for c in checks) and not check_mode:
        checks.extend(run_smoke_tests(api_client, params["smoke_test"], params["smoke_test_requests"],
                                      params["timeout"] if params["wait"] else 60, multikueue=multikueue))
    if params["queues"]:
        report["queues"] = verifier.queue_status()
    if params.get("multikueue_token_horizon") is not None:
        report["multikueue_tokens"] = multikueue_token_expiry(
            verifier.cluster, params["namespace"], "%s/%s" % (GROUP, verifier.served_version()),
            no_log_values if no_log_values is not None else set(), time.time(), params["multikueue_token_horizon"])
    return checks, method
