"""Unit tests for plugins/module_utils/multikueue/multikueue_worker.py: the pure logic of kueue_multikueue_worker (the worker's
ClusterRole against Kueue's own script, input checks, the CA choice, the kubeconfig, the reuse rule). The cluster
part is tested on the local control plane by tests/integration/test_kueue_multikueue_worker.py."""
from __future__ import annotations

import base64
import datetime
import hashlib
import os
import re

import pytest
import yaml

from ansible_collections.kueueops.aks.plugins.module_utils.kueue import multikueue
from ansible_collections.kueueops.aks.plugins.module_utils.multikueue import multikueue_worker as mw
from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import KueueOpsError
from tests.unit.fakes import FakeCluster

# Kueue's site/static/examples/multikueue/create-multikueue-kubeconfig.sh at tag v0.19.2, byte for byte (Apache-2.0,
# its header kept): Kueue's site/ has a go.mod of its own, so the Go module zip hack/toolchain.sh downloads lacks it,
# and a copy of a git clone is not on every machine; the copy is checked against the blob id of the file at the tag
# (`git ls-tree v0.19.2 site/static/examples/multikueue/create-multikueue-kubeconfig.sh` in a clone of Kueue).
SCRIPT = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "data",
                      "kueue-v0.19.2-create-multikueue-kubeconfig.sh")
SCRIPT_BLOB_V0_19_2 = "72d74a91754664e41021ab5c0f26ab88a0202495"
PEM = "-----BEGIN CERTIFICATE-----\nMIIBdzCCAR2gAwIBAgIBADAKBggqhkjOPQQDAjAAMB4XDTI2\n-----END CERTIFICATE-----\n"
UTC = datetime.timezone.utc
NOW = datetime.datetime(2026, 1, 10, 12, 0, 0, tzinfo=UTC)
DAY = 86400


def _script_v0_19_2():
    """The copy of Kueue's script, after checking it is the file of the tag (git's blob id of its bytes)."""
    with open(SCRIPT, "rb") as handle:
        data = handle.read()
    assert hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest() == SCRIPT_BLOB_V0_19_2, \
        "%s is not Kueue's file at v0.19.2" % SCRIPT
    return data.decode("utf-8")


def test_the_rules_are_kueues_own_at_v0_19_2():
    """WORKER_RULES is the ClusterRole of Kueue's create-multikueue-kubeconfig.sh at v0.19.2, rule for rule, in
    order (nothing wider, nothing narrower)."""
    script = _script_v0_19_2()
    manifests = re.search(r"kubectl apply -f - <<EOF\n(.*?)\nEOF\n", script, re.S).group(1)
    docs = [d for d in yaml.safe_load_all(manifests.replace("${MULTIKUEUE_SA}", "sa").replace("${NAMESPACE}", "ns"))
            if d]
    roles = [d for d in docs if d["kind"] == "ClusterRole"]
    assert len(roles) == 1
    assert mw.WORKER_RULES == roles[0]["rules"]
    # the binding of the script is ours too: a ClusterRoleBinding of the ClusterRole to the ServiceAccount
    binding = [d for d in docs if d["kind"] == "ClusterRoleBinding"][0]
    ours = [o for o in _worker("sa", "ns").rbac_objects() if o["kind"] == "ClusterRoleBinding"][0]
    assert ours["subjects"] == binding["subjects"]
    assert ours["roleRef"] == dict(binding["roleRef"], name="sa")


def test_the_rules_hold_what_the_manager_needs_and_nothing_of_secrets():
    """Independent of Kueue's script: Jobs and Workloads are managed, queues are only read, no Secret or RBAC access."""
    def verbs(group, resource):
        return set(v for r in mw.WORKER_RULES if group in r["apiGroups"] and resource in r["resources"]
                   for v in r["verbs"])
    assert verbs("batch", "jobs") == {"create", "delete", "get", "list", "watch"}
    assert verbs("kueue.x-k8s.io", "workloads/status") == {"get", "patch", "update"}
    assert verbs("kueue.x-k8s.io", "clusterqueues") == {"get", "list", "watch"}
    assert not verbs("", "secrets") and not verbs("rbac.authorization.k8s.io", "clusterroles")
    assert not [r for r in mw.WORKER_RULES if "*" in r["verbs"] or "*" in r["resources"]]


