# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Drive the helm binary (v3 >= 3.13 and v4) for kueue_helm.

``HelmRunner`` never runs a process itself: it is given a callable with the
``AnsibleModule.run_command`` signature ``(args, environ_update=None,
data=None) -> (rc, stdout, stderr)``, so argument building is unit-testable
with a fake and the integration tests use the real binary.

Secrets (registry password, Kubernetes token) never go on the argv: the
registry password reaches ``helm registry login --password-stdin`` on stdin
and a private ``HELM_REGISTRY_CONFIG`` keeps the login out of the user's helm
config; the Kubernetes token travels as ``HELM_KUBETOKEN`` in the environment.
``no_log_values`` lists every secret so the module can feed
``AnsibleModule.no_log_values``, and every error text is scrubbed of them.

Flag differences checked against helm v3.19.5 (cmd/helm) and v4.2.4 (pkg/cmd):

* v3: ``--wait`` (bool), ``--atomic``.
* v4: ``--wait`` takes a strategy (``watcher``, ``hookOnly`` [default when
  omitted], ``legacy``) so ``--wait=watcher``; ``--rollback-on-failure``
  replaces ``--atomic`` (still accepted but deprecated); ``uninstall --wait``
  is the same strategy flag.

Chart versions are resolved by helm itself, the way ``helm install`` resolves them: ``helm show chart
oci://...`` without ``--version`` lists the repository's tags and takes the highest semantic version that
is not a pre-release (helm v3.19.5 and v4.2.4 pkg/registry ``Client.ValidateReference``: ``Tags`` keeps
the tags ``semver.StrictNewVersion`` accepts, ``_`` read as ``+``, sorted newest first, then
``GetTagMatchingVersionOrConstraint(tags, "")`` applies the constraint ``*``, which excludes
pre-releases); with ``--version`` it fetches that tag. So ``latest`` honours what helm honours: the
registry config (``helm registry login``, ``HELM_REGISTRY_CONFIG``), ``--ca-file``, ``--cert-file``,
``--key-file``, ``--insecure-skip-tls-verify`` and ``--plain-http``. Helm applies the TLS flags only when
a CA, a skip-verify or both a certificate and a key are given (``newRegistryClient``), and then ignores
``--plain-http``; the module refuses those combinations before helm runs.
"""

import base64
import json
import os
import re
import shutil
import tempfile
from collections import namedtuple

from ansible_collections.kueueops.aks.plugins.module_utils.common.yaml_docs import HAS_YAML, yaml

from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import KueueOpsError, scrub
from ansible_collections.kueueops.aks.plugins.module_utils.common import versions
from ansible_collections.kueueops.aks.plugins.module_utils.kube.kube_client import (
    _check_file as check_file,
    first_current_context,
    proxy_url_with_auth,
    read_kubeconfig_file,
)

MIN_HELM = (3, 13, 0)
_NOT_FOUND = "release: not found"
_ABSENT = object()  # _release_json: the release does not exist


_HELM_UPGRADE = namedtuple('HelmUpgrade', 'version values_file values_files create_namespace wait timeout atomic '
                           'plain_http tls extra_args',
                           defaults=(None, None, None, False, True, None, False, False, None, None))


class HelmUpgrade(_HELM_UPGRADE):
    """How ``helm upgrade --install`` runs: the chart ``version``, the values files (``values_file`` last: the
    module's rendered values win over ``values_files``), whether it creates the namespace, waits (``timeout``),
    rolls back on failure (``atomic``), reaches the registry over plain HTTP or with ``tls`` (``tls_args``), and
    further ``extra_args``."""

    __slots__ = ()


class HelmError(KueueOpsError):
    """helm failed; message and stderr are already scrubbed of secrets."""

    def __init__(self, problem, field=None, fix=None, rc=None, stderr=None, cmd=None):
        super().__init__(problem, field=field, fix=fix)
        self.rc = rc
        self.stderr = stderr
        self.cmd = cmd


# ------------------------------------------------------------- registry options

REGISTRY_TLS_OPTIONS = ("registry_ca_file", "registry_cert_file", "registry_key_file",
                        "registry_insecure_skip_tls_verify")


# The options that reach the chart's OCI registry and run helm, in every module that resolves chart versions
# (kueue_helm, kueue_upgrade_plan): one spec, so the two cannot drift. Copy it (chart_argspec()) into a module's.
_CHART_ARGSPEC = dict(
    chart_ref=dict(type="str", default="oci://registry.k8s.io/kueue/charts/kueue"),
    plain_http=dict(type="bool", default=False),
    registry_username=dict(type="str"),
    registry_password=dict(type="str", no_log=True),
    registry_ca_file=dict(type="path"),
    registry_cert_file=dict(type="path"),
    registry_key_file=dict(type="path", no_log=False),
    registry_insecure_skip_tls_verify=dict(type="bool", default=False),
    binary_path=dict(type="path", default="helm"),
)


def chart_argspec():
    """A copy of the chart and registry options' argument spec."""
    return dict((name, dict(spec)) for name, spec in _CHART_ARGSPEC.items())


def registry_tls(params):
    """The registry TLS options of ``params`` (module options ``registry_ca_file``, ``registry_cert_file``,
    ``registry_key_file``, ``registry_insecure_skip_tls_verify``) as the ``tls`` dict of ``HelmRunner``,
    after the checks helm would not make: helm silently ignores a certificate without its key (and the
    other way round), and ignores ``--plain-http`` once a TLS option is given."""
    for option in REGISTRY_TLS_OPTIONS[:3]:
        check_file(params, option)
    cert, key = params.get("registry_cert_file"), params.get("registry_key_file")
    if bool(cert) != bool(key):
        given, missing = ("registry_cert_file", "registry_key_file") if cert else (
            "registry_key_file", "registry_cert_file")
        raise KueueOpsError("%s is set without %s; helm would ignore it and connect without a client "
                            "certificate" % (given, missing), field=missing,
                            fix="give both registry_cert_file and registry_key_file, or neither")
    tls_given = [o for o in REGISTRY_TLS_OPTIONS if params.get(o)]
    if params.get("plain_http") and tls_given:
        raise KueueOpsError("plain_http is set with %s: plain HTTP has no TLS to configure or skip"
                            % ", ".join(tls_given), field=tls_given[0],
                            fix="remove plain_http for an HTTPS registry, or remove %s for a plain-HTTP one"
                            % ", ".join(tls_given))
    return {"ca_file": params.get("registry_ca_file"), "cert_file": cert, "key_file": key,
            "insecure_skip_tls_verify": bool(params.get("registry_insecure_skip_tls_verify"))}


# ------------------------------------------------------------- registry errors

_AUTH_RE = re.compile(r"\b40[13]\b|unauthorized|authentication required|basic credential not found|denied")
_REGISTRY_CA_FIX = ("give the registry's CA bundle as registry_ca_file (helm's --ca-file), or set "
                    "registry_insecure_skip_tls_verify: true for a test registry only")


def registry_failure(exc, chart_ref, version=None, logged_in=False, tls=False, plain_http=False):
    """A ``KueueOpsError`` naming the option to change for a failed helm call that reached (or tried to
    reach) the OCI registry of ``chart_ref``; ``exc`` is the ``HelmError`` (its text is already scrubbed).

    ``logged_in``: the module ran ``helm registry login`` with registry_username/registry_password;
    ``tls``: a TLS option (CA, client certificate, skip verify) was given; ``plain_http``: plain_http was set.
    Returns None for a pinned ``version`` the registry does not have (the caller says what it has); unknown
    failures name chart_ref. The patterns are what helm v3.19.5 and v4.2.4 print (oras-go's errors)."""
    text = str(getattr(exc, "problem", exc))
    said = text.strip().splitlines()[-1] if text.strip() else text
    lowered = text.lower()
    where = "the registry of %s" % chart_ref

    def error(problem, field, fix):
        return HelmError("%s: helm said: %s" % (problem, said), field=field, fix=fix,
                         rc=getattr(exc, "rc", None), stderr=getattr(exc, "stderr", None))

    if "x509:" in lowered or "certificate signed by unknown authority" in lowered or (
            "tls: failed to verify" in lowered):
        return error("the TLS certificate of %s cannot be verified" % where, "registry_ca_file", _REGISTRY_CA_FIX)
    if "server gave http response to https client" in lowered:
        return error("%s answers plain HTTP, not HTTPS" % where, "plain_http",
                     "set plain_http: true for a plain-HTTP registry")
    if plain_http and ("http request to an https server" in lowered or "malformed http response" in lowered or
                       re.search(r"status code 400\b", lowered)):
        return error("%s answers HTTPS, but plain_http is set" % where, "plain_http",
                     "remove plain_http (give registry_ca_file if its CA is private)")
    if "tls: certificate required" in lowered or "tls: bad certificate" in lowered or (
            "certificate required" in lowered):
        return error("%s asks for a TLS client certificate" % where, "registry_cert_file",
                     "give registry_cert_file and registry_key_file (helm's --cert-file/--key-file)")
    if _AUTH_RE.search(lowered):
        if logged_in:
            return error("%s refused registry_username/registry_password" % where, "registry_password",
                         "check registry_username and registry_password (for ACR, a token name and its password, "
                         "or a service principal)")
        return error("%s requires credentials" % where, "registry_username",
                     "set registry_username and registry_password, or run `helm registry login` for that host "
                     "beforehand with the same HELM_REGISTRY_CONFIG (helm's registry config) as the play")
    if "name unknown" in lowered or "repository name not known" in lowered:
        return error("%s has no repository %s" % (where, chart_ref.split("/", 3)[-1]), "chart_ref",
                     "check the repository path in chart_ref (oci://<registry>/<repository>, without the tag)")
    if version and ("not found" in lowered or "manifest unknown" in lowered):
        return None  # the caller reports the unpublished version with what is published
    if "unable to locate any tags" in lowered or "could not locate a version" in lowered:
        return error("%s publishes no released (semantic version, not pre-release) chart version" % where,
                     "chart_version", "give an exact chart_version")
    if "connection refused" in lowered or "no such host" in lowered or "i/o timeout" in lowered or (
            "dial tcp" in lowered):
        return error("cannot reach %s" % where, "chart_ref",
                     "check the registry address in chart_ref%s" % ("" if tls else ", plain_http"))
    return error("helm could not read the chart %s%s" % (chart_ref, " version %s" % version if version else ""),
                 "chart_ref", "check chart_ref, the registry options (plain_http, registry_ca_file, "
                              "registry_username) and the network")


_GO_FRAME = re.compile(r"^(\s+\S+\.go:\d+|\S+\(.*\)$|goroutine \d+)")


def uninstall_reasons(stderr, limit=20):
    """The lines of a failed ``helm uninstall`` (v3 with ``--debug``) that say why: its errors and the
    API server's refusals, without the progress log and the Go stack trace."""
    keep = []
    for line in (stderr or "").splitlines():
        text = line.strip()
        if not text or _GO_FRAME.match(line):
            continue
        lowered = text.lower()
        if "[debug]" in text and not ("forbidden" in lowered or "error" in lowered or "failed" in lowered):
            continue
        if text not in keep:
            keep.append(text)
    return " ".join(keep[:limit]) or (stderr or "").strip()


def split_oci_ref(oci_ref):
    """'oci://registry.k8s.io/kueue/charts/kueue' -> ('registry.k8s.io', 'kueue/charts/kueue')."""
    ref = str(oci_ref or "")
    if not ref.startswith("oci://"):
        raise KueueOpsError("%r is not an OCI chart reference (oci://<registry>/<repository>)" % ref,
                            field="chart_ref", fix="latest can only be resolved for oci:// charts; give an exact "
                                                   "chart_version for a local chart or a classic repository")
    rest = ref[len("oci://"):].strip("/")
    if ":" in rest.rsplit("/", 1)[-1] or "@" in rest:
        raise KueueOpsError("%r carries a tag or digest; give the repository only and set chart_version" % ref,
                            field="chart_ref")
    if "/" not in rest:
        raise KueueOpsError("%r has no repository path after the registry host" % ref, field="chart_ref")
    host, repo = rest.split("/", 1)
    return host, repo


# ------------------------------------------------------------------- runner

def _duration(timeout):
    if timeout is None:
        return None
    if isinstance(timeout, (int, float)):
        return "%ds" % int(timeout)
    text = str(timeout).strip()
    return text + "s" if text.isdigit() else text


class HelmRunner:
    """Wrap one helm binary. Use as a context manager (temp files are removed on exit)."""

    def __init__(self, run_command, binary, env=None, secrets=None, version=None):
        """
        run_command: AnsibleModule.run_command-like callable.
        binary: path of helm (None when it was not found; then ``searched`` in the
            error comes from the caller via ``HelmRunner.not_found``).
        env: environment for every call (HELM_KUBE*, KUBECONFIG, ...).
        secrets: extra secret strings (e.g. a Kubernetes token in env) to scrub.
        version: skip detection (tests).
        """
        self.run_command = run_command
        self.binary = binary
        self.env = dict(env or {})
        self.no_log_values = set(s for s in (secrets or []) if s)
        for key in ("HELM_KUBETOKEN",):
            if self.env.get(key):
                self.no_log_values.add(self.env[key])
        self._tmpdir = None
        self.warnings = []
        self.version = None
        self.version_string = None
        if version is not None:
            self._set_version(version)
        else:
            self.detect_version()

    # -- lifecycle
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def close(self):
        if self._tmpdir and os.path.isdir(self._tmpdir):
            shutil.rmtree(self._tmpdir, ignore_errors=True)
        self._tmpdir = None

    def private_dir(self):
        if self._tmpdir is None:
            self._tmpdir = tempfile.mkdtemp(prefix="kueueops-helm-")  # 0700
            os.chmod(self._tmpdir, 0o700)
        return self._tmpdir

    @staticmethod
    def not_found(searched):
        return KueueOpsError("helm was not found (looked in: %s)" % searched, field="binary_path",
                             fix="install helm v3.13+ or v4 and put it on PATH, or set binary_path")

    # -- secrets
    def scrub(self, text):
        return scrub(text, self.no_log_values)

    def add_secret(self, value):
        if value:
            self.no_log_values.add(str(value))
            b64 = base64.b64encode(str(value).encode("utf-8")).decode("ascii")
            self.no_log_values.add(b64)

    # -- version
    def _set_version(self, text):
        self.version_string = str(text).strip()
        parsed = versions.parse(self.version_string, patch=True)
        if parsed is None:
            raise KueueOpsError("cannot tell the version of helm at %s: it printed %r"
                                % (self.binary, self.scrub(self.version_string)[:100]),
                                field="binary_path", fix="use helm v3.13+ or v4")
        self.version = parsed.core
        if self.version < MIN_HELM:
            raise KueueOpsError("helm at %s is %s; kueue_helm needs helm v3.13 or newer (or v4)"
                                % (self.binary, self.version_string), field="binary_path",
                                fix="upgrade helm or point binary_path at a newer one")
        if self.version[0] > 4:
            self.warnings.append("helm %s at %s is newer than the majors this module knows (3, 4); using v4 flags"
                                 % (self.version_string, self.binary))

    def detect_version(self):
        if not self.binary:
            raise self.not_found("PATH")
        rc, out, err = self._run(["version", "--template", "{{.Version}}"], check=False)
        if rc != 0:
            raise HelmError("running %s version failed (rc=%s): %s" % (self.binary, rc, self.scrub(err).strip()),
                            field="binary_path", rc=rc, stderr=self.scrub(err))
        self._set_version(out.strip())
        return self.version

    @property
    def major(self):
        return self.version[0]

    @property
    def is_v4(self):
        return self.major >= 4

    # -- execution
    def _run(self, args, data=None, check=True, env=None):
        cmd = [self.binary] + list(args)
        environ = dict(self.env)
        environ.update(env or {})
        if data is None:
            rc, out, err = self.run_command(cmd, environ_update=environ)
        else:
            rc, out, err = self.run_command(cmd, environ_update=environ, data=data)
        if check and rc != 0:
            raise HelmError("helm %s failed (rc=%s): %s" % (args[0] if args else "", rc, self.scrub(err).strip()),
                            rc=rc, stderr=self.scrub(err), cmd=self.scrub(" ".join(cmd)))
        return rc, out, err

    def _write_values(self, values):
        """Write values to a 0600 file in the private dir; caller deletes it."""
        fd, path = tempfile.mkstemp(prefix="values-", suffix=".json", dir=self.private_dir())
        try:
            os.fchmod(fd, 0o600)
            os.write(fd, json.dumps(values, sort_keys=True).encode("utf-8"))
        finally:
            os.close(fd)
        return path

    # -- registry
    @staticmethod
    def tls_args(tls, login=False):
        """helm's registry TLS flags from ``tls`` (ca_file, cert_file, key_file, insecure_skip_tls_verify);
        ``helm registry login`` names the last one ``--insecure``."""
        tls = tls or {}
        args = []
        for key, flag in (("ca_file", "--ca-file"), ("cert_file", "--cert-file"), ("key_file", "--key-file")):
            if tls.get(key):
                args += [flag, str(tls[key])]
        if tls.get("insecure_skip_tls_verify"):
            args.append("--insecure" if login else "--insecure-skip-tls-verify")
        return args

    def registry_login(self, host, username, password, plain_http=False, tls=None):
        """``helm registry login`` into a private HELM_REGISTRY_CONFIG; password on stdin."""
        self.add_secret(password)
        cfg = os.path.join(self.private_dir(), "registry.json")
        self.env["HELM_REGISTRY_CONFIG"] = cfg
        args = self.registry_login_args(host, username, plain_http=plain_http, tls=tls)
        self._run(args, data=password)
        if os.path.exists(cfg):
            os.chmod(cfg, 0o600)

    @classmethod
    def registry_login_args(cls, host, username, plain_http=False, tls=None):
        args = ["registry", "login", host, "--username", username, "--password-stdin"]
        if plain_http:
            args.append("--plain-http")
        return args + cls.tls_args(tls, login=True)

    # -- chart inspection
    @classmethod
    def _chart_args(cls, chart_ref, version, plain_http, tls=None):
        args = [chart_ref]
        if version:
            args += ["--version", str(version)]
        if plain_http:
            args.append("--plain-http")
        return args + cls.tls_args(tls)

    def show_values(self, chart_ref, version=None, plain_http=False, tls=None):
        _rc, out, _err = self._run(["show", "values"] + self._chart_args(chart_ref, version, plain_http, tls))
        return out

    def show_chart(self, chart_ref, version=None, plain_http=False, tls=None):
        """Chart.yaml of the chart; for an oci:// reference without ``version``, of the newest release helm
        resolves (see the module docstring)."""
        _rc, out, _err = self._run(["show", "chart"] + self._chart_args(chart_ref, version, plain_http, tls))
        if not HAS_YAML:
            raise KueueOpsError("PyYAML is required to read Chart.yaml", fix="pip install PyYAML")
        return yaml.safe_load(out) or {}

    # -- release inspection
    def _release_json(self, command, release, namespace):
        """What ``helm COMMAND RELEASE --output json`` prints, decoded (None for nothing), or ``_ABSENT`` when the
        release does not exist; any other failure is a HelmError."""
        args = command.split() + [release, "--namespace", namespace, "--output", "json"]
        rc, out, err = self._run(args, check=False)
        if rc != 0:
            if _NOT_FOUND in (err or ""):
                return _ABSENT
            raise HelmError("helm %s %s failed (rc=%s): %s" % (command, release, rc, self.scrub(err).strip()),
                            rc=rc, stderr=self.scrub(err))
        return json.loads(out) if out.strip() else None

    def status(self, release, namespace):
        data = self._release_json("status", release, namespace)
        return None if data is _ABSENT else data

    def list_release(self, release, namespace):
        """The release as ``helm list`` reports it (any status), or None."""
        # Explicit states instead of v3's --all, which v4 removed; both majors accept these.
        _rc, out, _err = self._run(["list", "--namespace", namespace, "--deployed", "--failed", "--pending",
                                    "--uninstalling", "--filter",
                                    "^%s$" % re.escape(release), "--output", "json"])
        items = json.loads(out or "[]") or []
        return items[0] if items else None

    def history(self, release, namespace):
        """``helm history``: every revision kept, [{revision, status, chart, app_version, description}]."""
        data = self._release_json("history", release, namespace)
        return [] if data is _ABSENT else data or []

    def get_values(self, release, namespace):
        data = self._release_json("get values", release, namespace)
        return None if data is _ABSENT else data or {}

    # -- changes
    def upgrade_args(self, release, namespace, chart_ref, options=None):
        """The argv after the binary for ``helm upgrade --install`` (pure), with ``options`` a ``HelmUpgrade``."""
        o = options or HelmUpgrade()
        args = ["upgrade", release, chart_ref, "--install", "--namespace", namespace]
        if o.version:
            args += ["--version", str(o.version)]
        if o.create_namespace:
            args.append("--create-namespace")
        for path in o.values_files or []:
            args += ["--values", path]
        if o.values_file:
            args += ["--values", o.values_file]  # last: the module's rendered values win
        if o.plain_http:
            args.append("--plain-http")
        args += self.tls_args(o.tls)
        if o.atomic:
            args.append("--rollback-on-failure" if self.is_v4 else "--atomic")
        args += self._wait_args(o.wait or o.atomic, o.timeout)
        args += list(o.extra_args or [])
        args += ["--output", "json"]
        return args

    def upgrade_install(self, release, namespace, chart_ref, values, **options):
        """Run helm upgrade --install with values from a 0600 temp file (``options``: the fields of
        ``HelmUpgrade`` but ``values_file``); returns the release JSON (or {})."""
        path = self._write_values(values or {})
        try:
            _rc, out, _err = self._run(self.upgrade_args(release, namespace, chart_ref,
                                                         HelmUpgrade(values_file=path, **options)))
        finally:
            try:
                os.remove(path)
            except OSError:
                pass
        try:
            return json.loads(out) if out and out.strip() else {}
        except ValueError:
            return {"raw": self.scrub(out)}

    def _wait_args(self, wait, timeout):
        """``--wait`` in this major's form (v4: the watcher strategy) and ``--timeout``, for the commands that change
        a release (upgrade, rollback, uninstall)."""
        args = (["--wait=watcher" if self.is_v4 else "--wait"] if wait else [])
        t = _duration(timeout)
        return args + (["--timeout", t] if t else [])

    def rollback_args(self, release, namespace, revision, wait=True, timeout=None):
        """The argv after the binary for ``helm rollback`` to ``revision`` (pure)."""
        return ["rollback", release, str(revision), "--namespace", namespace] + self._wait_args(wait, timeout)

    def rollback(self, release, namespace, revision, wait=True, timeout=None):
        """helm rollback RELEASE REVISION (a new revision holding that revision's chart, values and CRDs)."""
        rc, _out, err = self._run(self.rollback_args(release, namespace, revision, wait, timeout), check=False)
        if rc != 0:
            raise HelmError("helm rollback %s %s failed (rc=%s): %s" % (release, revision, rc,
                                                                        self.scrub(err).strip()[-800:]),
                            rc=rc, stderr=self.scrub(err))

    def uninstall_args(self, release, namespace, wait=True, timeout=None):
        args = ["uninstall", release, "--namespace", namespace]
        if not self.is_v4:
            # helm v3 says only "failed to delete release" unless --debug, which adds the API
            # server's reasons (a missing permission, say); uninstall() keeps those lines.
            args.append("--debug")
        return args + self._wait_args(wait, timeout)

    def uninstall(self, release, namespace, wait=True, timeout=None):
        """helm uninstall; returns False when the release did not exist."""
        rc, out, err = self._run(self.uninstall_args(release, namespace, wait, timeout), check=False)
        if rc != 0:
            if _NOT_FOUND in (err or ""):
                return False
            reasons = uninstall_reasons(self.scrub(err))
            raise HelmError("helm uninstall %s failed (rc=%s): %s" % (release, rc, reasons), rc=rc,
                            stderr=self.scrub(err))
        return True


def _write_private(private_dir, name, data):
    path = os.path.join(private_dir, name)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump(data, handle)
    return path


def _named(entries, name):
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and entry.get("name") == name:
            return entry
    return None


def _first_named(files, section, name):
    """(folder of the file, entry) of the first of the kubeconfig ``files`` [(folder, data)] whose ``section``
    names ``name`` (kubectl's merge: the first file naming an entry wins), or (None, None)."""
    for base, data in files:
        entry = _named(data.get(section), name)
        if entry is not None:
            return base, entry
    return None, None


def _helm_overlay(options, proxy):
    """A kubeconfig to put first in KUBECONFIG for what helm has no environment variable for: the cluster of
    the context in use with ``proxy-url`` (the proxy, or none when ``no_proxy`` exempts the server), and its
    user with the client_cert/client_key files. Each entry is copied whole, since kubectl's merge (client-go's,
    hence helm's) takes an entry from the first file that names it; relative paths are made absolute. Helm
    honours a cluster's proxy-url for the API server and has no other proxy setting of its own (HTTPS_PROXY is
    skipped for loopback servers and applies to chart registries too). Returns (overlay, context or None)."""
    kubeconfig = options.get("kubeconfig")
    if kubeconfig is None:  # host (and api_key) only: a context of its own
        cluster, user, name, context_name = {"server": options.get("host")}, {}, "kueueops", "kueueops"
    else:
        files = [(None, kubeconfig)] if isinstance(kubeconfig, dict) else [
            (os.path.dirname(os.path.abspath(path)), read_kubeconfig_file(path)) for path in kubeconfig]
        wanted = options.get("context") or (
            kubeconfig.get("current-context") if isinstance(kubeconfig, dict) else first_current_context(kubeconfig))
        context = _first_named(files, "contexts", wanted)[1]
        refs = (context or {}).get("context") or {}
        cluster_base, cluster_entry = _first_named(files, "clusters", refs.get("cluster"))
        user_base, user_entry = _first_named(files, "users", refs.get("user"))
        if cluster_entry is None or not isinstance(cluster_entry.get("cluster"), dict):
            raise KueueOpsError("the kubeconfig has no cluster for context %s" % wanted, field="context",
                                fix="use a context whose cluster the kubeconfig defines")
        cluster = _absolute(dict(cluster_entry["cluster"]), cluster_base, ("certificate-authority",))
        user = _absolute(dict((user_entry or {}).get("user") or {}), user_base,
                         ("client-certificate", "client-key", "tokenFile"))
        name, context_name = refs.get("cluster"), None
    overlay = {"apiVersion": "v1", "kind": "Config", "clusters": [], "users": []}
    if options.get("proxy"):
        cluster.pop("proxy-url", None)
        if proxy:
            cluster["proxy-url"] = proxy
        overlay["clusters"].append({"name": name, "cluster": cluster})
    if options.get("client_cert") or options.get("client_key"):
        for key, option in (("client-certificate", "client_cert"), ("client-key", "client_key")):
            if options.get(option):
                user.pop(key + "-data", None)
                user[key] = os.path.abspath(options[option])
        user_name = "kueueops" if kubeconfig is None else refs.get("user")
        if not user_name:
            raise KueueOpsError("the kubeconfig context %s names no user for client_cert" % wanted, field="client_cert",
                                fix="give the context a user, or put the certificate in the kubeconfig")
        overlay["users"].append({"name": user_name, "user": user})
    if kubeconfig is None:
        overlay["clusters"] = overlay["clusters"] or [{"name": name, "cluster": cluster}]
        overlay["contexts"] = [{"name": context_name, "context": dict(
            cluster=name, **({"user": "kueueops"} if overlay["users"] else {}))}]
    return overlay, context_name


def _absolute(entry, base, keys):
    for key in keys:
        if base and entry.get(key) and not os.path.isabs(entry[key]):
            entry[key] = os.path.join(base, entry[key])
    return entry


def check_helm_kube_options(options):
    """Refuse, naming the option, the resolved Kubernetes options helm cannot honour (before anything is
    contacted): proxy_headers other than proxy_basic_auth, a proxy or client certificate in-cluster."""
    if options.get("proxy"):
        headers = sorted(set(options.get("proxy_headers") or {}) - set(["proxy_basic_auth"]))
        if headers:
            raise KueueOpsError("helm cannot send proxy_headers %s to the proxy (only a proxy user and password, "
                                "from proxy_basic_auth)" % ", ".join(headers), field="proxy_headers",
                                fix="drop proxy_headers %s for this module, or reach the API server without "
                                    "them" % ", ".join(headers))
    if options.get("in_cluster") and (options.get("proxy") or options.get("client_cert") or options.get("client_key")):
        field = "proxy" if options.get("proxy") else "client_cert"
        raise KueueOpsError("helm cannot use %s with the in-cluster service account" % field, field=field,
                            fix="give kubeconfig, or host, with %s; or unset it" % field)


def helm_kube_env(options, server=None, private_dir=None):
    """Environment variables helm v3/v4 read for cluster access (pkg/cli/environment.go), from the Kubernetes
    options as ``kube_client.resolve_kube_options`` translated them for the Python client too.

    Uses the environment, not flags, so a token never appears on the argv. A dict kubeconfig is written
    to a 0600 file in ``private_dir``; several kubeconfig paths go to KUBECONFIG as they are (helm merges
    them as kubectl does) with the context the Python client uses. ``proxy`` (minus what ``no_proxy``
    exempts for ``server``, the API server URL) becomes the ``proxy-url`` of the context's cluster in a
    0600 kubeconfig put first (``proxy_headers.proxy_basic_auth`` its user:password), and so do
    ``client_cert``/``client_key`` for the context's user. What helm cannot do is refused naming the
    option: ``proxy_headers`` ``basic_auth``/``user_agent``, a proxy or client certificate with the
    in-cluster service account.
    """
    check_helm_kube_options(options)
    env = {}
    kubeconfig = options.get("kubeconfig")
    paths = []
    if isinstance(kubeconfig, dict):
        paths = [_write_private(private_dir, "kubeconfig", kubeconfig)]
    elif kubeconfig:
        paths = list(kubeconfig)
    if options.get("proxy") or options.get("client_cert") or options.get("client_key"):
        overlay, context = _helm_overlay(options, proxy_url_with_auth(options, server))
        paths = [_write_private(private_dir, "overlay-kubeconfig", overlay)] + paths
        if context:
            env["HELM_KUBECONTEXT"] = context
    if paths:
        env["KUBECONFIG"] = os.pathsep.join(paths)
    if options.get("context"):
        env["HELM_KUBECONTEXT"] = options["context"]
    for key, name in (("host", "HELM_KUBEAPISERVER"), ("api_key", "HELM_KUBETOKEN"), ("ca_cert", "HELM_KUBECAFILE"),
                      ("impersonate_user", "HELM_KUBEASUSER")):
        if options.get(key):
            env[name] = options[key]
    if options.get("validate_certs") is False:
        env["HELM_KUBEINSECURE_SKIP_TLS_VERIFY"] = "true"
    if options.get("impersonate_groups"):
        env["HELM_KUBEASGROUPS"] = ",".join(options["impersonate_groups"])
    return env
