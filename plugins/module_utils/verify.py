# -*- coding: utf-8 -*-
# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Verification of a Kueue installation: the seed's "Confirm deployment status",
made reliable. Every check returns pass/fail with a reason; waiting uses watches
on the objects concerned, never fixed sleeps.

Importable without Ansible: takes a kubernetes ApiClient.
"""
import base64
import gzip
import json
import time

from ansible_collections.kueueops.aks.plugins.module_utils.errors import api_exception_message

from ansible_collections.kueueops.aks.plugins.module_utils.kube_import import ApiException, k8s, k8s_watch

GROUP = "kueue.x-k8s.io"
DEFAULT_CRDS = (
    "admissionchecks", "clusterqueues", "cohorts", "localqueues", "multikueueclusters", "multikueueconfigs",
    "provisioningrequestconfigs", "resourceflavors", "topologies", "workloadpriorityclasses", "workloads",
)
PROBE_NAME = "kueueops-verify-probe"


def condition_status(obj, ctype):
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == ctype:
            return cond
    return None


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
    def __init__(self, name, ok, reason, details=None):
        self.name, self.ok, self.reason, self.details = name, ok, reason, details

    def as_dict(self):
        out = {"name": self.name, "ok": self.ok, "reason": self.reason}
        if self.details is not None:
            out["details"] = self.details
        return out


class Verifier:
    def __init__(self, api_client, namespace="kueue-system", install_method="helm", release_name="kueue",
                 expected_crds=DEFAULT_CRDS, webhook_probe=True):
        self.api_client = api_client
        self.ns = namespace
        self.install_method = install_method
        self.release_name = release_name
        self.expected_crds = tuple(expected_crds)
        self.webhook_probe = webhook_probe
        self.apps = k8s.AppsV1Api(api_client)
        self.core = k8s.CoreV1Api(api_client)
        self.ext = k8s.ApiextensionsV1Api(api_client)
        self.adm = k8s.AdmissionregistrationV1Api(api_client)
        self.reg = k8s.ApiregistrationV1Api(api_client)
        self.custom = k8s.CustomObjectsApi(api_client)

    # ------------------------------------------------------------- helpers
    def deployments_expected(self):
        names = ["kueue-controller-manager"]
        if self.install_method == "extension":
            names.append("kueue-extension")
        return names

    def detect_method(self):
        """auto: the managed extension runs a kueue-extension Deployment; the Helm path does not."""
        try:
            self.apps.read_namespaced_deployment("kueue-extension", self.ns)
            return "extension"
        except ApiException as exc:
            if exc.status == 404:
                return "helm"
            raise

    # -------------------------------------------------------------- checks
    def check_deployments(self):
        out = []
        for name in self.deployments_expected():
            try:
                dep = self.apps.read_namespaced_deployment(name, self.ns)
            except ApiException as exc:
                reason = "not found in namespace %s" % self.ns if exc.status == 404 else api_exception_message(exc)
                out.append(Check("deployment/%s" % name, False, reason))
                continue
            want = dep.spec.replicas if dep.spec.replicas is not None else 1
            ready = dep.status.ready_replicas or 0
            available = dep.status.available_replicas or 0
            ok = want > 0 and ready >= want and available >= want
            reason = "%d/%d ready, %d available" % (ready, want, available)
            if not ok:
                reason += self._pod_hint(dep)
            out.append(Check("deployment/%s" % name, ok, reason,
                             {"ready": ready, "replicas": want, "available": available}))
        return out

    def _pod_hint(self, dep):
        selector = ",".join("%s=%s" % kv for kv in sorted((dep.spec.selector.match_labels or {}).items()))
        try:
            pods = self.core.list_namespaced_pod(self.ns, label_selector=selector).items
        except ApiException:
            return ""
        hints = []
        for pod in pods:
            for cs in pod.status.container_statuses or []:
                if cs.state and cs.state.waiting:
                    hints.append("%s: %s %s" % (pod.metadata.name, cs.state.waiting.reason or "",
                                                cs.state.waiting.message or ""))
                elif not cs.ready:
                    hints.append("%s: container %s not ready (restarts %d)" % (
                        pod.metadata.name, cs.name, cs.restart_count or 0))
            if not pod.status.container_statuses:
                hints.append("%s: %s" % (pod.metadata.name, pod.status.phase))
        if not pods:
            hints.append("no pods match %s" % selector)
        return "; " + "; ".join(h.strip() for h in hints) if hints else ""

    def check_crds(self):
        crds = {c.metadata.name: c for c in self.ext.list_custom_resource_definition().items
                if c.spec.group == GROUP}
        missing, unestablished = [], []
        for plural in self.expected_crds:
            crd = crds.get("%s.%s" % (plural, GROUP))
            if crd is None:
                missing.append(plural)
                continue
            est = [c for c in crd.status.conditions or [] if c.type == "Established"]
            if not est or est[0].status != "True":
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
        configs = [c for c in self.adm.list_validating_webhook_configuration().items
                   + self.adm.list_mutating_webhook_configuration().items
                   if any(w.client_config.service and w.client_config.service.namespace == self.ns
                          for w in c.webhooks or [])]
        checks = []
        if not configs:
            checks.append(Check("webhook-configurations", False,
                                "no webhook configuration points at a service in %s" % self.ns))
        else:
            no_ca = sorted({c.metadata.name for c in configs for w in c.webhooks or [] if not w.client_config.ca_bundle})
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
        services = kueue_apiservices(self.reg, self.ns)
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
            self.custom.create_cluster_custom_object(GROUP, version, "clusterqueues", body, dry_run="All")
        except ApiException as exc:
            if exc.status == 409:
                return Check("webhook-roundtrip", True, "a ClusterQueue named %s already exists" % PROBE_NAME)
            return Check("webhook-roundtrip", False, "dry-run create of a ClusterQueue failed: %s" % api_exception_message(exc))
        return Check("webhook-roundtrip", True, "dry-run ClusterQueue admitted through Kueue's webhooks")

    def served_version(self):
        try:
            group = k8s.ApisApi(self.api_client).get_api_versions()
        except ApiException:
            return "v1beta2"
        for g in group.groups:
            if g.name == GROUP:
                versions = [v.version for v in g.versions]
                return "v1beta2" if "v1beta2" in versions else g.preferred_version.version
        return "v1beta2"

    def check_helm_release(self):
        """The release status from Helm's own storage (Secrets labelled owner=helm): no helm binary needed."""
        try:
            secrets = self.core.list_namespaced_secret(
                self.ns, label_selector="owner=helm,name=%s" % self.release_name).items
        except ApiException as exc:
            return [Check("helm-release", False, "cannot read Helm's release records: %s" % api_exception_message(exc))]
        if not secrets:
            return [Check("helm-release", False, "no Helm release %r in namespace %s" % (self.release_name, self.ns))]
        latest = max(secrets, key=lambda s: int(s.metadata.labels.get("version", "0")))
        status = latest.metadata.labels.get("status")
        details = {"revision": int(latest.metadata.labels.get("version", "0")), "status": status}
        release = decode_helm_release(latest.data.get("release")) if latest.data else None
        if release:
            details["chart_version"] = release.get("chart", {}).get("metadata", {}).get("version")
            details["app_version"] = release.get("chart", {}).get("metadata", {}).get("appVersion")
        return [Check("helm-release", status == "deployed",
                      "revision %s is %s" % (details["revision"], status), details)]

    def effective_configuration(self):
        """(feature gates from the Deployment args, frameworks from the manager ConfigMap, image)."""
        dep = self.apps.read_namespaced_deployment("kueue-controller-manager", self.ns)
        container = [c for c in dep.spec.template.spec.containers if c.name == "manager"] or dep.spec.template.spec.containers
        args = container[0].args or []
        cm_name = None
        for vol in dep.spec.template.spec.volumes or []:
            if vol.config_map is not None:
                cm_name = vol.config_map.name
        config_yaml = ""
        if cm_name:
            cm = self.core.read_namespaced_config_map(cm_name, self.ns)
            config_yaml = (cm.data or {}).get("controller_manager_config.yaml", "")
        return args, config_yaml, container[0].image

    # ---------------------------------------------------------------- queues
    def queue_status(self):
        """ClusterQueues (cohort, flavors with nominal and used quota, pending/admitted) and LocalQueues."""
        version = self.served_version()
        out = {"cluster_queues": [], "local_queues": []}
        try:
            cqs = self.custom.list_cluster_custom_object(GROUP, version, "clusterqueues")["items"]
            lqs = self.custom.list_custom_object_for_all_namespaces(GROUP, version, "localqueues")["items"] \
                if hasattr(self.custom, "list_custom_object_for_all_namespaces") else \
                self.custom.list_cluster_custom_object(GROUP, version, "localqueues")["items"]
        except ApiException:
            return out
        for cq in cqs:
            st = cq.get("status") or {}
            active = condition_status(cq, "Active")
            out["cluster_queues"].append({
                "name": cq["metadata"]["name"],
                "active": bool(active and active.get("status") == "True"),
                "reason": (active or {}).get("reason"),
                "pending": st.get("pendingWorkloads", 0),
                "admitted": st.get("admittedWorkloads", 0),
                "cohort": (cq.get("spec") or {}).get("cohortName") or (cq.get("spec") or {}).get("cohort"),
                "flavors": flavor_quotas(cq),
            })
        for lq in lqs:
            st = lq.get("status") or {}
            active = condition_status(lq, "Active")
            out["local_queues"].append({
                "name": lq["metadata"]["name"], "namespace": lq["metadata"]["namespace"],
                "cluster_queue": (lq.get("spec") or {}).get("clusterQueue"),
                "active": bool(active and active.get("status") == "True"),
                "pending": st.get("pendingWorkloads", 0),
                "admitted": st.get("admittedWorkloads", 0),
            })
        out["cluster_queues"].sort(key=lambda q: q["name"])
        out["local_queues"].sort(key=lambda q: (q["namespace"], q["name"]))
        return out

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
        a watch of the namespace's Deployments and the Kueue CRDs (whichever changes first)."""
        deadline = time.time() + timeout
        while True:
            checks = self.run_checks(extra)
            remaining = deadline - time.time()
            if all(c.ok for c in checks) or remaining <= 0:
                return checks
            self._wait_for_change(min(remaining, 10))

    def _wait_for_change(self, seconds):
        """Block until a Deployment in the namespace changes (a watch from the current
        resourceVersion, so its first event is a real change), or `seconds` pass."""
        w = k8s_watch.Watch()
        try:
            rv = self.apps.list_namespaced_deployment(self.ns).metadata.resource_version
            for _event in w.stream(self.apps.list_namespaced_deployment, self.ns, resource_version=rv,
                                   timeout_seconds=max(1, int(seconds)), _request_timeout=seconds + 5):
                break
        except Exception:  # noqa: BLE001 - a broken watch just ends this wait; the checks run again
            time.sleep(min(seconds, 1))
        finally:
            w.stop()


