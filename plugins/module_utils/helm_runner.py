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

``latest`` chart versions are resolved without helm (it has no tag listing):
``list_tags`` speaks the OCI distribution API, ``GET /v2/<repo>/tags/list``,
including the Bearer token challenge (registry.k8s.io, ACR, ...) and ``Link``
pagination.
"""

import base64
import json
import os
import re
import shutil
import ssl
import tempfile

from urllib import request as urllib_request
from urllib.error import HTTPError, URLError
from urllib.parse import urlencode, urljoin, urlsplit

try:
    import yaml
    HAS_YAML = True
except ImportError:  # pragma: no cover
    yaml = None
    HAS_YAML = False

from ansible_collections.kueueops.aks.plugins.module_utils.errors import KueueOpsError
from ansible_collections.kueueops.aks.plugins.module_utils.kube_client import (
    first_current_context,
    proxy_url_with_auth,
    read_kubeconfig_file,
)

MIN_HELM = (3, 13, 0)
REDACTED = "********"
_NOT_FOUND = "release: not found"
_VERSION_RE = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)(?:[-+][0-9A-Za-z.+-]*)?$")
_SEMVER_RE = re.compile(
    r"^v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?"
    r"(?:[+_]([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$")
_LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")


class HelmError(KueueOpsError):
    """helm failed; message and stderr are already scrubbed of secrets."""

    def __init__(self, problem, field=None, fix=None, rc=None, stderr=None, cmd=None):
        super().__init__(problem, field=field, fix=fix)
        self.rc = rc
        self.stderr = stderr
        self.cmd = cmd


# --------------------------------------------------------------- semver/tags

def semver_key(tag):
    """A sort key for a semver tag, or None when the tag is not semver.

    Pre-releases sort below their release (SemVer 2.0 precedence); build
    metadata (helm writes ``+`` as ``_`` in OCI tags) is ignored.
    """
    m = _SEMVER_RE.match(str(tag))
    if not m:
        return None
    major, minor, patch, pre = int(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(4)
    if pre is None:
        return (major, minor, patch, 1, ())
    ids = []
    for part in pre.split("."):
        ids.append((0, int(part), "") if part.isdigit() else (1, 0, part))
    return (major, minor, patch, 0, tuple(ids))


def pick_latest(tags, include_prerelease=False):
    """The highest semver tag (as written), ignoring non-semver tags and, unless
    asked, pre-releases. None when nothing qualifies."""
    best, best_key = None, None
    for tag in tags or []:
        key = semver_key(tag)
        if key is None or (key[3] == 0 and not include_prerelease):
            continue
        if best_key is None or key > best_key:
            best, best_key = tag, key
    return best


def check_published(version, tags, oci_ref):
    """Raise a ``KueueOpsError`` naming chart_version when ``version`` (with or without a leading ``v``) is
    not among the registry's ``tags``; helm would otherwise fail later with only "FetchReference ... not
    found". Nothing is checked when the tag list is empty (a registry that lists nothing)."""
    if not tags:
        return
    text = str(version)
    bare = (text[1:] if text.startswith("v") else text).replace("+", "_")  # helm's OCI tags write + as _
    if bare in tags or "v" + bare in tags:
        return
    published = sorted((t for t in tags if semver_key(t) is not None), key=semver_key, reverse=True)
    raise KueueOpsError("version %s is not published in %s" % (text, oci_ref), field="chart_version",
                        fix="give a published version (newest first: %s), or latest"
                        % (", ".join(published[:8]) or "none"))


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


def _parse_challenge(header):
    """'Bearer realm="x",service="y",scope="z"' -> ('bearer', {...})."""
    if not header:
        return None, {}
    scheme, _sep, rest = header.strip().partition(" ")
    params = dict((k.lower(), v) for k, v in re.findall(r'(\w+)\s*=\s*"([^"]*)"', rest))
    return scheme.lower(), params


def _next_link(header, base_url):
    # Link: </v2/x/tags/list?n=2&last=b>; rel="next"
    if not header:
        return None
    for part in header.split(","):
        m = re.match(r'\s*<([^>]+)>\s*;\s*(.*)$', part)
        if m and re.search(r'rel="?next"?', m.group(2)):
            return urljoin(base_url, m.group(1))
    return None


