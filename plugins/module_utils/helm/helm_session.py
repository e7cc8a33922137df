# Copyright: (c) 2026, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The read side of kueue_helm's Helm session (issue 42): reach the cluster, find helm and give it the Kubernetes
options and the registry's TLS the Python client got (secrets masked), log in to the chart's registry and choose the
chart version by the release train's rules. Nothing here installs, upgrades or deletes: kueue_upgrade_plan plans
with ``HelmSession`` alone, so its payload holds no write code, and install/helm_install's ``KueueHelm`` adds the
writes on top of it.

``HelmSession`` takes the module's options as a plain dict, the few things of the AnsibleModule it uses as plain
values (``check_mode``, ``diff``, ``run_command`` for helm, ``no_log_values``) and a ``connect`` callable that
returns the Kubernetes ApiClient. ``check_semver`` / ``local_chart_version`` decide which chart version,
``helm_secrets`` what helm's output must never show.
"""

import os
import shutil
from urllib.parse import quote

from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import KueueOpsError, ModuleFailure
from ansible_collections.kueueops.aks.plugins.module_utils.common import kubernetes_support, versions
from ansible_collections.kueueops.aks.plugins.module_utils.helm.helm_runner import (
    HelmError,
    HelmRunner,
    check_helm_kube_options,
    helm_kube_env,
    registry_failure,
    registry_tls,
    split_oci_ref,
)
from ansible_collections.kueueops.aks.plugins.module_utils.kube.kube_client import check_connection, resolve_kube_options
from ansible_collections.kueueops.aks.plugins.module_utils.kube.kueue_cluster import Cluster
from ansible_collections.kueueops.aks.plugins.module_utils.kube.module import ModuleRun
from ansible_collections.kueueops.aks.plugins.module_utils.kueue import release_train
from ansible_collections.kueueops.aks.plugins.module_utils.kueue.kueue_crds import crd_state, kueue_crds


def helm_secrets(env, proxy_basic_auth=None, registry_password=None):
    """The strings helm's output must never show: the Kubernetes token of helm's environment, the proxy's basic
    auth (also as it is written in the proxy-url of helm's kubeconfig) and the registry password."""
    secrets = []
    if env.get("HELM_KUBETOKEN"):
        secrets.append(env["HELM_KUBETOKEN"])
    if proxy_basic_auth:
        password = proxy_basic_auth.partition(":")[2]
        secrets += [proxy_basic_auth, password, quote(password, safe="")]
    if registry_password:
        secrets.append(registry_password)
    return secrets


def check_semver(version):
    """The exact chart version ``version`` names (``v0.19.2`` -> ``0.19.2``), or a KueueOpsError."""
    parsed = versions.parse(version, patch=True)
    if parsed is None:
        raise KueueOpsError("%r is not a chart version" % version, field="chart_version",
                            fix="give an exact version such as 0.19.2, or latest")
    return parsed.text


def local_chart_version(ref, wanted, chart):
    """The version of the chart folder or .tgz ``ref`` (its Chart.yaml ``chart``), if ``wanted`` allows it."""
    version = str(chart.get("version", ""))
    if wanted not in ("latest", version, "v" + version):
        raise KueueOpsError("the chart at %s is version %s, not %s" % (ref, version, wanted),
                            field="chart_version", fix="use latest or %s with this chart path" % version)
    return version


class HelmSession(ModuleRun):
    """The cluster reached, helm run with its environment, the registry logged in to and the chart version chosen:
    what kueue_helm and kueue_upgrade_plan share (``session(work)`` runs ``work(runner, result)``)."""

    def __init__(self, params, connect, run_command, check_mode=False, diff=False, no_log_values=None):
        """``params``: the module's options; ``connect()``: the ApiClient (it may fail the module itself, as
        ``kube_client.get_api_client`` does); ``run_command``: ``AnsibleModule.run_command``; ``no_log_values``:
        the set Ansible masks in the output (helm's secrets join it)."""
        super().__init__(params, check_mode=check_mode, diff=diff, no_log_values=no_log_values)
        self.connect = connect
        self.run_command = run_command
        self.tls = {}
        self.api = None  # the ApiClient, once run() builds it
        self.cluster = None  # the Cluster on it (kueue_cluster)
        self.server_version = None
        self.notices = []  # what the release train says about the version chosen (release_train)

    @staticmethod
    def fail(err, **extra):
        """Report ``err`` with ``extra`` result keys and without the warnings, as fail_json on the spot did."""
        raise ModuleFailure(msg=err.message() if isinstance(err, KueueOpsError) else str(err), **extra)

    def kube_env(self, private_dir):
        # The translation the Python client got (resolve_kube_options), for the server it reached.
        return helm_kube_env(resolve_kube_options(self.p), server=self.api.configuration.host,
                             private_dir=private_dir)

    def find_helm(self):
        binary = self.p["binary_path"]
        if os.sep in binary:
            if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
                raise HelmRunner.not_found(binary)
            return binary
        found = shutil.which(binary)
        if not found:
            raise HelmRunner.not_found("PATH=%s" % os.environ.get("PATH", ""))
        return found

    def show_oci_chart(self, runner, version=None):
        """Chart.yaml of the oci:// chart_ref at ``version`` (None: the newest release, as helm resolves it)."""
        ref = self.p["chart_ref"]
        try:
            return runner.show_chart(ref, version, plain_http=self.p["plain_http"], tls=self.tls)
        except HelmError as exc:
            error = registry_failure(exc, ref, version=version, logged_in=bool(self.p.get("registry_username")),
                                     tls=any(self.tls.values()), plain_http=self.p["plain_http"])
            if error is None:  # the pinned version is not published: name the newest that is
                newest = None
                try:
                    newest = self.show_oci_chart(runner).get("version")
                except KueueOpsError as latest_error:
                    if latest_error.field != "chart_version":
                        raise  # no such repository, say: that is the error to fix
                error = KueueOpsError("version %s is not published in %s" % (version, ref), field="chart_version",
                                      fix="give a published version (the newest is %s), or latest"
                                      % (newest or "unknown: helm found no release"))
            raise error

    def resolve_version(self, runner, installed=None):
        """The chart version to install, by the release train's rules (release_train): ``installed`` is the chart
        version of the release on the cluster (None for a fresh one, and for the upgrade plan's target). A pinned
        version is checked (not known-broken; the installed minor unless ``allow_minor_change``) before the
        registry is asked; ``latest`` stays on the installed minor, or takes the newest good patch of the newest
        minor the catalog knows. The notices (a newer minor published, a minor known from its release notes only)
        join the warnings and ``self.notices``."""
        ref, wanted = self.p["chart_ref"], (self.p["chart_version"] or "latest").strip()
        if ref.startswith("oci://"):
            split_oci_ref(ref)  # a tag or digest in the reference, or no repository: refused before helm runs
            if wanted != "latest":
                version = check_semver(wanted)
                self.check_pin(version, installed)
                self.show_oci_chart(runner, version)
                return version
            newest = self.chart_version_found(self.show_oci_chart(runner))
            version = self.latest_of_train(runner, newest, installed)
        else:
            if not os.path.exists(ref):
                raise KueueOpsError("%s is neither an oci:// reference nor an existing chart path" % ref,
                                    field="chart_ref", fix="give oci://REGISTRY/REPO/kueue or a chart folder/.tgz")
            version = local_chart_version(ref, wanted, runner.show_chart(ref))
            self.check_pin(version, installed)
        self.notice(release_train.release_notes_notice(version))
        return version

    def check_pin(self, version, installed):
        """Refuse a known-broken version, and one of another minor than the installed one unless allowed; allowed,
        refuse it while a Kueue CRD still records objects stored at a version the target does not serve."""
        release_train.check_not_broken(version, "chart_version")
        if not self.p.get("allow_minor_change"):
            release_train.check_minor(installed, version, "chart_version")
        elif installed and release_train.minor_of(installed) != release_train.minor_of(version):
            error = release_train.stored_versions_error([crd_state(c) for c in kueue_crds(self.cluster)], version,
                                                        "chart_version")
            if error is not None:
                raise error

    def chart_version_found(self, chart):
        found = str(chart.get("version") or "")
        if not found:
            raise KueueOpsError("the chart helm found at %s has no version" % self.p["chart_ref"], field="chart_ref",
                                fix="point chart_ref at the Kueue chart's repository")
        return found

    def latest_of_train(self, runner, newest, installed):
        """``latest``: ``newest`` (helm's latest) when it is good and allowed, else the newest good patch of the
        installed minor, or, on a fresh cluster, of the newest minor the catalog knows that the registry has."""
        if installed and release_train.minor_of(installed):
            minor = release_train.minor_of(installed)
            self.notice(release_train.newer_minor_notice(installed, newest))
            if release_train.minor_of(newest) == minor and not release_train.broken(newest):
                return newest
            chosen = self.newest_of_minor(runner, minor)
            if chosen is None:
                raise KueueOpsError(
                    "%s publishes no good release of the installed minor %s (installed: %s)"
                    % (self.p["chart_ref"], minor, installed), field="chart_version",
                    fix="pin the installed version %s, or mirror a %s.x chart into the registry" % (installed, minor))
            return chosen
        if release_train.newest_known([newest]) == newest:
            return newest
        for minor in release_train.known_minors_newest_first():
            if release_train.is_newer_minor(minor, newest):
                continue  # a minor the catalog knows and the registry has not published yet
            chosen = self.newest_of_minor(runner, minor)
            if chosen is not None:
                self.notice(release_train.unknown_minor_notice(newest, chosen))
                return chosen
        raise KueueOpsError("%s publishes no good release of a Kueue minor this collection knows (newest: %s)"
                            % (self.p["chart_ref"], newest), field="chart_version",
                            fix="pin a version, or point chart_ref at a registry holding a known minor (%s)"
                            % ", ".join(release_train.known_minors_newest_first()))

    def notice(self, text):
        if text and text not in self.notices:
            self.notices.append(text)
            self.warnings.append(text)

    def session(self, work):
        """``work(runner, result)`` with the cluster reached, helm found and its environment set (the Kubernetes
        options translated, secrets masked); ``result`` holds the helm and server versions."""
        p = self.p
        self.tls = registry_tls(p)
        check_helm_kube_options(resolve_kube_options(p))  # what helm cannot do, before anything is contacted
        self.api = self.connect()
        self.cluster = Cluster(self.api)
        try:
            self.server_version = check_connection(self.api)
        except KueueOpsError as exc:
            self.fail(exc)
        newer = kubernetes_support.newer_than_tested_warning(self.server_version)
        if newer:
            self.warnings.append(newer)
        binary = self.find_helm()
        with HelmRunner(self.run_command, binary) as runner:
            env = self.kube_env(runner.private_dir())
            runner.env.update(env)
            for value in helm_secrets(env, (p.get("proxy_headers") or {}).get("proxy_basic_auth"),
                                      p.get("registry_password")):
                runner.add_secret(value)
            for value in runner.no_log_values:
                self.no_log_values.add(value)
            self.warnings.extend(runner.warnings)
            result = dict(helm_version=runner.version_string, server_version=self.server_version)
            return work(runner, result)

    def login(self, runner):
        """``helm registry login`` with registry_username, when it is given for an oci:// chart."""
        p = self.p
        if p.get("registry_username") and p["chart_ref"].startswith("oci://"):
            host = split_oci_ref(p["chart_ref"])[0]
            try:
                runner.registry_login(host, p["registry_username"], p["registry_password"] or "",
                                      plain_http=p["plain_http"], tls=self.tls)
            except HelmError as exc:
                raise registry_failure(exc, p["chart_ref"], logged_in=True, tls=any(self.tls.values()),
                                       plain_http=p["plain_http"]) or exc

    def newest_of_minor(self, runner, minor):
        """The newest good chart version of Kueue ``minor`` ('0.17') the oci:// chart_ref publishes, or None: helm
        resolves the range as it resolves latest (the tags, the highest match, no pre-release), less the patches the
        catalog knows as broken."""
        major, number = (int(x) for x in minor.split("."))
        spec = ">=%d.%d.0 <%d.%d.0" % (major, number, major, number + 1)
        spec += "".join(", !=%s" % bad for bad in release_train.broken_releases(minor))
        try:
            chart = runner.show_chart(self.p["chart_ref"], spec, plain_http=self.p["plain_http"], tls=self.tls)
        except HelmError as exc:
            if "could not locate a version matching" in str(getattr(exc, "problem", exc)).lower():
                return None  # helm's words (v3.19.5, v4.2.4) for a range no tag matches
            raise registry_failure(exc, self.p["chart_ref"], logged_in=bool(self.p.get("registry_username")),
                                   tls=any(self.tls.values()), plain_http=self.p["plain_http"])
        return str(chart.get("version") or "") or None
