# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Install, upgrade or uninstall Kueue with its Helm chart: the logic of kueueops.aks.kueue_helm.

``KueueHelm`` is a ``helm_session.HelmSession`` (the cluster reached, helm found, the registry logged in to, the
chart version chosen: the read side, which kueue_upgrade_plan uses alone) with the writes. It takes the module's
options as a plain dict and the few things of the AnsibleModule it uses as plain values (``check_mode``, ``diff``,
``run_command`` for helm, ``no_log_values``) and a ``connect`` callable that returns the Kubernetes ApiClient (the
module passes ``get_api_client``). It raises ``KueueOpsError`` (reported with the warnings so far), ``ModuleFailure``
(reported as it is) or ``ApiException``; the module maps them to ``fail_json``. Every Kubernetes request goes through
``kueue_cluster.Cluster``, every wait through ``wait``.

The decisions are plain functions on plain values, unit-tested without helm or a cluster: ``check_inputs`` (what is
refused before anything is contacted), ``check_catalog`` (gates and frameworks of the chart version
``helm_session`` chose), ``release_plan`` / ``diff_shown`` (what would change and what a diff shows),
``finalizer_patch`` (which finalizers an uninstall clears), and the messages of the waits.
"""

from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import REDACTED, KueueOpsError
from ansible_collections.kueueops.aks.plugins.module_utils.helm.helm_session import HelmSession, check_semver
from ansible_collections.kueueops.aks.plugins.module_utils.helm.helm_values import (
    chart_default_config_yaml,
    chart_option_objects,
    check_catalog,
    deep_merge,
    detect_misnested_values,
    load_values_files,
    normalize,
    render_values,
)
from ansible_collections.kueueops.aks.plugins.module_utils.kube.kube_client import describe_kube_error
from ansible_collections.kueueops.aks.plugins.module_utils.kueue.kueue_catalog import version_warning
from ansible_collections.kueueops.aks.plugins.module_utils.kueue.kueue_api import CRD_PLURALS, GROUP
from ansible_collections.kueueops.aks.plugins.module_utils.kube.kueue_cluster import path as api_path
from ansible_collections.kueueops.aks.plugins.module_utils.verify.verify import Verifier, kueue_apiservices
from ansible_collections.kueueops.aks.plugins.module_utils.common import versions
from ansible_collections.kueueops.aks.plugins.module_utils.kube.wait import Deadline, WatchRules, poll_until, watch_until

from ansible_collections.kueueops.aks.plugins.module_utils.kube.kube_import import ApiException


# ---------------------------------------------------------------- pure decisions
def check_inputs(params, load=load_values_files):
    """What is refused before anything is contacted (timeout, mis-nested values, a password without a user),
    in that order; returns the values files' merged values (none read with state=absent)."""
    if params["timeout"] <= 0:
        raise KueueOpsError("must be a positive number of seconds", field="timeout", fix="e.g. timeout: 300")
    problems = detect_misnested_values(params["values"] or {})
    file_values = load(params["values_files"]) if params["state"] == "present" else {}
    problems += ["(in values_files) " + msg for msg in detect_misnested_values(file_values)]
    if problems:
        raise KueueOpsError(" ".join(problems), field="values",
                            fix="put the Configuration under the top-level managerConfig.controllerManagerConfigYaml "
                                "string, or use the module's integrations and feature_gates options")
    if params.get("registry_password") and not params.get("registry_username"):
        raise KueueOpsError("registry_password is set without registry_username", field="registry_username",
                            fix="give both, or neither for an anonymous registry")
    return file_values


def managed_extension_error(extension):
    """The refusal to install beside the AKS managed extension's Deployments ``extension`` ("ns/name")."""
    return KueueOpsError(
        "the AKS managed Kueue extension runs on this cluster (%s); it is a cluster singleton and rejects an "
        "unmanaged Kueue" % ", ".join(extension), field="allow_managed_extension",
        fix="keep the extension, or migrate: back up with kueueops.aks.kueue_backup, remove the extension "
            "(kueueops.aks.kueue_extension state=absent), install with this module, restore with "
            "kueueops.aks.kueue_queues; set allow_managed_extension=true only to override this check")