def kueue_apiservices(reg, namespace):
    """The APIServices whose backend Service is in ``namespace``, by name: those the Kueue chart
    registers there (found by where they point, not by label or name, so another release name or
    the managed extension's install count too)."""
    return sorted((svc for svc in reg.list_api_service().items
                   if svc.spec.service is not None and svc.spec.service.namespace == namespace),
                  key=lambda svc: svc.metadata.name)


def apiservice_check(svc):
    """A Check of one APIService's ``Available`` condition (``apiservice/<name>``)."""
    name = svc.metadata.name
    backend = "%s/%s" % (svc.spec.service.namespace, svc.spec.service.name)
    cond = next((c for c in (svc.status.conditions if svc.status else None) or [] if c.type == "Available"), None)
    details = {"service": backend, "status": cond.status if cond else None, "reason": cond.reason if cond else None}
    if cond is not None and cond.status == "True":
        return Check("apiservice/%s" % name, True, "Available (Service %s)" % backend, details)
    if cond is None:
        reason = "no Available condition yet (the API server has not checked Service %s)" % backend
    else:
        reason = "Available=%s (%s): %s (Service %s)" % (cond.status, cond.reason or "no reason",
                                                         (cond.message or "no message").strip(), backend)
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


def run_smoke_tests(api_client, queues, requests, timeout):
    """Submit one Job per LocalQueue, wait until Kueue admits it (Workload Admitted=True and the
    Job unsuspended), then delete it. Returns a Check per queue."""
    batch = k8s.BatchV1Api(api_client)
    custom = k8s.CustomObjectsApi(api_client)
    version = Verifier(api_client, webhook_probe=False).served_version()
    submitted, checks = [], []
    # Every LocalQueue first: a missing one fails the smoke test before any Job is created.
    for ref in queues:
        ns, name = parse_queue_ref(ref)
        try:
            custom.get_namespaced_custom_object(GROUP, version, ns, "localqueues", name)
        except ApiException as exc:
            if exc.status != 404:
                raise
            checks.append(Check("smoke-test/%s" % ref, False, "LocalQueue %s does not exist, so no smoke-test Job "
                                "was submitted (smoke_test: name an existing LocalQueue as NAMESPACE/LOCALQUEUE, or "
                                "create it first with kueueops.aks.kueue_queues)" % ref))
    if checks:
        return checks
    for ref in queues:
        ns, name = parse_queue_ref(ref)
        try:
            job = batch.create_namespaced_job(ns, smoke_job(name, requests))
            submitted.append((ref, ns, job.metadata.name, job.metadata.uid, time.time()))
        except ApiException as exc:
            checks.append(Check("smoke-test/%s" % ref, False, "cannot submit a Job: %s" % api_exception_message(exc)))
    deadline = time.time() + timeout
    pending = list(submitted)
    results = {}
    while pending and time.time() < deadline:
        still = []
        for ref, ns, job_name, uid, started in pending:
            wls = custom.list_namespaced_custom_object(GROUP, version, ns, "workloads")["items"]
            mine = [w for w in wls if any(o.get("uid") == uid for o in w["metadata"].get("ownerReferences") or [])]
            admitted = mine and (condition_status(mine[0], "Admitted") or {}).get("status") == "True"
            if admitted and batch.read_namespaced_job(job_name, ns).spec.suspend is False:
                results[ref] = Check("smoke-test/%s" % ref, True, "Job %s admitted in %.1fs" % (
                    job_name, time.time() - started))
            else:
                still.append((ref, ns, job_name, uid, started))
                if mine:
                    cond = condition_status(mine[0], "QuotaReserved") or condition_status(mine[0], "Admitted") or {}
                    results[ref] = Check("smoke-test/%s" % ref, False, "Job %s not admitted: %s %s" % (
                        job_name, cond.get("reason", "pending"), cond.get("message", "")))
                else:
                    results[ref] = Check("smoke-test/%s" % ref, False, "Job %s has no Workload: is %s a LocalQueue "
                                         "in %s, and is Kueue managing Jobs?" % (job_name, ref.split("/")[1], ns))
        pending = still
        if pending:
            time.sleep(0.5)
    for ref, *_rest in pending:
        if ref in results:
            results[ref].reason += " (still pending after %ss, the timeout)" % timeout
    for ref, ns, job_name, _uid, _started in submitted:
        try:
            batch.delete_namespaced_job(job_name, ns, propagation_policy="Foreground")
        except ApiException as exc:
            if exc.status != 404:
                raise
    # Wait for the Jobs (and so their Workloads) to be gone: nothing of the test stays behind.
    gone_deadline = time.time() + 60
    for _ref, ns, job_name, _uid, _started in submitted:
        while time.time() < gone_deadline:
            try:
                batch.read_namespaced_job(job_name, ns)
            except ApiException as exc:
                if exc.status == 404:
                    break
                raise
            time.sleep(0.3)
    return checks + [results[ref] for ref, *_rest in submitted if ref in results]