class _Config:
    ssl_ca_cert = None
    host = "https://127.0.0.1:6443"


class _Client:
    configuration = _Config()


def _worker(sa="kueueops-multikueue", ns="kueue-system"):
    return mw.MultiKueueWorker(_Client(), {"namespace": ns, "service_account": sa, "state": "present"})


def test_objects_carry_the_labels_and_the_binding_names_the_service_account():
    objects = _worker("mk", "kueue-system").rbac_objects()
    assert [o["kind"] for o in objects] == ["ServiceAccount", "ClusterRole", "ClusterRoleBinding"]
    for obj in objects:
        assert obj["metadata"]["name"] == "mk"
        assert obj["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "kueueops",
                                             "kueueops.aks/multikueue-worker": "mk"}
    assert objects[0]["metadata"]["namespace"] == "kueue-system" and "namespace" not in objects[1]["metadata"]
    assert objects[2]["subjects"] == [{"kind": "ServiceAccount", "name": "mk", "namespace": "kueue-system"}]


# ------------------------------------------------------------------------------------------- input
@pytest.mark.parametrize("server", ["https://127.0.0.1:6443", "https://myaks-dns.hcp.westeurope.azmk8s.io:443",
                                    "https://MyAKS.Example.com", "https://[::1]:6443", "https://10.0.0.1/k8s"])
def test_servers_kueue_accepts(server):
    assert mw.server_error(server) is None


@pytest.mark.parametrize("server,words", [
    ("http://127.0.0.1:6443", "not a valid https:// URL"),
    ("127.0.0.1:6443", "not a valid https:// URL"),
    ("https://", "not a valid https:// URL"),
    ("https://1.2.3.4:99999", "not a valid https:// URL"),
    ("https://user:pw@example.com", "basic auth"),
    ("https://under_score.example.com", "neither an IP address nor a DNS name"),
    (None, "not a valid https:// URL"),
])
def test_servers_refused_name_the_field_and_the_fix(server, words):
    error = mw.server_error(server)
    assert error is not None and words in error.message()
    assert error.message().startswith("server: ") and "Fix: give the https:// URL" in error.message()


def test_cluster_name_and_token_ttl():
    assert mw.cluster_name_error("aks-worker-1") is None and mw.cluster_name_error("Worker_1.eu") is None
    for bad in ("", "-x", "a b", "x" * 254):
        assert mw.cluster_name_error(bad).message().startswith("cluster_name: ")
    assert mw.token_ttl_error(600) is None and mw.token_ttl_error(2592000) is None
    message = mw.token_ttl_error(599).message()
    assert message.startswith("token_ttl: 599 seconds") and "at least 600" in message


# ---------------------------------------------------------------------------------------------- CA
def test_ca_data_as_pem_or_base64_becomes_base64_pem():
    b64 = base64.b64encode(PEM.encode()).decode()
    assert mw.normalise_ca(PEM) == b64
    assert mw.normalise_ca(b64) == b64
    assert mw.normalise_ca(b64[:20] + "\n" + b64[20:]) == b64  # wrapped base64, as some tools print it
    for bad in ("not a certificate", base64.b64encode(b"hello").decode(), ""):
        with pytest.raises(KueueOpsError, match=r"^ca_data: is neither a PEM certificate"):
            mw.normalise_ca(bad)


def test_ca_choice_in_order_option_connection_configmap():
    other = PEM.replace("MIIB", "MIIC")
    enc = mw.normalise_ca
    assert mw.choose_ca(PEM, other, other) == (enc(PEM), "ca_data")
    assert mw.choose_ca(None, PEM, other) == (enc(PEM), "connection")
    assert mw.choose_ca(None, None, PEM) == (enc(PEM), "kube-root-ca.crt")
    assert mw.choose_ca(None, "garbage", PEM) == (enc(PEM), "kube-root-ca.crt")  # a file that is no PEM is passed over
    assert mw.choose_ca(None, None, None) == (None, None)
    with pytest.raises(KueueOpsError, match="ca_data"):
        mw.choose_ca("garbage", PEM, PEM)  # a bad option is refused, never replaced by another CA