def chart_version_of(release):
    """The chart version of a ``helm list`` entry, whose ``chart`` is NAME-VERSION where both may hold ``-``:
    ``kueue-0.19.2`` -> ``0.19.2``, ``kueue-0.20.0-rc.1`` -> ``0.20.0-rc.1`` (the first ``-`` that a version
    follows; the text after the last ``-`` when none does)."""
    chart = release["chart"]
    for index, char in enumerate(chart):
        if char == "-" and versions.parse(chart[index + 1:], patch=True) is not None:
            return chart[index + 1:]
    return chart.rsplit("-", 1)[-1]


def release_plan(current, before_values, version, desired):
    """``(before, after, changed)``: the release as it is (``{}`` for none) and as it would be after the run."""
    before = {"chart_version": chart_version_of(current), "status": current["status"],
              "values": before_values} if current else {}
    after = {"chart_version": version, "status": "deployed", "values": desired}
    return before, after, before != after


def diff_shown(before, after, extension):
    """The diff of a release; the managed extension's values (its protected settings, which AKS hands to Helm as
    values) are compared, never shown."""
    shown = before
    if extension and before.get("values"):
        shown = dict(before, values=REDACTED)
    return dict(before=shown, after=after)


def is_wait_timeout(exc):
    """Whether helm's error is its --wait giving up."""
    text = str(getattr(exc, "problem", exc)).lower()
    return "context deadline exceeded" in text or "timed out waiting for the condition" in text


def wait_timeout_error(exc, pending, timeout, namespace):
    """helm --wait says only "context deadline exceeded": name what was not ready (``pending``), and the timeout."""
    text = "helm --wait gave up after %ss (timeout) with the release not ready: %s; helm said: %s" % (
        timeout, "; ".join(pending) or "no Deployment of namespace %s is unready now (a Job, a hook or "
                                       "a Service may be what helm waited for)"
        % namespace, exc.problem.splitlines()[-1] if exc.problem else "")
    return KueueOpsError(text, field="timeout",
                         fix="raise timeout, or look at why: kubectl -n %s get deploy,pods; kueueops.aks.kueue_verify"
                         % namespace)


def deleted_warning(counts):
    """The warning of an uninstall that deleted Kueue objects, ``{plural: count}``."""
    return "helm uninstall deleted Kueue's CRDs and with them %s" % ", ".join(
        "%d %s" % (n, k) for k, n in sorted(counts.items()))


def finalizer_patch(plural, meta):
    """For the metadata ``meta`` of a Kueue object: ``(held, body)``, ``held`` naming the finalizers that are not
    Kueue's (None if none), ``body`` the merge patch that removes Kueue's (None when there are none)."""
    finalizers = meta.get("finalizers") or []
    keep = [f for f in finalizers if not f.startswith(GROUP + "/")]
    held = None
    if keep:
        held = "%s %s%s (finalizers %s)" % (plural, meta.get("namespace", "") and meta["namespace"] + "/",
                                            meta["name"], ", ".join(keep))
    if keep == finalizers:
        return held, None
    return held, {"metadata": {"finalizers": keep or None, "resourceVersion": meta["resourceVersion"]}}


def crds_terminating_error(timeout, crds, kept):
    return KueueOpsError("Kueue CRDs still terminating after %ss: %s%s" % (
        timeout, ", ".join(c["metadata"]["name"] for c in crds),
        "; objects held by finalizers that are not Kueue's: %s" % "; ".join(kept[:10]) if kept
        else ""), field="timeout",
        fix="raise timeout, or remove those finalizers (whoever added them should)")


def namespace_terminating_error(ns, timeout, ns_obj):
    status = ns_obj.get("status") or {}
    conditions = [c.get("message") for c in status.get("conditions") or [] if c.get("status") == "True"]
    return KueueOpsError("namespace %s still terminating after %ss: %s" % (ns, timeout, "; ".join(
        conditions) or status.get("phase")), field="timeout", fix="raise timeout, or look at what holds it")


