"""helm_runner with a fake run_command: version gate, v3/v4 args, secrets, temp files."""

import json
import os
import stat

import pytest

from ansible_collections.kueueops.aks.plugins.module_utils.helm import helm_runner as hr
from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import REDACTED, KueueOpsError
from ansible_collections.kueueops.aks.plugins.module_utils.kube.kube_client import resolve_kube_options


class FakeRun:
    """Records calls; answers from a list of (predicate, (rc, out, err))."""

    def __init__(self, version="v3.19.5", answers=None):
        self.version = version
        self.answers = answers or []
        self.calls = []

    def __call__(self, args, environ_update=None, data=None):
        call = {"args": list(args), "env": dict(environ_update or {}), "data": data}
        if "--values" in args:
            path = args[len(args) - 1 - args[::-1].index("--values") + 1]
            call["values_mode"] = stat.S_IMODE(os.stat(path).st_mode)
            with open(path) as f:
                call["values"] = json.load(f)
            call["values_path"] = path
        self.calls.append(call)
        if args[1:2] == ["version"]:
            return (0, self.version, "") if not callable(self.version) else self.version()
        for pred, result in self.answers:
            if pred(args):
                return result
        return 0, "", ""


def runner(version="v3.19.5", **kw):
    return hr.HelmRunner(FakeRun(version, kw.pop("answers", None)), "/opt/helm/bin/helm", **kw)


@pytest.mark.parametrize("text,major", [("v3.13.0", 3), ("v3.19.5", 3), ("v4.2.4", 4), ("v4.0.0-rc.1", 4)])
def test_version_detected(text, major):
    r = runner(text)
    assert r.major == major
    assert r.run_command.calls[0]["args"] == ["/opt/helm/bin/helm", "version", "--template", "{{.Version}}"]


@pytest.mark.parametrize("text,needle", [("v3.12.3", "needs helm v3.13"), ("v2.17.0", "needs helm v3.13"),
                                         ("garbage", "cannot tell the version")])
def test_old_or_unparsable_helm_refused_with_path(text, needle):
    with pytest.raises(KueueOpsError) as err:
        runner(text)
    assert needle in str(err.value) and "/opt/helm/bin/helm" in str(err.value)


def test_missing_helm_names_where_it_looked():
    with pytest.raises(KueueOpsError) as err:
        hr.HelmRunner(FakeRun(), None)
    assert "looked in" in str(err.value)
    assert "/usr/bin:/bin" in str(hr.HelmRunner.not_found("/usr/bin:/bin"))


def test_failing_version_command():
    fake = FakeRun(version=lambda: (127, "", "exec format error"))
    with pytest.raises(KueueOpsError) as err:
        hr.HelmRunner(fake, "/x/helm")
    assert "/x/helm" in str(err.value)


def test_upgrade_args_v3():
    r = runner("v3.19.5")
    args = r.upgrade_args("kueue", "kueue-system", "oci://registry.k8s.io/kueue/charts/kueue", hr.HelmUpgrade(
        version="0.19.2", values_file="/tmp/v.json", values_files=["/u/a.yaml"], create_namespace=True,
        wait=True, timeout=300, atomic=True, plain_http=True))
    assert args == ["upgrade", "kueue", "oci://registry.k8s.io/kueue/charts/kueue", "--install",
                    "--namespace", "kueue-system", "--version", "0.19.2", "--create-namespace",
                    "--values", "/u/a.yaml", "--values", "/tmp/v.json", "--plain-http", "--atomic", "--wait",
                    "--timeout", "300s", "--output", "json"]


def test_upgrade_args_v4():
    r = runner("v4.2.4")
    args = r.upgrade_args("kueue", "kueue-system", "/charts/kueue", hr.HelmUpgrade(wait=True, timeout="10m", atomic=True))
    assert "--rollback-on-failure" in args and "--wait=watcher" in args
    assert "--atomic" not in args and "--wait" not in args
    assert args[args.index("--timeout") + 1] == "10m"
    args = r.upgrade_args("kueue", "ns", "/c", hr.HelmUpgrade(wait=False, atomic=False))
    assert not [a for a in args if a.startswith("--wait") or a in ("--atomic", "--rollback-on-failure")]


def test_uninstall_args():
    assert runner("v3.19.5").uninstall_args("kueue", "ns", wait=True, timeout=60) == [
        "uninstall", "kueue", "--namespace", "ns", "--debug", "--wait", "--timeout", "60s"]
    assert runner("v4.2.4").uninstall_args("kueue", "ns", wait=True) == [
        "uninstall", "kueue", "--namespace", "ns", "--wait=watcher"]


