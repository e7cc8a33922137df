"""kueue_cluster: the request it builds and how it reads responses, with a stand-in REST client (pure logic; the
layer itself is proven against the real API server by every integration test of the modules that use it)."""
from __future__ import annotations

import json

import pytest

from ansible_collections.kueueops.aks.plugins.module_utils.kube import kueue_cluster as kc
from ansible_collections.kueueops.aks.plugins.module_utils.kube.kube_import import ApiException


class Configuration:
    host = "https://127.0.0.1:6443"

    def __init__(self, token=None):
        self.token = token
        self.refreshed = 0

    def auth_settings(self):
        self.refreshed += 1  # the kubeconfig token's refresh hook runs in here
        if not self.token:
            return {}
        return {"BearerToken": {"type": "api_key", "in": "header", "key": "authorization", "value": self.token}}


class Response:
    """A kubernetes < 37 RESTResponse (read, ``data`` set) or a >= 37 one (``data`` None until ``read()``)."""

    def __init__(self, status, body, unread=False):
        self.status = status
        self.reason = "OK" if status < 300 else "Not Found"
        self._body = json.dumps(body).encode() if body is not None else b""
        self.data = None if unread else self._body
        self.headers = {}

    def read(self):
        self.data = self._body
        return self.data

    def getheaders(self):
        return {}


class Rest:
    def __init__(self, responses, unread=False, raises=False):
        self.responses = list(responses)
        self.calls = []
        self.unread = unread
        self.raises = raises  # kubernetes < 37 raises ApiException for a status outside 2xx itself

    def request(self, method, url, headers=None, body=None, _request_timeout=None):
        self.calls.append({"method": method, "url": url, "headers": headers, "body": body,
                           "timeout": _request_timeout})
        status, payload = self.responses.pop(0)
        response = Response(status, payload, unread=self.unread)
        if self.raises and not 200 <= status <= 299:
            raise ApiException(http_resp=response)
        return response


class Client:
    def __init__(self, rest, token=None):
        self.rest_client = rest
        self.configuration = Configuration(token)
        self.default_headers = {"Impersonate-User": "alice"}
        self.user_agent = "kueueops-test"


@pytest.mark.parametrize("args, expected", [
    (("v1", "namespaces"), "/api/v1/namespaces"),
    (("v1", "namespaces", None, "team-a"), "/api/v1/namespaces/team-a"),
    (("v1", "secrets", "kueue-system", "s"), "/api/v1/namespaces/kueue-system/secrets/s"),
    (("apps/v1", "deployments"), "/apis/apps/v1/deployments"),
    (("kueue.x-k8s.io/v1beta2", "localqueues", "team a", "lq/1"),
     "/apis/kueue.x-k8s.io/v1beta2/namespaces/team%20a/localqueues/lq%2F1"),
    (("kueue.x-k8s.io/v1beta2", "clusterqueues", None, "cq", "status"),
     "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/cq/status"),
])
def test_path(args, expected):
    assert kc.path(*args) == expected


def test_query_names_booleans_and_none():
    assert kc._query({"force": True, "dryRun": None, "limit": 500, "continue": "a b"}) == \
        "continue=a+b&force=true&limit=500"
    assert kc._query({}) == ""


@pytest.mark.parametrize("style", ["read", "unread"])
def test_request_url_headers_body_and_timeout(style):
    rest = Rest([(200, {"kind": "Namespace"})], unread=style == "unread")
    cluster = kc.Cluster(Client(rest, token="Bearer t0k"))
    out = cluster.create("/api/v1/namespaces", {"metadata": {"name": "x"}}, fieldManager="kueueops")
    assert out == {"kind": "Namespace"}
    call = rest.calls[0]
    assert call["method"] == "POST"
    assert call["url"] == "https://127.0.0.1:6443/api/v1/namespaces?fieldManager=kueueops"
    assert call["body"] == {"metadata": {"name": "x"}}
    assert call["timeout"] == kc.REQUEST_TIMEOUT
    assert call["headers"] == {"Impersonate-User": "alice", "Accept": "application/json",
                               "User-Agent": "kueueops-test", "Content-Type": "application/json",
                               "authorization": "Bearer t0k"}


