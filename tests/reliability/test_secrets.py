"""Secrets never leave the collection (issue 8): every entry point run at -vvv (with --diff) with recognisable fake
secrets, and everything a run leaves behind grepped for them.

Secrets:
* the Azure client secret of the ARM emulator (random per start, prefixed ``kueueops-FAKE-arm-secret-``), in the
  environment of every run and given as ``kueue_azure_secret`` on the extension path;
* protected settings of the managed extension (``kueue_extension_configuration_protected_settings``), one of them
  named like an API key;
* the kubeconfig of the Helm-path runs: a client certificate signed by the cluster CA (its key) AND the bearer token
  of a ServiceAccount (TokenRequest API) with cluster-admin; every request of those runs carries both;
* the kubeconfig the extension path fetches from ARM (its client key), as a fact and as a file;
* the worker kubeconfigs of a MultiKueue Secret (``kueue_secrets``; an API-key-like bearer token), rotated once.

Runs (one Kueue install reused; ansible-runner, as AWX launches a job, or ansible-playbook with the JSON callback):
site.yml on Helm (runner), configure_queues.yml with MultiKueue Secrets (runner), configure_queues.yml rotating the
Secret (JSON), status.yml with the drift report of the first declaration, whose Secret value the cluster no longer
holds (JSON), uninstall.yml with a backup (runner), site.yml on the extension path via the ARM
emulator (runner, credentials from ARM), restore.yml of that backup on the extension (runner), kueue_extension
fetching the credentials to a file (JSON), migrate.yml extension -> Helm (JSON).

Grepped, for every secret's full value AND its distinctive pieces (PEM lines, the base64 of the client key, the
three segments of the JWT, the base64 of each value at every alignment): stdout and stderr (runner's terminal merges
them into its stdout artifact), every ansible-runner job
event's JSON and every artifact file (its ``command`` record is the job's input and holds the environment, as AWX's
own, and is left out), the jsonfile fact cache of every run, the JSON callback's output (registered results), every
file of every backup (but the MultiKueue Secret, which a backup with include_secrets exists to keep; the test checks
it is there). Backups (folders 0700, files 0600) and the fetched kubeconfig (0600) are checked too.

test_checker_catches_leaks proves the grep can fail: a throwaway play prints the secrets (raw, base64, inside a
JSON blob, as a fact) through both launchers, and the checker reports each place.
"""
from __future__ import annotations

import base64
import glob
import json
import os
import shutil
import stat
import sys
import time

import ansible_runner
import pytest
import yaml
from kubernetes import client

from tests.integration.ansible import COLLECTIONS, REPO, run_playbook
from tests.harness import pki
from tests.integration.kubeutil import reset_kueue
from tests.reliability import rbac

BIN = os.path.dirname(sys.executable)
PLAYBOOKS = os.path.join(REPO, "playbooks")
CONFIG = yaml.safe_load(open(os.path.join(PLAYBOOKS, "vars", "queues.yml")))["kueue_resources"]
TEAMS = sorted({o["metadata"]["namespace"] for o in CONFIG if o["kind"] == "LocalQueue"})
V2 = "kueue.x-k8s.io/v1beta2"
SA = "kueueops-secrets-test"
PROTECTED = {"telemetry.apiKey": "kueueops-FAKE-apikey-0f9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c",
             "controllerManager.webhookToken": "kueueops-FAKE-protected-7a6b5c4d3e2f1a0b9c8d"}
WORKER_KEYS = ["kueueops-FAKE-worker-apikey-1b2c3d4e5f60718293a4b5c6d7e8f9", "kueueops-FAKE-worker-apikey-rotated-99aa88bb77cc"]