def test_upgrade_install_values_file_private_and_removed():
    r = runner("v4.2.4", answers=[(lambda a: "upgrade" in a, (0, '{"name": "kueue", "version": 1}', ""))])
    with r:
        out = r.upgrade_install("kueue", "kueue-system", "/c", {"controllerManager": {"replicas": 1}}, wait=True)
        call = r.run_command.calls[-1]
        assert out == {"name": "kueue", "version": 1}
        assert call["values"] == {"controllerManager": {"replicas": 1}}
        assert call["values_mode"] == 0o600
        assert not os.path.exists(call["values_path"])
        tmpdir = r._tmpdir
        assert stat.S_IMODE(os.stat(tmpdir).st_mode) == 0o700
    assert not os.path.exists(tmpdir)


def test_registry_login_secret_on_stdin_only_and_scrubbed():
    secret = "s3cr3t-Passw0rd"
    err = "Error: login failed for user bob with password %s (basic %s)" % (
        secret, hr.base64.b64encode(secret.encode()).decode())
    r = runner("v3.19.5", answers=[(lambda a: "login" in a, (1, "", err))])
    with r:
        with pytest.raises(hr.HelmError) as exc:
            r.registry_login("myacr.azurecr.io", "bob", secret)
        call = r.run_command.calls[-1]
        assert call["data"] == secret
        assert secret not in " ".join(call["args"])
        assert call["args"][1:] == ["registry", "login", "myacr.azurecr.io", "--username", "bob", "--password-stdin"]
        assert call["env"]["HELM_REGISTRY_CONFIG"].startswith(r._tmpdir)
        text = str(exc.value) + (exc.value.stderr or "")
        assert secret not in text and REDACTED in text
        assert hr.base64.b64encode(secret.encode()).decode() not in text
        assert secret in r.no_log_values


def test_kube_token_in_env_not_argv_and_scrubbed(monkeypatch, tmp_path):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent"))
    env = hr.helm_kube_env(resolve_kube_options(dict(host="https://127.0.0.1:6443", api_key="tok-123",
                                                     validate_certs=False, impersonate_groups=["a", "b"])))
    assert env == {"HELM_KUBEAPISERVER": "https://127.0.0.1:6443", "HELM_KUBETOKEN": "tok-123",
                   "HELM_KUBEINSECURE_SKIP_TLS_VERIFY": "true", "HELM_KUBEASGROUPS": "a,b"}
    r = runner("v3.19.5", env=env, answers=[(lambda a: "status" in a, (1, "", "Unauthorized: token tok-123"))])
    with pytest.raises(hr.HelmError) as exc:
        r.status("kueue", "ns")
    assert "tok-123" not in str(exc.value)
    assert "tok-123" in r.no_log_values
    assert all("tok-123" not in " ".join(c["args"]) for c in r.run_command.calls)
    assert r.run_command.calls[-1]["env"]["HELM_KUBETOKEN"] == "tok-123"


def test_status_and_get_values():
    rel = {"name": "kueue", "info": {"status": "deployed"}, "chart": {"metadata": {"version": "0.19.2"}}}
    r = runner("v4.2.4", answers=[
        (lambda a: a[1:3] == ["status", "missing"], (1, "", "Error: release: not found")),
        (lambda a: a[1:3] == ["status", "kueue"], (0, json.dumps(rel), "")),
        (lambda a: a[1:4] == ["get", "values", "kueue"], (0, "null\n", "")),
        (lambda a: a[1:4] == ["get", "values", "other"], (0, '{"a": 1}', "")),
    ])
    assert r.status("missing", "ns") is None
    assert r.status("kueue", "ns")["info"]["status"] == "deployed"
    assert r.run_command.calls[-1]["args"][1:] == ["status", "kueue", "--namespace", "ns", "--output", "json"]
    assert r.get_values("kueue", "ns") == {}
    assert r.get_values("other", "ns") == {"a": 1}


def test_uninstall_not_found_is_false():
    r = runner("v3.19.5", answers=[(lambda a: "uninstall" in a, (1, "", "Error: uninstall: Release not loaded: "
                                                                        "kueue: release: not found"))])
    assert r.uninstall("kueue", "ns") is False


def test_show_values_args():
    r = runner("v3.19.5", answers=[(lambda a: "show" in a, (0, "managerConfig: {}\n", ""))])
    assert r.show_values("oci://localhost:5000/kueue", "0.19.2", plain_http=True) == "managerConfig: {}\n"
    assert r.run_command.calls[-1]["args"][1:] == ["show", "values", "oci://localhost:5000/kueue",
                                                   "--version", "0.19.2", "--plain-http"]


