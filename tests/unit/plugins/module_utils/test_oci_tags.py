"""OCI tag listing against a tiny registry on 127.0.0.1 (token challenge, pagination, redirects).

The servers bind 127.0.0.1 only and the code under test bypasses proxies for
loopback, so nothing leaves the machine.
"""

import base64
import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from ansible_collections.kueueops.aks.plugins.module_utils import helm_runner as hr
from ansible_collections.kueueops.aks.plugins.module_utils.errors import KueueOpsError

REPO = "kueue/charts/kueue"
TAGS = ["0.13.4", "latest", "0.19.2", "0.19.3-rc.0", "sha256-deadbeef.sig", "0.9.10", "0.18.6", "v-bad"]
TOKEN = "tok-XYZ"


class Registry:
    def __init__(self, users=None, page=3, redirect_to=None, auth="bearer"):
        self.users = users  # {"user": "password"} or None for anonymous pull tokens
        self.page = page
        self.redirect_to = redirect_to
        self.auth = auth
        self.log = []
        reg = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _send(self, code, body=None, headers=None):
                data = json.dumps(body).encode() if body is not None else b""
                self.send_response(code)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                url = urlsplit(self.path)
                q = parse_qs(url.query)
                authz = self.headers.get("Authorization")
                reg.log.append((url.path, url.query, authz))
                if url.path == "/token":
                    if reg.users is not None:
                        expect = ["Basic " + base64.b64encode(("%s:%s" % kv).encode()).decode()
                                  for kv in reg.users.items()]
                        if authz not in expect:
                            return self._send(401, {"errors": [{"code": "UNAUTHORIZED"}]})
                    if q.get("scope") != ["repository:%s:pull" % REPO] or q.get("service") != ["test-registry"]:
                        return self._send(400, {"errors": [{"code": "BAD_SCOPE"}]})
                    return self._send(200, {"token": TOKEN})
                if url.path != "/v2/%s/tags/list" % REPO:
                    return self._send(404, {"errors": [{"code": "NAME_UNKNOWN"}]})
                if reg.redirect_to:
                    return self._send(307, headers={"Location": reg.redirect_to + self.path})
                if reg.auth == "bearer" and authz != "Bearer " + TOKEN:
                    realm = "http://127.0.0.1:%d/token" % reg.port
                    return self._send(401, {"errors": [{"code": "UNAUTHORIZED"}]}, {
                        "WWW-Authenticate": 'Bearer realm="%s",service="test-registry",scope="repository:%s:pull"'
                                            % (realm, REPO)})
                if reg.auth == "basic":
                    good = "Basic " + base64.b64encode(b"bob:pw").decode()
                    if authz != good:
                        return self._send(401, {}, {"WWW-Authenticate": 'Basic realm="r"'})
                start = q.get("last", [None])[0]
                i = TAGS.index(start) + 1 if start else 0
                chunk = TAGS[i:i + reg.page]
                headers = {}
                if i + reg.page < len(TAGS):
                    headers["Link"] = '</v2/%s/tags/list?n=%d&last=%s>; rel="next"' % (REPO, reg.page, chunk[-1])
                return self._send(200, {"name": REPO, "tags": chunk}, headers)

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *a):
        self.server.shutdown()
        self.server.server_close()

    @property
    def ref(self):
        return "oci://127.0.0.1:%d/%s" % (self.port, REPO)


def lister(**kw):
    kw.setdefault("plain_http", True)
    kw.setdefault("timeout", 5)
    return hr.OCITagLister(**kw)


def test_anonymous_token_challenge_and_pagination():
    with Registry(users=None, page=3) as reg:
        tags = lister().list_tags(reg.ref)
    assert tags == TAGS
    assert hr.pick_latest(tags) == "0.19.2"
    paths = [p for p, _q, _a in reg.log]
    assert paths.count("/token") == 1  # token reused across pages
    assert sum(1 for p, q, _a in reg.log if p.endswith("/tags/list") and "last=" in q) == 2


def test_token_with_basic_credentials():
    with Registry(users={"bob": "pw"}) as reg:
        assert lister(username="bob", password="pw").list_tags(reg.ref) == TAGS
        with pytest.raises(KueueOpsError) as err:
            lister(username="bob", password="wrong-pw").list_tags(reg.ref)
    assert "token endpoint" in str(err.value) and "wrong-pw" not in str(err.value)


def test_plain_basic_auth_registry():
    with Registry(auth="basic", page=100) as reg:
        assert lister(username="bob", password="pw").list_tags(reg.ref) == TAGS
        with pytest.raises(KueueOpsError) as err:
            lister().list_tags(reg.ref)
    assert "requires credentials" in str(err.value)


def test_redirect_to_other_host_drops_authorization():
    with Registry(users=None, page=100) as backend:
        with Registry(auth="none", redirect_to="http://127.0.0.1:%d" % backend.port) as front:
            tags = lister(username="bob", password="pw").list_tags(front.ref)
    assert tags == TAGS
    # the backend saw a first request without Authorization, then the token it issued; never bob's basic auth
    auths = [a for p, _q, a in backend.log if p.endswith("/tags/list")]
    assert auths[0] is None and auths[-1] == "Bearer " + TOKEN


def test_runner_resolve_latest_and_no_semver():
    class Fake:
        def __call__(self, args, environ_update=None, data=None):
            return 0, "v4.2.4", ""

    r = hr.HelmRunner(Fake(), "/x/helm")
    with Registry(page=2) as reg:
        assert r.resolve_latest(reg.ref, plain_http=True) == "0.19.2"
        assert r.resolve_latest(reg.ref, plain_http=True, include_prerelease=True) == "0.19.3-rc.0"


def test_unreachable_registry_message():
    with Registry() as reg:
        port = reg.port
    with pytest.raises(KueueOpsError) as err:
        lister(timeout=2).list_tags("oci://127.0.0.1:%d/%s" % (port, REPO))
    assert "cannot reach" in str(err.value)


def test_unknown_repository():
    with Registry() as reg:
        with pytest.raises(KueueOpsError) as err:
            lister().list_tags("oci://127.0.0.1:%d/nope" % reg.port)
    assert "404" in str(err.value)