# ------------------------------------------------------------------ the checker
def _b64_pieces(value: str | bytes, chunk: int = 0) -> list[str]:
    """What `value` looks like inside any base64 stream: its encoding from each of the three byte alignments,
    without the last 4 characters (they depend on what follows); cut in `chunk`-character pieces when given (a
    long value spans PEM lines)."""
    raw = value.encode() if isinstance(value, str) else value
    out = []
    for shift in range(3):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            enc = encode(raw[shift:]).decode().rstrip("=")[:-4]
            if chunk:
                out += [enc[i:i + chunk] for i in range(0, len(enc) - chunk + 1, chunk)]
            elif len(enc) >= 16:
                out.append(enc)
    return out


class Secrets:
    """Named secret values and the needles that find them, whole, in part or encoded."""

    def __init__(self):
        self.needles: dict[str, str] = {}

    def add(self, name: str, value: str, pieces: list[str] | tuple = ()) -> None:
        assert len(value) >= 16, name
        self.needles[name] = value
        self.needles[name + " (middle)"] = value[len(value) // 2 - 8: len(value) // 2 + 8]
        for i, piece in enumerate(pieces):
            assert len(piece) >= 16, (name, piece)
            self.needles["%s (piece %d)" % (name, i)] = piece
        for i, piece in enumerate(_b64_pieces(value)):
            self.needles["%s (base64 %d)" % (name, i)] = piece

    def add_token(self, name: str, token: str) -> None:
        """A JWT: each of its segments is a secret on its own (the signature and payload most of all)."""
        self.add(name, token, [seg for seg in token.split(".") if len(seg) >= 16])

    def add_key_data(self, name: str, key_data_b64: str, public: list[str]) -> None:
        """A kubeconfig's client-key-data (the base64 of a PEM key): the whole value, the PEM's body lines, and the
        key's private number (EC scalar, RSA exponent) as it reads inside the PEM's base64 and inside base64 of the
        PEM. A key file also holds the public key, which its certificate (`public`, printed legitimately, e.g. in a
        module's invocation) holds as well: pieces found in `public` are left out."""
        from cryptography.hazmat.primitives.serialization import load_pem_private_key

        pem = base64.b64decode(key_data_b64)
        key = load_pem_private_key(pem, password=None)
        numbers = key.private_numbers()
        secret = getattr(numbers, "private_value", None) or numbers.d
        secret_bytes = secret.to_bytes((secret.bit_length() + 7) // 8, "big")
        lines = [line for line in pem.decode().splitlines() if line and not line.startswith("-----")]
        pieces = [line for line in lines if len(line) >= 16] + _b64_pieces(secret_bytes, chunk=20)
        # Inside base64 of the PEM (a Secret's data, a kubeconfig's client-key-data): the PEM line holding the
        # start of the private number, encoded at each alignment.
        scalar = _b64_pieces(secret_bytes, chunk=20)
        holding = [line for line in lines if any(piece in line for piece in scalar)]
        for line in holding:
            pieces += _b64_pieces(line, chunk=20)
        assert holding, "the private number of %s was not found in its PEM" % name
        public_text = "\n".join(public)
        self.add(name, key_data_b64, [piece for piece in pieces if piece not in public_text])
        if self.needles[name + " (middle)"] in public_text:
            del self.needles[name + " (middle)"]

    def without(self, prefix: str) -> "Secrets":
        other = Secrets()
        other.needles = {k: v for k, v in self.needles.items() if not k.startswith(prefix)}
        return other

    def find(self, text: str, where: str) -> list[str]:
        # JSON and YAML may escape "/" or fold lines; look in the text as it is and unescaped.
        variants = [text, text.replace("\\/", "/"), text.replace("\\n", "\n")]
        return ["%s in %s" % (name, where) for name, needle in self.needles.items()
                if any(needle in t for t in variants)]


def read_tree(folder: str, skip=()) -> dict[str, str]:
    out = {}
    for root, _dirs, files in os.walk(folder):
        for fname in files:
            path = os.path.join(root, fname)
            if os.path.relpath(path, folder) in skip:
                continue
            with open(path, errors="replace") as handle:
                out[path] = handle.read()
    return out


class Record:
    """What one run left behind, by place: stdout, stderr, events, artifacts, fact cache, JSON results."""

    def __init__(self, name: str, rc: int, places: dict[str, str], summary: str):
        self.name, self.rc, self.places, self.summary = name, rc, places, summary

    def leaks(self, secrets: Secrets) -> list[str]:
        out = []
        for where, text in self.places.items():
            out += secrets.find(text, "%s: %s" % (self.name, where))
        return out


# ------------------------------------------------------------------ the launchers
def runner_job(workdir, name: str, playbook: str, inventory: dict, extravars: dict | None = None,
               env: dict | None = None, cmdline: str = "-vvv --diff") -> Record:
    """playbooks/<playbook> as AWX runs a job: ansible-runner, a private data folder, the jsonfile fact cache in
    the artifacts (runner's default), every event kept."""
    pdd = os.path.join(str(workdir), "runner-" + name)
    os.makedirs(os.path.join(pdd, "inventory"))
    shutil.copytree(PLAYBOOKS, os.path.join(pdd, "project", "playbooks"), ignore=shutil.ignore_patterns("backups"))
    with open(os.path.join(pdd, "inventory", "hosts.yml"), "w") as handle:
        yaml.safe_dump(inventory, handle)
    envvars = {"ANSIBLE_COLLECTIONS_PATH": COLLECTIONS, "ANSIBLE_NOCOLOR": "1",
               "PATH": BIN + os.pathsep + os.environ["PATH"], "KUBECONFIG": "/nonexistent/kubeconfig",
               "K8S_AUTH_KUBECONFIG": ""}
    envvars.update(env or {})
    run = ansible_runner.run(private_data_dir=pdd, project_dir=os.path.join(pdd, "project"),
                             playbook=playbook if playbook.startswith("playbooks/") else "playbooks/" + playbook,
                             extravars=extravars or {}, envvars=envvars, cmdline=cmdline, quiet=True,
                             timeout=900)
    events = list(run.events)
    places = {"event %d (%s)" % (i, e.get("event")): json.dumps(e) for i, e in enumerate(events)}
    # Every artifact: stdout, stderr, job_events/*.json, fact_cache/*, rc, status. Not `command`: the job's input
    # (argv, cwd and the whole environment, AZURE_SECRET included), which AWX keeps encrypted.
    artifacts = read_tree(run.config.artifact_dir, skip=("command",))
    assert os.path.isdir(os.path.join(run.config.artifact_dir, "fact_cache")), "no jsonfile fact cache in %s" % name
    places.update(("artifact " + os.path.relpath(p, pdd), t) for p, t in artifacts.items())
    stdout = "".join(places.get(k, "") for k in places if k.endswith("/stdout"))
    failed = [e["event_data"].get("res", {}).get("msg") for e in events if e.get("event") == "runner_on_failed"
              and not e["event_data"].get("ignore_errors")]
    return Record(name, run.rc, places, "%s: status %s rc %s, failures %s\n%s" % (
        name, run.status, run.rc, failed, stdout[-4000:]))


def json_run(workdir, name: str, playbook, inventory: dict, extravars: dict | None = None, env: dict | None = None,
             diff: bool = True) -> Record:
    """ansible-playbook -vvv --diff with the JSON callback (tests/integration/callback_plugins/test_json: every
    registered result) and a jsonfile fact cache of its own."""
    folder = os.path.join(str(workdir), "json-" + name)
    cache = os.path.join(folder, "fact_cache")
    os.makedirs(cache)
    inv = os.path.join(folder, "hosts.yml")
    with open(inv, "w") as handle:
        yaml.safe_dump(inventory, handle)
    full_env = {"ANSIBLE_CACHE_PLUGIN": "jsonfile", "ANSIBLE_CACHE_PLUGIN_CONNECTION": cache,
                "KUBECONFIG": "/nonexistent/kubeconfig", "K8S_AUTH_KUBECONFIG": "",
                # ansible-core's default (run_playbook pipelines): the module's arguments in a temporary file
                "ANSIBLE_PIPELINING": "0"}
    full_env.update(env or {})
    if isinstance(playbook, str) and not os.path.isabs(playbook):
        playbook = os.path.join(PLAYBOOKS, playbook)
    res = run_playbook(playbook, extravars=extravars, inventory=inv, env=full_env, verbosity=3, diff=diff)
    for fname, text in (("stdout.json", res.stdout), ("stderr", res.stderr)):  # kept for a look when a leak is found
        with open(os.path.join(folder, fname), "w") as handle:
            handle.write(text)
    places = {"stdout (JSON callback)": res.stdout, "stderr": res.stderr}
    places.update(("fact cache " + os.path.basename(p), t) for p, t in read_tree(cache).items())
    return Record(name, res.rc, places, "%s: rc %s, failures %s\n%s" % (
        name, res.rc, res.failure_messages()[:3], res.stdout[-4000:]))


# ------------------------------------------------------------------ the checker can fail
def test_checker_catches_leaks(tmp_path):
    """A throwaway play that prints secrets (raw, base64, in a JSON blob, cached as a fact, in a registered result):
    the checker finds each in runner's events, stdout, fact cache, and in the JSON callback's output."""
    token = "eyJhbGciOiJSUzI1NiIsImtpZCI6ImZha2UifQ.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6ZmFrZSJ9.c2lnbmF0dXJlLW9m" \
            "LWEtZmFrZS10b2tlbi0xMjM0NTY3ODkw"
    secrets = Secrets()
    secrets.add("client secret", "kueueops-FAKE-arm-secret-selftest-0123456789")
    secrets.add_token("token", token)
    secrets.add("api key", PROTECTED["telemetry.apiKey"])
    plays = [{"name": "Leak", "hosts": "all", "gather_facts": False, "tasks": [
        {"name": "Print the client secret", "ansible.builtin.debug": {"msg": "secret={{ s }}"},
         "vars": {"s": "kueueops-FAKE-arm-secret-selftest-0123456789"}},
        {"name": "Cache a fact holding the token", "ansible.builtin.set_fact": {"leaked": "{{ t }}", "cacheable": True},
         "vars": {"t": token}},
        {"name": "A registered result with the API key base64-encoded in a JSON blob",
         "ansible.builtin.command": {"argv": ["echo", "{{ {'data': {'k': ('x' + key) | b64encode}} | to_json }}"]},
         "vars": {"key": PROTECTED["telemetry.apiKey"]}, "changed_when": False}]}]
    host = {"all": {"hosts": {"local": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}
    # The same play as a file for runner (its project folder) and as a list for the JSON launcher.
    playfile = tmp_path / "leak.yml"
    playfile.write_text(yaml.safe_dump(plays, sort_keys=False))
    pdd = tmp_path / "runner-leak"
    (pdd / "project").mkdir(parents=True)
    shutil.copy(playfile, pdd / "project" / "leak.yml")
    (pdd / "inventory").mkdir()
    (pdd / "inventory" / "hosts.yml").write_text(yaml.safe_dump(host))
    run = ansible_runner.run(private_data_dir=str(pdd), playbook="leak.yml", cmdline="-vvv --diff", quiet=True,
                             envvars={"PATH": BIN + os.pathsep + os.environ["PATH"]})
    assert run.rc == 0, run.stdout.read()[-3000:]
    events = {"event %d" % i: json.dumps(e) for i, e in enumerate(run.events)}
    artifacts = read_tree(run.config.artifact_dir, skip=("command",))
    found = Record("runner", 0, dict(events, **artifacts), "").leaks(secrets)
    assert any(f.startswith("client secret in runner: event") for f in found), found
    assert any(f.startswith("token in runner: event") for f in found), found
    assert any(f.startswith("token in runner: ") and "/fact_cache/" in f for f in found), found
    assert any(f.startswith("token (piece 2) in") for f in found), found  # a JWT segment on its own
    assert any(f.startswith("client secret in runner: ") and f.endswith("/stdout") for f in found), found
    assert any(f.startswith("api key (base64") for f in found), found  # encoded, at an unknown alignment
    assert not any(f.startswith("api key in") for f in found), found  # (only the encoded form was printed)
    rec = json_run(tmp_path, "leak", plays, host)
    assert rec.rc == 0, rec.summary
    found = rec.leaks(secrets)
    assert any(f.startswith("client secret in leak: stdout") for f in found), found
    assert any(f.startswith("token in leak: fact cache") for f in found), found
    assert any(f.startswith("api key (base64") and "stdout" in f for f in found), found
    # A client key: found as PEM, as base64 of the PEM, in part, and re-encoded from another offset; its
    # certificate (which shares the public key) is not reported.
    crt, key = pki.CA(str(tmp_path / "pki")).issue(str(tmp_path / "user"), "user", client=True)
    pem, cert_pem = open(key).read(), open(crt).read()
    key_data, cert_data = base64.b64encode(pem.encode()).decode(), base64.b64encode(cert_pem.encode()).decode()
    keys = Secrets()
    keys.add_key_data("key", key_data, _public(cert_data))
    assert keys.find(json.dumps({"crt": cert_data, "pem": cert_pem}), "cert") == []
    assert keys.find(json.dumps({"key": pem}), "pem")
    assert keys.find("client-key-data: " + key_data[12:-12], "part")
    assert keys.find(base64.b64encode(b"x" + pem.encode()[27:]).decode(), "re-encoded")
    # And an unrelated value is not reported.
    assert Secrets().find("nothing here", "x") == []


# ------------------------------------------------------------------ the scenario
def _helm_release_present(kube) -> bool:
    return bool(client.CoreV1Api(kube).list_secret_for_all_namespaces(label_selector="owner=helm,name=kueue").items)


def _reset(kube):
    reset_kueue(kube, TEAMS, timeout=240)


def _token_kubeconfig(cluster, kube, path: str) -> dict:
    """A kubeconfig whose user has a client certificate (CN kueueops-secrets-user, O system:masters, signed by the
    cluster CA) and the bearer token of ServiceAccount kueueops-secrets-test (cluster-admin, TokenRequest API): each
    request carries both. Returns {'key_data': ..., 'token': ...}."""
    core = client.CoreV1Api(kube)
    try:
        core.create_namespaced_service_account("default", {"metadata": {"name": SA}})
    except client.exceptions.ApiException as exc:
        if exc.status != 409:
            raise
    rbac.apply(cluster, [{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                          "metadata": {"name": SA}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                                                                "kind": "ClusterRole", "name": "cluster-admin"},
                          "subjects": [{"kind": "ServiceAccount", "name": SA, "namespace": "default"}]}])
    token = core.create_namespaced_service_account_token(SA, "default", {
        "spec": {"expirationSeconds": 3600}}).status.token
    cfg = yaml.safe_load(open(rbac.make_user(cluster, "kueueops-secrets-user", "system:masters")))
    cfg["users"][0]["user"]["token"] = token
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        yaml.safe_dump(cfg, handle)
    user = cfg["users"][0]["user"]
    return {"key_data": user["client-key-data"], "token": token,
            "public": _public(user["client-certificate-data"], cfg["clusters"][0]["cluster"]["certificate-authority-data"])}


def _worker_kubeconfig(api_key: str) -> str:
    return ("apiVersion: v1\nkind: Config\nclusters:\n- name: w\n  cluster: {server: 'https://127.0.0.1:1'}\n"
            "users:\n- name: w\n  user: {token: %s}\ncontexts:\n- name: w\n  context: {cluster: w, user: w}\n"
            "current-context: w\n" % api_key)


MULTIKUEUE = [
    {"apiVersion": V2, "kind": "MultiKueueCluster", "metadata": {"name": "sec-worker"},
     "spec": {"clusterSource": {"kubeConfig": {"location": "sec-worker", "locationType": "Secret"}}}},
    {"apiVersion": V2, "kind": "MultiKueueConfig", "metadata": {"name": "sec-workers"}, "spec": {"clusters": ["sec-worker"]}},
    {"apiVersion": V2, "kind": "AdmissionCheck", "metadata": {"name": "sec-dispatch"},
     "spec": {"controllerName": "kueue.x-k8s.io/multikueue",
              "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "sec-workers"}}},
]


def _worker_secret(api_key: str, encoded: bool) -> dict:
    body = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "sec-worker", "namespace": "kueue-system"},
            "type": "Opaque"}
    if encoded:
        body["data"] = {"kubeconfig": base64.b64encode(_worker_kubeconfig(api_key).encode()).decode()}
    else:
        body["stringData"] = {"kubeconfig": _worker_kubeconfig(api_key)}
    return body


def _host(**hostvars) -> dict:
    host = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    host.update(hostvars)
    return {"kueue_clusters": {"hosts": {"local": host}}}


def _assert_private(path: str) -> list[str]:
    """Folders 0700 and files 0600 under `path` (and `path` itself); returns what is not."""
    bad = []
    mode = stat.S_IMODE(os.stat(path).st_mode)
    if os.path.isdir(path):
        if mode != 0o700:
            bad.append("%s %o" % (path, mode))
        for root, dirs, files in os.walk(path):
            for name in dirs:
                m = stat.S_IMODE(os.stat(os.path.join(root, name)).st_mode)
                if m != 0o700:
                    bad.append("%s %o" % (os.path.join(root, name), m))
            for name in files:
                m = stat.S_IMODE(os.stat(os.path.join(root, name)).st_mode)
                if m != 0o600:
                    bad.append("%s %o" % (os.path.join(root, name), m))
    elif mode != 0o600:
        bad.append("%s %o" % (path, mode))
    return bad


def _public(*datas: str) -> list[str]:
    """Certificates as a kubeconfig holds them (base64 of PEM) and as PEM: what may be printed."""
    return list(datas) + [base64.b64decode(d).decode() for d in datas]


def _fetched_keys(arm) -> list[tuple[str, list[str]]]:
    """(client-key-data, its certificate and the cluster CA) of every kubeconfig the emulator issued."""
    with open(os.path.join(arm.folder, "pki", "ca.crt"), "rb") as handle:
        ca = base64.b64encode(handle.read()).decode()
    out = []
    for path in glob.glob(os.path.join(arm.dir, "users", "clusterUser_*.key")):
        with open(path, "rb") as key, open(path[:-4] + ".crt", "rb") as crt:
            out.append((base64.b64encode(key.read()).decode(), _public(base64.b64encode(crt.read()).decode(), ca)))
    return out


@pytest.fixture(scope="module")
def scenario(cluster, kube, arm, tmp_path_factory):
    _reset(kube)
    yield kube
    _reset(kube)
    core = client.CoreV1Api(kube)
    for call, args in ((core.delete_namespaced_service_account, (SA, "default")),
                       (client.RbacAuthorizationV1Api(kube).delete_cluster_role_binding, (SA,))):
        try:
            call(*args)
        except client.exceptions.ApiException as exc:
            if exc.status != 404:
                raise


def test_no_secret_leaves_any_entry_point(scenario, cluster, arm, tmp_path):
    kube = scenario
    started = time.time()
    work = tmp_path
    kubeconfig = str(work / "token-and-key.kubeconfig")
    creds = _token_kubeconfig(cluster, kube, kubeconfig)
    secrets = Secrets()
    secrets.add("azure client secret", os.environ["AZURE_SECRET"])
    assert os.environ["AZURE_SECRET"].startswith("kueueops-FAKE-arm-secret-"), \
        "an ARM emulator started before its secret had a recognisable prefix: make emulator-down emulator-up"
    for name, value in PROTECTED.items():
        secrets.add("protected setting %s" % name, value)
    secrets.add_token("kubeconfig token", creds["token"])
    secrets.add_key_data("kubeconfig client key", creds["key_data"], creds["public"])
    for i, key in enumerate(WORKER_KEYS):
        secrets.add("multikueue worker api key %d" % i, key)
        secrets.add("multikueue worker kubeconfig %d" % i,
                    base64.b64encode(_worker_kubeconfig(key).encode()).decode())
    records: list[Record] = []

    def ok(rec: Record) -> Record:
        records.append(rec)
        assert rec.rc == 0, rec.summary
        return rec

    helm_host = _host(kueue_kubeconfig=kubeconfig, kueue_helm_chart_ref=os.environ["KUEUE_CHART_REF"],
                      kueue_helm_plain_http=True, kueue_version="latest",
                      kueue_feature_gates={"TopologyAwareScheduling": True})
    ext_host = _host(kueue_install_method="extension", kueue_aks_resource_group=os.environ["AKS_RESOURCE_GROUP"],
                     kueue_aks_cluster_name=os.environ["AKS_CLUSTER_NAME"])
    azure = {"kueue_azure_secret": os.environ["AZURE_SECRET"]}

    # 1. site.yml, Helm path, through ansible-runner; the runs reach the cluster only with the token+key kubeconfig.
    ok(runner_job(work, "site-helm", "site.yml", helm_host, {"kueue_resources": CONFIG, "kueue_create_namespaces": True}))
    assert _helm_release_present(kube)
    # 2. configure_queues.yml with a MultiKueue worker whose kubeconfig (an API key) is in a Secret.
    ok(runner_job(work, "configure-queues", "configure_queues.yml", helm_host, {
        "kueue_resources": CONFIG + MULTIKUEUE, "kueue_secrets": [_worker_secret(WORKER_KEYS[0], encoded=False)]}))
    data = client.CoreV1Api(kube).read_namespaced_secret("sec-worker", "kueue-system").data["kubeconfig"]
    assert WORKER_KEYS[0] in base64.b64decode(data).decode()
    # 3. ... the key rotated (a changed Secret: its diff is where a leak would be), JSON callback.
    ok(json_run(work, "configure-queues-rotate", "configure_queues.yml", helm_host, {
        "kueue_resources": CONFIG + MULTIKUEUE, "kueue_secrets": [_worker_secret(WORKER_KEYS[1], encoded=True)]}))
    data = client.CoreV1Api(kube).read_namespaced_secret("sec-worker", "kueue-system").data["kubeconfig"]
    assert WORKER_KEYS[1] in base64.b64decode(data).decode()
    # 4. status.yml with the drift report (issue 16) of the first declaration: the Secret differs from it (the
    # rotated key live, the first one declared), so both values are where a leak would be.
    status = ok(json_run(work, "status", "status.yml", helm_host, {
        "kueue_resources": CONFIG + MULTIKUEUE, "kueue_secrets": [_worker_secret(WORKER_KEYS[0], encoded=False)]}))
    assert '"field": "data.kubeconfig"' in status.places["stdout (JSON callback)"]  # the Secret was compared
    # 5. uninstall.yml with a backup (the MultiKueue Secret included).
    backups = work / "backups"
    ok(runner_job(work, "uninstall-helm", "uninstall.yml", helm_host, {
        "kueue_backup_dir": str(backups), "kueue_backup_include_secrets": True, "kueue_confirm_hosts": "local"}))
    assert not _helm_release_present(kube)
    [backup] = [str(p) for p in backups.iterdir()]
    # 6. site.yml, extension path via the ARM emulator, protected settings, credentials fetched from ARM.
    ext_vars = dict(azure, kueue_extension_configuration_protected_settings=PROTECTED)
    ok(runner_job(work, "site-extension", "site.yml", ext_host, ext_vars))
    # 7. restore.yml of the Helm backup on the extension (credentials from ARM; the Secret applied again).
    ok(runner_job(work, "restore-extension", "restore.yml", ext_host, dict(azure, kueue_backup_path=backup)))
    data = client.CoreV1Api(kube).read_namespaced_secret("sec-worker", "kueue-system").data["kubeconfig"]
    assert WORKER_KEYS[1] in base64.b64decode(data).decode()
    # 8. kueue_extension fetching the cluster credentials to a file.
    fetched = str(work / "fetched" / "aks.kubeconfig")
    os.makedirs(os.path.dirname(fetched), mode=0o700)
    fetch = [{"name": "Fetch", "hosts": "kueue_clusters", "gather_facts": False, "tasks": [{
        "name": "Fetch the AKS credentials to a file", "kueueops.aks.kueue_extension": {
            "state": "present", "resource_group": "{{ kueue_aks_resource_group }}",
            "cluster_name": "{{ kueue_aks_cluster_name }}", "secret": "{{ kueue_azure_secret }}", "preflight": False,
            "kubeconfig_dest": fetched}}]}]
    ok(json_run(work, "fetch-credentials", fetch, ext_host, azure))
    # 9. migrate.yml extension -> Helm (backup, extension deleted, Helm install, restore), with the token kubeconfig.
    migrate_backups = work / "migrate-backups"
    migrate_host = _host(**dict(helm_host["kueue_clusters"]["hosts"]["local"],
                                kueue_aks_resource_group=os.environ["AKS_RESOURCE_GROUP"],
                                kueue_aks_cluster_name=os.environ["AKS_CLUSTER_NAME"]))
    ok(json_run(work, "migrate", "migrate.yml", migrate_host, dict(
        azure, kueue_migrate_to="helm", kueue_backup_dir=str(migrate_backups), kueue_backup_include_secrets=True,
        kueue_confirm_hosts="local")))
    assert _helm_release_present(kube)

    # ---- the fetched credentials: every key the emulator issued is a secret too
    issued = _fetched_keys(arm)
    assert issued, "the extension-path runs fetched no credentials from ARM"
    for i, (key_data, public) in enumerate(issued):
        secrets.add_key_data("fetched client key %d" % i, key_data, public)
    fetched_cfg = yaml.safe_load(open(fetched))
    assert fetched_cfg["users"][0]["user"]["client-key-data"] in [key for key, _public in issued]

    # ---- grep
    leaks = []
    for rec in records:
        leaks += rec.leaks(secrets)
    # Backups: every file, for everything but the MultiKueue Secret the backup exists to keep.
    backup_secrets = secrets.without("multikueue")
    kept = []
    for folder in (backups, migrate_backups):
        for path, text in read_tree(str(folder)).items():
            leaks += backup_secrets.find(text, "backup file " + os.path.relpath(path, str(work)))
            kept += [path for key in WORKER_KEYS[1:] if base64.b64encode(_worker_kubeconfig(key).encode()).decode() in text]
    assert len(kept) == 2, "each backup should hold the MultiKueue Secret (include_secrets): %s" % kept
    assert not leaks, "secrets found:\n" + "\n".join(sorted(set(leaks)))

    # ---- permissions
    # kueue_backup_dir (created by the module), each backup folder and every file in it; the fetched kubeconfig.
    assert len(list(migrate_backups.iterdir())) == 1
    wrong = _assert_private(str(backups)) + _assert_private(str(migrate_backups)) + _assert_private(fetched)
    assert not wrong, "not private: %s" % wrong
    places = sum(len(r.places) for r in records)
    print("secrets: %d needles; %d runs; %d places grepped; %.0f s" % (
        len(secrets.needles), len(records), places, time.time() - started))