def test_apply_is_a_server_side_apply_patch():
    rest = Rest([(200, {"ok": 1}), (200, {"ok": 2})])
    cluster = kc.Cluster(Client(rest), timeout=7)
    cluster.apply("/apis/g/v1/things/a", {"a": 1}, "mgr", fieldValidation="Strict")
    cluster.apply("/apis/g/v1/things/a", {"a": 1}, "mgr", force=True, dry_run=True)
    first, second = rest.calls
    assert first["method"] == "PATCH" and first["headers"]["Content-Type"] == kc.APPLY_PATCH
    assert first["url"].endswith("/apis/g/v1/things/a?fieldManager=mgr&fieldValidation=Strict")
    assert second["url"].endswith("?dryRun=All&fieldManager=mgr&force=true")
    assert first["timeout"] == 7


@pytest.mark.parametrize("raises", [False, True])
def test_get_and_delete_of_a_missing_object(raises):
    rest = Rest([(404, {"kind": "Status", "code": 404}), (404, {"kind": "Status", "code": 404})], raises=raises,
                unread=not raises)
    cluster = kc.Cluster(Client(rest))
    assert cluster.get("/api/v1/namespaces/none") is None
    assert cluster.delete("/api/v1/namespaces/none", propagationPolicy="Background") is False
    assert rest.calls[1]["url"].endswith("?propagationPolicy=Background")


@pytest.mark.parametrize("raises", [False, True])
def test_other_errors_are_raised_with_status_and_body(raises):
    rest = Rest([(403, {"kind": "Status", "message": "forbidden: no"})], raises=raises, unread=not raises)
    with pytest.raises(ApiException) as caught:
        kc.Cluster(Client(rest)).get("/api/v1/namespaces/x")
    assert caught.value.status == 403
    body = caught.value.body
    assert "forbidden: no" in (body.decode() if isinstance(body, bytes) else body)


def test_list_follows_every_page():
    rest = Rest([(200, {"metadata": {"continue": "p2"}, "items": [{"n": 1}]}),
                 (200, {"metadata": {"continue": "p3"}, "items": [{"n": 2}]}),
                 (200, {"metadata": {"resourceVersion": "42"}, "items": [{"n": 3}]})])
    items, rv = kc.Cluster(Client(rest)).list("/api/v1/namespaces", labelSelector="a=b")
    assert items == [{"n": 1}, {"n": 2}, {"n": 3}] and rv == "42"
    urls = [c["url"].split("?", 1)[1] for c in rest.calls]
    assert urls == ["labelSelector=a%3Db&limit=500", "continue=p2&labelSelector=a%3Db&limit=500",
                    "continue=p3&labelSelector=a%3Db&limit=500"]


def test_pages_yields_each_page_before_reading_the_next():
    rest = Rest([(200, {"metadata": {"continue": "p2"}, "items": [{"n": 1}]}),
                 (200, {"metadata": {"resourceVersion": "7"}, "items": [{"n": 2}]})])
    pages = kc.Cluster(Client(rest)).pages("/apis/g/v1/things", limit=1)
    items, meta = next(pages)
    assert items == [{"n": 1}] and meta == {"continue": "p2"} and len(rest.calls) == 1
    assert [p[0] for p in pages] == [[{"n": 2}]]
    assert rest.calls[1]["url"].endswith("?continue=p2&limit=1")


def test_replace_is_a_put_of_the_whole_object():
    rest = Rest([(200, {"metadata": {"resourceVersion": "9"}})])
    body = {"metadata": {"resourceVersion": "8"}}
    out = kc.Cluster(Client(rest)).replace("/apis/g/v1/things/a", body, fieldManager="m")
    call, = rest.calls
    assert call["method"] == "PUT" and call["url"].endswith("/apis/g/v1/things/a?fieldManager=m")
    assert call["body"] == {"metadata": {"resourceVersion": "8"}}
    assert out == {"metadata": {"resourceVersion": "9"}}


def test_served_is_none_when_the_group_version_is_not_served():
    rest = Rest([(404, None), (200, {"resources": [{"name": "clusterqueues"}, {"name": "clusterqueues/status"}]})])
    cluster = kc.Cluster(Client(rest))
    assert cluster.served("kueue.x-k8s.io/v1beta1") is None
    assert cluster.served("kueue.x-k8s.io/v1beta2") == {"clusterqueues", "clusterqueues/status"}
    assert rest.calls[1]["url"].endswith("/apis/kueue.x-k8s.io/v1beta2")