def decode_helm_release(data):
    """Helm 3/4 store a release as base64(gzip(json)) inside the Secret's (base64) data."""
    if not data:
        return None
    try:
        raw = base64.b64decode(base64.b64decode(data))
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        return json.loads(raw)
    except (ValueError, OSError):
        return None


def helm_releases(core, namespace):
    """The Helm releases recorded in ``namespace`` (Helm's storage: Secrets labelled ``owner=helm``),
    the latest revision of each: [{name, namespace, revision, status, chart, chart_version, app_version}],
    sorted by name. Reads no helm binary; works for Helm 3 and 4 (storage format v1)."""
    latest = {}
    token = None
    while True:
        kwargs = dict(label_selector="owner=helm", limit=500)
        if token:
            kwargs["_continue"] = token
        page = core.list_namespaced_secret(namespace, **kwargs)
        for secret in page.items or []:
            labels = secret.metadata.labels or {}
            name = labels.get("name")
            try:
                revision = int(labels.get("version", "0"))
            except ValueError:
                continue
            if name and (name not in latest or revision > latest[name][0]):
                latest[name] = (revision, secret)
        token = page.metadata._continue if page.metadata else None
        if not token:
            break
    out = []
    for name in sorted(latest):
        revision, secret = latest[name]
        release = decode_helm_release((secret.data or {}).get("release")) or {}
        chart = (release.get("chart") or {}).get("metadata") or {}
        out.append({"name": name, "namespace": namespace, "revision": revision,
                    "status": (secret.metadata.labels or {}).get("status"), "chart": chart.get("name"),
                    "chart_version": chart.get("version"), "app_version": chart.get("appVersion")})
    return out