# ---------------------------------------------------------------- helm and the cluster
class KueueHelm(HelmSession):
    """kueue_helm's run on a HelmSession: install or upgrade the release, roll it back, or uninstall Kueue."""

    # ------------------------------------------------------------ helpers
    def managed_extension(self):
        found = self.cluster.items(api_path("apps/v1", "deployments"), fieldSelector="metadata.name=kueue-extension")
        return ["%s/%s" % (d["metadata"]["namespace"], d["metadata"]["name"]) for d in found]

    def check_named_objects(self):
        """Refuse a chart-value option naming a cluster object that does not exist (the chart would render it, and
        the Kueue Pods would then be refused after the release was written)."""
        for option, group_version, plural, kind, name in chart_option_objects(self.p):
            try:
                found = self.cluster.get(api_path(group_version, plural, name=name))
            except ApiException as exc:
                raise describe_kube_error(exc)
            if found is None:
                raise KueueOpsError("%s %s does not exist in this cluster" % (kind, name), field=option,
                                    fix="create the %s first (kubectl get %s lists the existing ones), or give "
                                        "one of those" % (kind, plural))

    def release(self, runner):
        return runner.list_release(self.p["release_name"], self.p["release_namespace"])

    def count_kueue_objects(self):
        counts = {}
        try:
            discovery = self.cluster.request("GET", "/apis")  # a 404 raises too, as the typed call did
        except ApiException:
            return counts
        served = [g["preferredVersion"]["version"] for g in discovery.get("groups") or [] if g["name"] == GROUP]
        if not served:
            return counts
        for plural in CRD_PLURALS:
            try:
                items = self.cluster.items(api_path("%s/%s" % (GROUP, served[0]), plural))
            except ApiException:
                continue
            if items:
                counts[plural] = len(items)
        return counts

    # ---------------------------------------------------------------- run
    def run(self):
        # Input problems first, before anything is contacted.
        file_values = check_inputs(self.p)

        def work(runner, result):
            if self.p["state"] == "absent":
                return self.absent(runner, result)
            if self.p["state"] == "rolled_back":
                return self.rolled_back(runner, result)
            return self.present(runner, result, file_values)
        return self.session(work)

    def present(self, runner, result, file_values):
        p = self.p
        try:
            extension = self.managed_extension()
        except ApiException as exc:
            raise describe_kube_error(exc)
        if extension and not p["allow_managed_extension"]:
            raise managed_extension_error(extension)
        self.login(runner)
        current = self.release(runner)
        wanted = (p["chart_version"] or "latest").strip()
        checked = None
        if wanted != "latest" and p["chart_ref"].startswith("oci://"):  # a pin: its gates checked before the registry
            checked = check_semver(wanted)
            check_catalog(checked, p.get("feature_gates"), p.get("integrations"))
        version = self.resolve_version(runner, chart_version_of(current) if current else None)
        result["chart_version"] = version
        if current:
            result["installed_version"] = chart_version_of(current)
        result["notices"] = list(self.notices)
        warning = version_warning(version)
        if warning:
            self.warnings.append(warning)
        if version != checked:  # the version resolved (latest, a non-OCI chart's): its gates and integrations
            check_catalog(version, p.get("feature_gates"), p.get("integrations"))

        default_cfg = None
        if p.get("integrations") is not None:
            default_cfg = chart_default_config_yaml(runner.show_values(
                p["chart_ref"], version if p["chart_ref"].startswith("oci://") else None, plain_http=p["plain_http"],
                tls=self.tls))
        user_values = deep_merge(file_values, p["values"] or {})
        notes = []
        values = render_values(version, p.get("feature_gates"), p.get("integrations"), user_values, default_cfg,
                               notes=notes, option_params=p)
        self.check_named_objects()
        for note in notes:
            self.notice(note)
        result["notices"] = list(self.notices)
        # What helm records as the release's user-supplied values: the files, then our rendered file.
        desired = normalize(values)
        result["release_values"] = desired

        before_values = normalize(runner.get_values(p["release_name"], p["release_namespace"])) if current else None
        before, after, changed = release_plan(current, before_values, version, desired)
        if self.diff_mode:
            result["diff"] = diff_shown(before, after, extension)
        if not changed:
            result["release"] = current
            return dict(result, changed=False)
        if self.check_mode:
            return dict(result, changed=True)
        kwargs = dict(version=version if p["chart_ref"].startswith("oci://") else None,
                      create_namespace=p["create_namespace"], wait=p["wait"], timeout=p["timeout"],
                      atomic=p["atomic"], plain_http=p["plain_http"], tls=self.tls)
        try:
            runner.upgrade_install(p["release_name"], p["release_namespace"], p["chart_ref"], values,
                                   values_files=None, **kwargs)
        except KueueOpsError as exc:
            status = None
            try:
                status = self.release(runner)
            except KueueOpsError:
                pass
            if p["wait"] and is_wait_timeout(exc):
                exc = self.wait_timed_out(exc)
            self.fail(exc, release=status, chart_version=version, changed=status is not None and status != current)
        result["release"] = self.release(runner)
        return dict(result, changed=True)

    def rolled_back(self, runner, result):
        """``helm rollback`` to ``rollback_revision``: changed when the release's newest revision was not made from
        that revision's chart version already (a rollback re-run after it succeeded changes nothing)."""
        p = self.p
        current = self.release(runner)
        if current is None:
            where = (p["release_name"], p["release_namespace"])
            raise KueueOpsError("there is no Helm release %s in %s to roll back" % where,
                                field="release_name", fix="name the release that was upgraded")
        wanted = p["rollback_revision"]
        history = dict((int(r["revision"]), r) for r in runner.history(p["release_name"], p["release_namespace"]))
        if wanted not in history:
            raise KueueOpsError("release %s has no revision %d (it has %s)" % (
                p["release_name"], wanted, ", ".join(str(r) for r in sorted(history)) or "none"),
                field="rollback_revision", fix="give a revision helm history lists")
        target = chart_version_of(history[wanted])
        newest = int(current["revision"])
        result.update(chart_version=target, rolled_back_from=chart_version_of(current), revision=newest)
        if newest == wanted or (history[newest].get("status") == "deployed" and chart_version_of(current) == target
                                and history[newest].get("description", "").startswith("Rollback to %d" % wanted)):
            result["release"] = current
            return dict(result, changed=False)
        if self.check_mode:
            return dict(result, changed=True)
        try:
            runner.rollback(p["release_name"], p["release_namespace"], wanted, wait=p["wait"], timeout=p["timeout"])
        except KueueOpsError as exc:
            if p["wait"] and is_wait_timeout(exc):
                exc = self.wait_timed_out(exc)
            self.fail(exc, release=self.release(runner), chart_version=target, changed=True)
        result["release"] = self.release(runner)
        result["revision"] = int(result["release"]["revision"])
        return dict(result, changed=True)

    def wait_timed_out(self, exc):
        """helm --wait says only "context deadline exceeded": name what was not ready, and the timeout."""
        pending = []
        try:
            names = [d["metadata"]["name"] for d in
                     self.cluster.items(api_path("apps/v1", "deployments", self.p["release_namespace"]))]
            verifier = Verifier(self.api, namespace=self.p["release_namespace"], webhook_probe=False)
            verifier.deployments_expected = lambda: names
            pending = ["%s: %s" % (c.name, c.reason) for c in verifier.check_deployments() if not c.ok]
        except Exception:  # pylint: disable=broad-except
            pass  # what helm said is still reported
        return wait_timeout_error(exc, pending, self.p["timeout"], self.p["release_namespace"])

    def absent(self, runner, result):
        p = self.p
        current = self.release(runner)
        result["chart_version"] = chart_version_of(current) if current else None
        changed = False
        ns_exists = self.namespace_exists() if p["delete_namespace"] else False
        if current:
            counts = self.count_kueue_objects()
            result["deleted_objects"] = counts
            if self.diff_mode:
                result["diff"] = dict(before={"release": current, "kueue_objects": counts}, after={})
            changed = True
            if not self.check_mode:
                # With Kueue objects left, helm's own --wait would hang: the manager goes first,
                # and nobody removes its resource-in-use finalizers, so the CRDs never finish
                # terminating. Uninstall, then clear those finalizers (what the AKS managed
                # extension's uninstall does) and wait for the CRDs to be gone.
                runner.uninstall(p["release_name"], p["release_namespace"], wait=p["wait"] and not counts,
                                 timeout=p["timeout"])
                if counts:
                    result["finalizers_cleared"] = self.clear_kueue_finalizers(p["timeout"] if p["wait"] else 0)
                    self.warnings.append(deleted_warning(counts))
        if p["delete_namespace"]:
            # An APIService whose backend goes with the namespace must go first: unavailable, it fails
            # the namespace controller's discovery and the namespace never finishes terminating.
            names = [svc["metadata"]["name"] for svc in self.apiservices()]
            result["apiservices_deleted"] = names
            if names:
                changed = True
                if not self.check_mode:
                    self.delete_apiservices(names)
        if ns_exists:
            changed = True
            if not self.check_mode:
                self.delete_namespace()
        return dict(result, changed=changed)

    def apiservices(self):
        try:
            return kueue_apiservices(self.cluster, self.p["release_namespace"])
        except ApiException as exc:
            raise describe_kube_error(exc)

    def delete_apiservices(self, names):
        """Delete the APIServices ``names`` and wait until they are gone (they carry no finalizers)."""
        for name in names:
            try:
                self.cluster.delete(api_path("apiregistration.k8s.io/v1", "apiservices", name=name))  # 404: False
            except ApiException as exc:
                raise describe_kube_error(exc)
        left, gone = poll_until(
            lambda: [svc["metadata"]["name"] for svc in self.apiservices() if svc["metadata"]["name"] in names],
            lambda left: not left, Deadline(self.p["timeout"] if self.p["wait"] else 0), 0.2)
        if not gone and self.p["wait"]:
            raise KueueOpsError("APIService(s) %s still present %ss after their deletion" % (
                ", ".join(left), self.p["timeout"]), field="timeout",
                fix="raise timeout, or look at what holds them: kubectl get apiservice %s -o yaml" % " ".join(left))

    def clear_kueue_finalizers(self, timeout):
        """Remove kueue.x-k8s.io/ finalizers from the objects of terminating Kueue CRDs until
        the CRDs are gone (or `timeout` seconds pass). Returns how many objects it patched."""
        cleared = set()
        kept = []  # objects held by finalizers that are not Kueue's (nobody here removes them)

        def terminating():
            crds = [c for c in self.cluster.items(api_path("apiextensions.k8s.io/v1", "customresourcedefinitions"))
                    if c["spec"]["group"] == GROUP]
            del kept[:]
            for crd in crds:
                version = [v["name"] for v in crd["spec"]["versions"] if v.get("storage")][0]
                plural = crd["spec"]["names"]["plural"]
                try:
                    items = self.cluster.items(api_path("%s/%s" % (GROUP, version), plural))
                except ApiException:
                    continue
                for item in items:
                    meta = item["metadata"]
                    held, body = finalizer_patch(plural, meta)
                    if held:
                        kept.append(held)
                    if body is None:
                        continue
                    try:
                        # A JSON merge patch, as the typed custom object patch sent a dict body.
                        self.cluster.patch(api_path("%s/%s" % (GROUP, version), plural, meta.get("namespace"),
                                                    meta["name"]), body)
                        cleared.add((plural, meta.get("namespace"), meta["name"]))
                    except ApiException as exc:
                        if exc.status not in (404, 409):
                            raise
            return crds

        crds, gone = poll_until(terminating, lambda crds: not crds, Deadline(timeout), 0.5)
        if not gone and timeout:
            raise crds_terminating_error(timeout, crds, kept)
        return len(cleared)

    def namespace_exists(self):
        try:
            return self.cluster.get(api_path("v1", "namespaces", name=self.p["release_namespace"])) is not None
        except ApiException as exc:
            raise describe_kube_error(exc)

    def delete_namespace(self):
        ns = self.p["release_namespace"]
        try:
            self.cluster.delete(api_path("v1", "namespaces", name=ns))  # 404: False
        except ApiException as exc:
            raise describe_kube_error(exc)
        if not self.p["wait"]:
            return
        # A watch on this one namespace, from the list's version, returns as soon as it changes or is deleted.
        try:
            watch_until(self.cluster, api_path("v1", "namespaces"), Deadline(self.p["timeout"]),
                        listed=lambda found: found, changed=lambda event: event["type"] != "DELETED",
                        rules=WatchRules(round_seconds=10), fieldSelector="metadata.name=%s" % ns)
        except ApiException as exc:
            raise describe_kube_error(exc)
        try:
            ns_obj = self.cluster.get(api_path("v1", "namespaces", name=ns))
        except ApiException as exc:
            raise describe_kube_error(exc)
        if ns_obj is None:  # gone right at the deadline
            return
        raise namespace_terminating_error(ns, self.p["timeout"], ns_obj)