class Stream:
    def __init__(self, status, chunks):
        self.status = status
        self.reason = "OK"
        self.chunks = chunks
        self.headers = {}
        self.data = b"".join(chunks)
        self.released = False
        self.closed = False

    def stream(self, _size):
        yield from self.chunks

    def read(self):
        return self.data

    def release_conn(self):
        self.released = True

    def close(self):
        self.closed = True


class Pool:
    def __init__(self, response):
        self.response = response
        self.calls = []

    def request(self, method, url, headers=None, preload_content=True, timeout=None):
        self.calls.append({"method": method, "url": url, "headers": headers, "preload": preload_content,
                           "timeout": timeout})
        return self.response


def test_watch_decodes_events_split_across_chunks_and_sends_each_group():
    events = [{"type": "ADDED", "object": {"n": 1}}, {"type": "MODIFIED", "object": {"n": 2}}]
    text = "\n".join(json.dumps(e) for e in events).encode() + b"\n"
    response = Stream(200, [text[:7], text[7:40], text[40:]])
    rest = Rest([])
    rest.pool_manager = Pool(response)
    client = Client(rest)
    client.kueueops_impersonate_groups = ["g1", "g2"]
    got = list(kc.Cluster(client).watch("/api/v1/namespaces", "17", 5, fieldSelector="metadata.name=x"))
    assert got == events and response.released and not response.closed
    call = rest.pool_manager.calls[0]
    assert call["preload"] is False and call["timeout"] == 5 + kc.REQUEST_TIMEOUT
    assert call["url"].endswith("/api/v1/namespaces?allowWatchBookmarks=false&fieldSelector=metadata.name%3Dx"
                                "&resourceVersion=17&timeoutSeconds=5&watch=true")
    assert call["headers"].getlist("Impersonate-Group") == ["g1", "g2"]


def test_a_watch_left_half_read_closes_its_connection():
    events = b"".join(json.dumps({"type": "ADDED", "object": {"n": n}}).encode() + b"\n" for n in range(3))
    response = Stream(200, [events])
    rest = Rest([])
    rest.pool_manager = Pool(response)
    watch = kc.Cluster(Client(rest)).watch("/api/v1/namespaces", "1", 5)
    assert next(watch)["object"] == {"n": 0}
    watch.close()
    assert response.closed and response.released


def test_watch_error_event_and_status_are_raised():
    gone = json.dumps({"type": "ERROR", "object": {"code": 410, "message": "too old resource version"}}).encode()
    rest = Rest([])
    rest.pool_manager = Pool(Stream(200, [gone + b"\n"]))
    with pytest.raises(ApiException) as caught:
        list(kc.Cluster(Client(rest)).watch("/api/v1/namespaces", "1", 5))
    assert caught.value.status == 410
    rest.pool_manager = Pool(Stream(403, [b'{"kind":"Status","message":"forbidden"}']))
    with pytest.raises(ApiException) as caught:
        list(kc.Cluster(Client(rest)).watch("/api/v1/namespaces", "1", 5))
    assert caught.value.status == 403


def test_extension_running_reads_the_kueue_extension_deployment_and_takes_403_as_no():
    rest = Rest([(200, {"kind": "Deployment"}), (404, {"kind": "Status"}), (403, {"kind": "Status"}),
                 (500, {"kind": "Status"})], unread=True)
    cluster = kc.Cluster(Client(rest))
    assert cluster.extension_running("kueue-system") is True
    assert cluster.extension_running("kueue-system") is False
    assert cluster.extension_running("kueue-system") is False
    with pytest.raises(ApiException):
        cluster.extension_running("kueue-system")
    assert rest.calls[0]["url"].endswith("/apis/apps/v1/namespaces/kueue-system/deployments/kueue-extension")


@pytest.mark.parametrize("containers, expected", [
    ([{"name": "kube-rbac-proxy", "image": "p"}, {"name": "manager", "image": "m"}], "m"),
    ([{"name": "other", "image": "o"}], "o"),
    ([], None),
])
def test_manager_container(containers, expected):
    dep = {"spec": {"template": {"spec": {"containers": containers}}}}
    assert (kc.manager_container(dep) or {}).get("image") == expected
    assert kc.manager_container(None) is None