class _NoRedirect(urllib_request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: D401
        return None  # handled by hand so Authorization never follows to another host


class OCITagLister:
    """List an OCI repository's tags over the distribution API."""

    def __init__(self, username=None, password=None, plain_http=False, validate_certs=True, ca_path=None,
                 timeout=30, scrub=None):
        self.username = username
        self.password = password
        self.plain_http = plain_http
        self.validate_certs = validate_certs
        self.ca_path = ca_path
        self.timeout = timeout
        self._scrub = scrub or (lambda s: s)
        self._tokens = {}

    def _opener(self, url):
        handlers = [_NoRedirect()]
        host = urlsplit(url).hostname or ""
        if host in _LOOPBACK:
            handlers.append(urllib_request.ProxyHandler({}))  # never send loopback traffic to a proxy
        if url.startswith("https://"):
            ctx = ssl.create_default_context(cafile=self.ca_path) if self.ca_path else ssl.create_default_context()
            if not self.validate_certs:
                ctx.check_hostname = False
                ctx.verify_mode = ssl.CERT_NONE
            handlers.append(urllib_request.HTTPSHandler(context=ctx))
        return urllib_request.build_opener(*handlers)

    def _basic(self):
        raw = ("%s:%s" % (self.username or "", self.password or "")).encode("utf-8")
        return "Basic " + base64.b64encode(raw).decode("ascii")

    def _get(self, url, auth=None):
        req = urllib_request.Request(url, headers={"Accept": "application/json"})
        if auth:
            req.add_header("Authorization", auth)
        try:
            resp = self._opener(url).open(req, timeout=self.timeout)
            return resp.getcode(), resp.headers, resp.read()
        except HTTPError as exc:
            body = exc.read() if hasattr(exc, "read") else b""
            return exc.code, exc.headers, body
        except URLError as exc:
            raise KueueOpsError("cannot reach %s: %s" % (self._scrub(url), self._scrub(str(exc.reason))),
                                field="chart_ref", fix="check the registry address, plain_http and the network")

    def _token(self, params, repo):
        realm = params.get("realm")
        if not realm:
            raise KueueOpsError("the registry asked for a Bearer token without a realm", field="chart_ref")
        query = {}
        if params.get("service"):
            query["service"] = params["service"]
        query["scope"] = params.get("scope") or "repository:%s:pull" % repo
        key = (realm, query.get("service"), query["scope"])
        if key in self._tokens:
            return self._tokens[key]
        url = realm + ("&" if "?" in realm else "?") + urlencode(query)
        code, _h, body = self._get(url, self._basic() if (self.username or self.password) else None)
        if code != 200:
            raise KueueOpsError(
                "the registry's token endpoint %s refused a pull token (HTTP %s)" % (realm, code),
                field="registry_username" if (self.username or self.password) else "chart_ref",
                fix="check registry_username/registry_password, or give them if the repository is private")
        try:
            data = json.loads(body.decode("utf-8"))
        except ValueError:
            raise KueueOpsError("the registry's token endpoint %s returned no JSON" % realm, field="chart_ref")
        token = data.get("token") or data.get("access_token")
        if not token:
            raise KueueOpsError("the registry's token endpoint %s returned no token" % realm, field="chart_ref")
        self._tokens[key] = token
        return token

    def _fetch(self, url, repo, auth=None):
        """GET url, following redirects and answering one auth challenge per hop.

        ``auth`` is the Authorization that worked for the previous page (same host)."""
        tried_auth = False
        for _hop in range(10):
            code, headers, body = self._get(url, auth)
            if code in (301, 302, 303, 307, 308):
                new = urljoin(url, headers.get("Location", ""))
                if urlsplit(new).netloc != urlsplit(url).netloc:
                    auth, tried_auth = None, False
                url = new
                continue
            if code == 401 and not tried_auth:
                tried_auth = True
                scheme, params = _parse_challenge(headers.get("WWW-Authenticate"))
                if scheme == "bearer":
                    auth = "Bearer " + self._token(params, repo)
                    continue
                if scheme == "basic" and (self.username or self.password):
                    auth = self._basic()
                    continue
                raise KueueOpsError("the registry requires credentials for %s" % self._scrub(url),
                                    field="registry_username",
                                    fix="set registry_username and registry_password")
            if code != 200:
                text = self._scrub(body.decode("utf-8", "replace")[:300])
                raise KueueOpsError("listing tags at %s failed: HTTP %s %s" % (self._scrub(url), code, text.strip()),
                                    field="chart_ref")
            return url, headers, body, auth
        raise KueueOpsError("too many redirects listing tags at %s" % self._scrub(url), field="chart_ref")

    def list_tags(self, oci_ref):
        host, repo = split_oci_ref(oci_ref)
        scheme = "http" if self.plain_http else "https"
        url = "%s://%s/v2/%s/tags/list" % (scheme, host, repo)
        tags = []
        seen_urls = set()
        auth = None
        while url and url not in seen_urls and len(seen_urls) < 1000:
            seen_urls.add(url)
            final_url, headers, body, auth = self._fetch(url, repo, auth)
            try:
                data = json.loads(body.decode("utf-8"))
            except ValueError:
                raise KueueOpsError("the registry returned no JSON tag list at %s" % final_url, field="chart_ref")
            tags.extend(data.get("tags") or [])
            url = _next_link(headers.get("Link"), final_url)
            if url and urlsplit(url).netloc != urlsplit(final_url).netloc:
                auth = None  # never carry a token to another host
        return tags


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
        if text is None:
            return text
        text = str(text)
        for secret in sorted(self.no_log_values, key=len, reverse=True):
            if secret:
                text = text.replace(secret, REDACTED)
        return text

    def add_secret(self, value):
        if value:
            self.no_log_values.add(str(value))
            b64 = base64.b64encode(str(value).encode("utf-8")).decode("ascii")
            self.no_log_values.add(b64)

    # -- version
    def _set_version(self, text):
        self.version_string = str(text).strip()
        m = _VERSION_RE.match(self.version_string)
        if not m:
            raise KueueOpsError("cannot tell the version of helm at %s: it printed %r"
                                % (self.binary, self.scrub(self.version_string)[:100]),
                                field="binary_path", fix="use helm v3.13+ or v4")
        self.version = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
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
    def registry_login(self, host, username, password, plain_http=False, insecure=False):
        """``helm registry login`` into a private HELM_REGISTRY_CONFIG; password on stdin."""
        self.add_secret(password)
        cfg = os.path.join(self.private_dir(), "registry.json")
        self.env["HELM_REGISTRY_CONFIG"] = cfg
        args = self.registry_login_args(host, username, plain_http=plain_http, insecure=insecure)
        self._run(args, data=password)
        if os.path.exists(cfg):
            os.chmod(cfg, 0o600)

    @staticmethod
    def registry_login_args(host, username, plain_http=False, insecure=False):
        args = ["registry", "login", host, "--username", username, "--password-stdin"]
        if plain_http:
            args.append("--plain-http")
        if insecure:
            args.append("--insecure")
        return args

    def list_tags(self, oci_ref, plain_http=False, username=None, password=None, validate_certs=True,
                  ca_path=None, timeout=30):
        if password:
            self.add_secret(password)
        lister = OCITagLister(username=username, password=password, plain_http=plain_http,
                              validate_certs=validate_certs, ca_path=ca_path, timeout=timeout, scrub=self.scrub)
        return lister.list_tags(oci_ref)

    def resolve_latest(self, oci_ref, include_prerelease=False, **kwargs):
        tags = self.list_tags(oci_ref, **kwargs)
        best = pick_latest(tags, include_prerelease=include_prerelease)
        if best is None:
            raise KueueOpsError("no semver tag found in %s (tags seen: %s)" % (oci_ref, ", ".join(tags[:20]) or "none"),
                                field="chart_version", fix="give an exact chart_version")
        return best

    # -- chart inspection
    @staticmethod
    def _chart_args(chart_ref, version, plain_http):
        args = [chart_ref]
        if version:
            args += ["--version", str(version)]
        if plain_http:
            args.append("--plain-http")
        return args

    def show_values(self, chart_ref, version=None, plain_http=False):
        _rc, out, _err = self._run(["show", "values"] + self._chart_args(chart_ref, version, plain_http))
        return out

    def show_chart(self, chart_ref, version=None, plain_http=False):
        _rc, out, _err = self._run(["show", "chart"] + self._chart_args(chart_ref, version, plain_http))
        if not HAS_YAML:
            raise KueueOpsError("PyYAML is required to read Chart.yaml", fix="pip install PyYAML")
        return yaml.safe_load(out) or {}

    # -- release inspection
    def status(self, release, namespace):
        rc, out, err = self._run(["status", release, "--namespace", namespace, "--output", "json"], check=False)
        if rc != 0:
            if _NOT_FOUND in (err or ""):
                return None
            raise HelmError("helm status %s failed (rc=%s): %s" % (release, rc, self.scrub(err).strip()),
                            rc=rc, stderr=self.scrub(err))
        return json.loads(out) if out.strip() else None

    def list_release(self, release, namespace):
        """The release as ``helm list`` reports it (any status), or None."""
        # Explicit states instead of v3's --all, which v4 removed; both majors accept these.
        _rc, out, _err = self._run(["list", "--namespace", namespace, "--deployed", "--failed", "--pending",
                                    "--uninstalling", "--filter",
                                    "^%s$" % re.escape(release), "--output", "json"])
        items = json.loads(out or "[]") or []
        return items[0] if items else None

    def get_values(self, release, namespace):
        rc, out, err = self._run(["get", "values", release, "--namespace", namespace, "--output", "json"],
                                 check=False)
        if rc != 0:
            if _NOT_FOUND in (err or ""):
                return None
            raise HelmError("helm get values %s failed (rc=%s): %s" % (release, rc, self.scrub(err).strip()),
                            rc=rc, stderr=self.scrub(err))
        data = json.loads(out) if out.strip() else None
        return data or {}

    # -- changes
    def upgrade_args(self, release, namespace, chart_ref, version=None, values_file=None, values_files=None,
                     create_namespace=False, wait=True, timeout=None, atomic=False, plain_http=False,
                     extra_args=None):
        """The argv after the binary for ``helm upgrade --install`` (pure)."""
        args = ["upgrade", release, chart_ref, "--install", "--namespace", namespace]
        if version:
            args += ["--version", str(version)]
        if create_namespace:
            args.append("--create-namespace")
        for path in values_files or []:
            args += ["--values", path]
        if values_file:
            args += ["--values", values_file]  # last: the module's rendered values win
        if plain_http:
            args.append("--plain-http")
        if self.is_v4:
            if atomic:
                args.append("--rollback-on-failure")
            if wait or atomic:
                args.append("--wait=watcher")
        else:
            if atomic:
                args.append("--atomic")
            if wait or atomic:
                args.append("--wait")
        t = _duration(timeout)
        if t:
            args += ["--timeout", t]
        args += list(extra_args or [])
        args += ["--output", "json"]
        return args

    def upgrade_install(self, release, namespace, chart_ref, values, **kwargs):
        """Run helm upgrade --install with values from a 0600 temp file; returns the release JSON (or {})."""
        path = self._write_values(values or {})
        try:
            _rc, out, _err = self._run(self.upgrade_args(release, namespace, chart_ref, values_file=path, **kwargs))
        finally:
            try:
                os.remove(path)
            except OSError:
                pass
        try:
            return json.loads(out) if out and out.strip() else {}
        except ValueError:
            return {"raw": self.scrub(out)}

    def uninstall_args(self, release, namespace, wait=True, timeout=None):
        args = ["uninstall", release, "--namespace", namespace]
        if not self.is_v4:
            # helm v3 says only "failed to delete release" unless --debug, which adds the API
            # server's reasons (a missing permission, say); uninstall() keeps those lines.
            args.append("--debug")
        if wait:
            args.append("--wait=watcher" if self.is_v4 else "--wait")
        t = _duration(timeout)
        if t:
            args += ["--timeout", t]
        return args

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
        cluster, user, name, context_name, base = {"server": options.get("host")}, {}, "kueueops", "kueueops", None
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