@pytest.mark.parametrize("ref", ["registry.k8s.io/kueue", "oci://registry.k8s.io", "oci://r.io/kueue:0.19.2"])
def test_split_oci_ref_rejects(ref):
    with pytest.raises(KueueOpsError):
        hr.split_oci_ref(ref)


def test_split_oci_ref():
    assert hr.split_oci_ref("oci://registry.k8s.io/kueue/charts/kueue") == ("registry.k8s.io", "kueue/charts/kueue")
    assert hr.split_oci_ref("oci://127.0.0.1:5000/charts/kueue/") == ("127.0.0.1:5000", "charts/kueue")


def test_uninstall_reasons_keep_errors_and_refusals_not_the_debug_log():
    stderr = "\n".join([
        "uninstall.go:102: [debug] uninstall: Deleting kueue",
        "client.go:486: [debug] Starting delete for \"kueue-controller-manager\" Deployment",
        "Error: failed to delete release: kueue",
        "helm.go:84: [debug] 1 error occurred:",
        "\t* customresourcedefinitions.apiextensions.k8s.io \"clusterqueues.kueue.x-k8s.io\" is forbidden: User "
        "\"u\" cannot delete resource \"customresourcedefinitions\"",
        "main.main()",
        "\thelm.sh/helm/v3/cmd/helm/helm.go:83 +0x39",
        "goroutine 1 [running]:",
    ])
    text = hr.uninstall_reasons(stderr)
    assert "Deleting kueue" not in text and "Starting delete" not in text and "main.main" not in text
    assert text.startswith("Error: failed to delete release: kueue")
    assert "cannot delete resource" in text
    assert hr.uninstall_reasons("") == ""


TLS = {"ca_file": "/etc/pki/ca.pem", "cert_file": "/c.pem", "key_file": "/k.pem", "insecure_skip_tls_verify": True}


def test_tls_args_on_every_registry_call_and_login_names_insecure_its_own_way():
    r = runner("v3.19.5")
    flags = ["--ca-file", "/etc/pki/ca.pem", "--cert-file", "/c.pem", "--key-file", "/k.pem"]
    assert r.tls_args(TLS) == flags + ["--insecure-skip-tls-verify"]
    assert r.tls_args(TLS, login=True) == flags + ["--insecure"]
    assert r.tls_args(None) == [] and r.tls_args({"ca_file": None, "insecure_skip_tls_verify": False}) == []
    assert r.registry_login_args("r.io", "bob", tls={"ca_file": "/ca"}) == [
        "registry", "login", "r.io", "--username", "bob", "--password-stdin", "--ca-file", "/ca"]
    assert r._chart_args("oci://r.io/k", None, False, {"ca_file": "/ca"}) == ["oci://r.io/k", "--ca-file", "/ca"]
    up = r.upgrade_args("kueue", "ns", "oci://r.io/k", hr.HelmUpgrade(version="1.0.0", tls={"insecure_skip_tls_verify": True}))
    assert "--insecure-skip-tls-verify" in up and up[-2:] == ["--output", "json"]


def test_show_chart_without_version_lets_helm_resolve_the_newest():
    r = runner("v4.2.4", answers=[(lambda a: a[1:3] == ["show", "chart"], (0, "name: kueue\nversion: 0.19.2\n", ""))])
    assert r.show_chart("oci://127.0.0.1:5000/kueue", tls={"ca_file": "/ca"})["version"] == "0.19.2"
    assert r.run_command.calls[-1]["args"][1:] == ["show", "chart", "oci://127.0.0.1:5000/kueue", "--ca-file", "/ca"]


@pytest.fixture
def pem_files(tmp_path):
    paths = {}
    for name in ("ca.pem", "cert.pem", "key.pem"):
        (tmp_path / name).write_text("-----BEGIN CERTIFICATE-----\n")
        paths[name] = str(tmp_path / name)
    return paths


def test_registry_tls_accepts_what_helm_uses(pem_files):
    params = {"registry_ca_file": pem_files["ca.pem"], "registry_cert_file": pem_files["cert.pem"],
              "registry_key_file": pem_files["key.pem"], "registry_insecure_skip_tls_verify": False,
              "plain_http": False}
    assert hr.registry_tls(params) == {"ca_file": pem_files["ca.pem"], "cert_file": pem_files["cert.pem"],
                                       "key_file": pem_files["key.pem"], "insecure_skip_tls_verify": False}
    assert hr.registry_tls({"plain_http": True}) == {"ca_file": None, "cert_file": None, "key_file": None,
                                                     "insecure_skip_tls_verify": False}