# -------------------------------------------------------------------------------------- kubeconfig
def test_the_kubeconfig_is_one_token_user_kueue_accepts():
    config = mw.build_kubeconfig("aks-w1", "https://w1.example.com:443", "Q0E=", "mk", "the-token")
    assert config["clusters"] == [{"name": "aks-w1", "cluster": {"server": "https://w1.example.com:443",
                                                                 "certificate-authority-data": "Q0E="}}]
    assert config["users"] == [{"name": "aks-w1-mk", "user": {"token": "the-token"}}]
    assert config["contexts"] == [{"name": "aks-w1", "context": {"cluster": "aks-w1", "user": "aks-w1-mk"}}]
    assert config["current-context"] == "aks-w1"
    assert multikueue.kubeconfig_problems(mw.kubeconfig_text(config)) == []
    assert yaml.safe_load(mw.kubeconfig_text(config)) == config


def test_a_kubeconfig_kueue_refuses_is_caught():
    """The kubeconfig check above (module_utils/kueue/multikueue.py, the one owner of Kueue's rules) can fail."""
    config = mw.build_kubeconfig("c", "https://w1.example.com", "Q0E=", "mk", "t")
    config["users"][0]["user"] = {"exec": {"command": "kubelogin"}}
    config["clusters"][0]["cluster"]["insecure-skip-tls-verify"] = True
    fields = [field for field, _why in multikueue.kubeconfig_problems(mw.kubeconfig_text(config))]
    assert fields == ["clusters[0].cluster.insecure-skip-tls-verify", "users[0].user.exec"]


# ------------------------------------------------------------------------------------------ tokens
def test_parse_and_format_time():
    assert mw.parse_time("2026-01-10T12:00:00Z") == NOW
    assert mw.parse_time("2026-01-10T13:30:00+01:30") == NOW
    assert mw.parse_time("2026-01-10T12:00:00.250000Z") == NOW + datetime.timedelta(milliseconds=250)
    for bad in (None, "", "2026-01-10", "2026-13-10T12:00:00Z", "yesterday"):
        assert mw.parse_time(bad) is None
    assert mw.format_time(NOW) == "2026-01-10T12:00:00Z"
    assert mw.format_time(NOW, micro=True) == "2026-01-10T12:00:00.000000Z"


def holder(name="mk-token-abcde", created=NOW - datetime.timedelta(days=1), ttl=30 * DAY, kind="request",
           token="tok", issued=None, expires=None):
    annotations = {}
    if kind == "request":
        annotations[mw.EXPIRES_ANNOTATION] = expires if expires is not None else mw.format_time(
            created + datetime.timedelta(seconds=ttl))
    if issued:
        annotations[mw.ISSUED_ANNOTATION] = issued
    return {"metadata": {"name": name, "creationTimestamp": mw.format_time(created), "annotations": annotations},
            "type": mw.SECRET_TYPES[kind],
            "data": {"token": base64.b64encode(token.encode()).decode()} if token else {}}


def test_newest_holder_by_creation_then_issue_time_then_name():
    old = holder("mk-token-zzzzz", created=NOW - datetime.timedelta(days=2))
    new = holder("mk-token-aaaaa", created=NOW - datetime.timedelta(days=1))
    assert mw.newest_holder([new, old]) is new and mw.newest_holder([old, new]) is new
    # the same second: the microseconds this module noted decide before the random names
    a = holder("mk-token-zzzzz", created=NOW, issued="2026-01-10T12:00:00.100000Z")
    b = holder("mk-token-aaaaa", created=NOW, issued="2026-01-10T12:00:00.900000Z")
    assert mw.newest_holder([a, b]) is b
    c, d = holder("mk-token-bbbbb", created=NOW), holder("mk-token-ccccc", created=NOW)
    assert mw.newest_holder([d, c]) is d
    assert mw.newest_holder([]) is None


class Review:
    """A TokenReview stand-in that records whether it was asked."""

    def __init__(self, answer=True):
        self.answer, self.asked = answer, []

    def __call__(self, token):
        self.asked.append(token)
        return self.answer


@pytest.mark.parametrize("case,kwargs,expected,asked", [
    ("reused", {}, None, True),
    ("none yet", {"holder": None}, mw.NONE_YET, False),
    ("type changed", {"token_type": "secret"}, mw.TYPE_CHANGED, False),
    ("rotate", {"rotate": True}, mw.ROTATE, False),
    ("no token in the holder", {"holder": holder(token=None)}, mw.INVALID, False),
    ("no expiry annotation", {"holder": holder(expires="")}, mw.INVALID, False),
    ("rejected by the review", {"review": Review(False)}, mw.INVALID, True),
    # 30 days asked, 9 days left: no more than a third remains
    ("expires soon", {"holder": holder(created=NOW - datetime.timedelta(days=21))}, mw.EXPIRES_SOON, False),
    ("a third and a bit left", {"holder": holder(created=NOW - datetime.timedelta(days=19))}, None, True),
    # the API server capped 30 days to 1 day: a third of the day granted, not of the 30 asked
    ("capped, fresh", {"holder": holder(created=NOW - datetime.timedelta(hours=1), ttl=DAY)}, None, True),
    ("capped, old", {"holder": holder(created=NOW - datetime.timedelta(hours=17), ttl=DAY)}, mw.EXPIRES_SOON, False),
    ("secret tokens do not expire", {"holder": holder(kind="secret", created=NOW - datetime.timedelta(days=400)),
                                     "token_type": "secret"}, None, True),
])
def test_reuse_rule(case, kwargs, expected, asked):
    review = kwargs.pop("review", Review(True))
    args = dict(holder=holder(), token_type="request", rotate=False, token_ttl=30 * DAY, now=NOW,
                authenticated=review)
    args.update(kwargs)
    assert mw.reissue_reason(**args) == expected, case
    assert bool(review.asked) is asked, case  # the TokenReview is asked only when all else allows a reuse
    if asked:
        assert review.asked == ["tok"]


def test_errors_are_scrubbed_of_the_tokens_seen():
    worker = _worker()
    worker._remember("s3cr3t-token")

    def boom():
        raise KueueOpsError("the API server echoed s3cr3t-token and %s" % base64.b64encode(b"s3cr3t-token").decode(),
                            field="token_type", fix="not s3cr3t-token")
    worker.present = boom
    with pytest.raises(KueueOpsError) as caught:
        worker.run()
    message = caught.value.message()
    assert "s3cr3t" not in message and base64.b64encode(b"s3cr3t-token").decode() not in message
    assert message.startswith("token_type: the API server echoed VALUE_REDACTED_BY_KUEUEOPS and "
                              "VALUE_REDACTED_BY_KUEUEOPS")


def test_no_ca_anywhere_fails_before_any_write_naming_the_cluster():
    worker = mw.MultiKueueWorker(_Client(), {"namespace": "kueue-system", "service_account": "mk", "state": "present",
                                             "cluster_name": "aks-w1", "ca_data": None})
    worker.cluster = FakeCluster(writable=False)  # every object missing (no kube-root-ca.crt ConfigMap)
    with pytest.raises(KueueOpsError) as caught:
        worker.find_ca()
    message = caught.value.message()
    assert message.startswith("ca_data: cluster_name aks-w1: no CA certificate")
    assert "MultiKueue refuses insecure TLS" in message and "Fix: give ca_data" in message
    assert worker.cluster.calls == [("get", "/api/v1/namespaces/kueue-system/configmaps/kube-root-ca.crt", {})]


def test_the_cluster_role_lets_the_manager_watch_every_kind_it_watches():
    """Issue 44: the manager watches the kind of each of its integrations on every worker; a kind the ClusterRole does
    not let it list and watch keeps the worker inactive (forbidden). Kueue's script of v0.19.2 omits TrainJob (a chart
    default) and JAXJob: they come after its rules, which stay first and unchanged."""
    from ansible_collections.kueueops.aks.plugins.module_utils.kueue.multikueue import WATCHED_KINDS
    assert mw.CLUSTER_ROLE_RULES[:len(mw.WORKER_RULES)] == mw.WORKER_RULES
    for api_version, _kind, resource in WATCHED_KINDS.values():
        group = api_version.rsplit('/', 1)[0] if '/' in api_version else ''
        verbs = set(v for r in mw.CLUSTER_ROLE_RULES if group in r['apiGroups'] and resource in r['resources']
                    for v in r['verbs'])
        assert {'list', 'watch', 'get', 'create', 'delete'} <= verbs, (group, resource)
    extra = mw.CLUSTER_ROLE_RULES[len(mw.WORKER_RULES):]
    assert sorted(r['resources'][0] for r in extra) == ['jaxjobs', 'jaxjobs/status', 'trainjobs', 'trainjobs/status']