@pytest.mark.parametrize("params,field,needles", [
    ({"registry_ca_file": "/nonexistent/ca.pem"}, "registry_ca_file", ["/nonexistent/ca.pem", "existing PEM"]),
    ({"registry_cert_file": "{cert}"}, "registry_key_file", ["registry_cert_file is set without", "neither"]),
    ({"registry_key_file": "{key}"}, "registry_cert_file", ["registry_key_file is set without", "neither"]),
    ({"registry_insecure_skip_tls_verify": True, "plain_http": True}, "registry_insecure_skip_tls_verify",
     ["plain HTTP has no TLS", "remove plain_http"]),
    ({"registry_ca_file": "{ca}", "plain_http": True}, "registry_ca_file", ["plain HTTP has no TLS"]),
])
def test_registry_tls_refuses_what_helm_would_ignore(pem_files, params, field, needles):
    files = dict((k.split(".")[0], v) for k, v in pem_files.items())
    params = dict((k, v.format(**files) if isinstance(v, str) else v) for k, v in params.items())
    with pytest.raises(KueueOpsError) as err:
        hr.registry_tls(params)
    assert err.value.field == field
    msg = err.value.message()
    assert all(n in msg for n in needles), msg
    assert "Fix:" in msg


REF = "oci://127.0.0.1:5443/kueue/charts/kueue"


# What helm v3.19.5 / v4.2.4 print (stderr of the real binaries against the harness's registries).
@pytest.mark.parametrize("stderr,kwargs,field,needle", [
    ('Error: Get "https://127.0.0.1:5443/v2/kueue/charts/kueue/tags/list": tls: failed to verify certificate: '
     'x509: certificate signed by unknown authority', {}, "registry_ca_file", "registry_ca_file"),
    ('Error: Get "https://127.0.0.1:5000/v2/kueue/charts/kueue/tags/list": http: server gave HTTP response to '
     'HTTPS client', {}, "plain_http", "plain_http: true"),
    ('Error: GET "https://127.0.0.1:5443/v2/kueue/charts/kueue/tags/list": basic credential not found', {},
     "registry_username", "helm registry login"),
    ('Error: GET "https://127.0.0.1:5443/v2/kueue/charts/kueue/tags/list": response status code 401: '
     'unauthorized: authentication required: [map[Action:pull Class: Name:kueue/charts/kueue Type:repository]]',
     {}, "registry_username", "helm registry login"),
    ('Error: authenticating to "127.0.0.1:5443": GET "https://127.0.0.1:5443/v2/": response status code 401: '
     'unauthorized: authentication required', {"logged_in": True}, "registry_password",
     "check registry_username and registry_password"),
    ('Error: GET "http://127.0.0.1:5443/v2/kueue/charts/kueue/tags/list": response status code 400: Bad Request',
     {"plain_http": True}, "plain_http", "remove plain_http"),
    ('Error: GET "https://127.0.0.1:5443/v2/kueue/charts/nothing/tags/list": response status code 404: name '
     'unknown: repository name not known to registry: map[name:kueue/charts/nothing]', {"version": "0.1.0"},
     "chart_ref", "repository path"),
    ('Error: unable to locate any tags in provided repository: oci://127.0.0.1:5443/kueue/charts/kueue', {},
     "chart_version", "exact chart_version"),
    ('Error: Get "https://127.0.0.1:1/v2/": dial tcp 127.0.0.1:1: connect: connection refused', {},
     "chart_ref", "registry address"),
    ('Error: something nobody expected', {"version": "0.19.2"}, "chart_ref", "registry_ca_file"),
])
def test_registry_failure_names_the_option_to_change(stderr, kwargs, field, needle):
    error = hr.registry_failure(hr.HelmError("helm show failed (rc=1): " + stderr), REF, **kwargs)
    assert error.field == field
    msg = error.message()
    assert needle in msg and "Fix:" in msg and stderr.splitlines()[-1] in msg


def test_registry_failure_leaves_an_unpublished_version_to_the_caller():
    stderr = ('Error: failed to perform "FetchReference" on source: 127.0.0.1:5443/kueue/charts/kueue:0.1.0: '
              'not found')
    assert hr.registry_failure(hr.HelmError(stderr), REF, version="0.1.0") is None
    # without a version, "not found" is not about a version
    assert hr.registry_failure(hr.HelmError(stderr), REF).field == "chart_ref"


def test_registry_failure_port_numbers_are_not_status_codes():
    error = hr.registry_failure(hr.HelmError('Error: dial tcp 127.0.0.1:40123: connect: connection refused'), REF)
    assert error.field == "chart_ref"
