"""Chart versions resolved the way helm resolves them, against a private registry (issue 13, item 3).

The harness runs a second real `distribution` registry beside the plain-HTTP one, with TLS from its own CA
and htpasswd authentication, holding the same charts (KUEUE_TLS_*). kueue_helm in check mode resolves and
reports the version without installing anything, so each case is one task of one play (run at -vvv, and the
password is looked for in everything it printed); one real install through the role then pulls from it with a
`helm registry login` done beforehand and no password in the play.
"""
from __future__ import annotations

import os
import subprocess

import pytest

from .ansible import run_playbook
from .kubeutil import helm_revision

SITE = os.path.join(os.path.dirname(__file__), "..", "..", "playbooks", "site.yml")


def password() -> str:
    with open(os.environ["KUEUE_TLS_REGISTRY_PASSWORD_FILE"]) as handle:
        return handle.read()


def registry_login(binary: str, config: str) -> None:
    """What a user does once beforehand: `helm registry login` with the registry's CA, into `config`."""
    proc = subprocess.run([binary, "registry", "login", os.environ["KUEUE_TLS_REGISTRY"], "--username",
                           os.environ["KUEUE_TLS_REGISTRY_USER"], "--password-stdin", "--ca-file",
                           os.environ["KUEUE_TLS_REGISTRY_CA"]], input=password(), capture_output=True, text=True,
                          env=dict(os.environ, HELM_REGISTRY_CONFIG=config), timeout=60)
    assert proc.returncode == 0, proc.stderr


def task(name, logged_in_config=None, **args):
    t = {"name": name, "kueueops.aks.kueue_helm": args, "check_mode": True, "ignore_errors": True}
    if logged_in_config:
        t["environment"] = {"HELM_REGISTRY_CONFIG": logged_in_config}
    return t


V4_CASES = ("a latest", "a pinned", "a unpublished", "b latest", "c no ca", "c no credentials", "f wrong password")


@pytest.mark.parametrize("helm_major", ["v3", "v4"])
def test_versions_resolved_by_helm_against_tls_and_auth(cluster, tmp_path, helm_major):
    binary = os.environ["HELM_V3"] if helm_major == "v3" else os.environ["HELM_V4"]
    newest, previous = cluster.state["chart_versions"][0], cluster.state["chart_versions"][1]
    logged_in = str(tmp_path / "registry-login.json")
    registry_login(binary, logged_in)
    tls_ref, ca = os.environ["KUEUE_TLS_CHART_REF"], os.environ["KUEUE_TLS_REGISTRY_CA"]
    base = {"chart_ref": tls_ref, "binary_path": binary, "wait": False}
    creds = {"registry_username": os.environ["KUEUE_TLS_REGISTRY_USER"], "registry_password": password()}
    tasks = [
        # (a) logged in beforehand, no password in the play
        task("a latest", logged_in, registry_ca_file=ca, chart_version="latest", **base),
        task("a pinned", logged_in, registry_ca_file=ca, chart_version=previous, **base),
        task("a unpublished", logged_in, registry_ca_file=ca, chart_version="0.1.999", **base),
        # (b) registry_username/registry_password with the CA
        task("b latest", registry_ca_file=ca, chart_version="latest", **dict(base, **creds)),
        task("b pinned", registry_ca_file=ca, chart_version="v" + previous, **dict(base, **creds)),
        # (c) without the CA, and with the CA but no credentials anywhere
        task("c no ca", chart_version="latest", **dict(base, **creds)),
        task("c no ca after login", logged_in, chart_version="latest", **base),
        task("c no credentials", registry_ca_file=ca, chart_version="latest", **base),
        # (d) insecure_skip_tls_verify instead of the CA
        task("d insecure", logged_in, registry_insecure_skip_tls_verify=True, chart_version="latest", **base),
        # (e) the plain-HTTP registry, as before
        task("e plain latest", chart_ref=os.environ["KUEUE_CHART_REF"], plain_http=True, chart_version="latest",
             binary_path=binary, wait=False),
        task("e plain pinned", chart_ref=os.environ["KUEUE_CHART_REF"], plain_http=True, chart_version=previous,
             binary_path=binary, wait=False),
        task("e plain_http on the TLS registry", logged_in, plain_http=True, chart_version="latest", **base),
        # (f) a wrong password
        task("f wrong password", registry_ca_file=ca, chart_version="latest",
             **dict(base, registry_username=creds["registry_username"], registry_password="not-" + password())),
    ]
    if helm_major == "v4":  # the same helm code resolves in both majors: v4 runs the login, credentials, CA cases
        tasks = [t for t in tasks if t["name"] in V4_CASES]
    play = [{"name": "Resolve", "hosts": "local", "gather_facts": False, "tasks": tasks}]
    empty = str(tmp_path / "no-login.json")  # no ambient login (~/.config/helm) reaches any task
    run = run_playbook(play, verbosity=3, env={"HELM_REGISTRY_CONFIG": empty})
    assert run.rc == 0, run.stdout[-3000:]

    def ok(name, version):
        if helm_major == "v4" and name not in V4_CASES:
            return
        res = run.result(name)
        assert not res.get("failed"), (name, res.get("msg"))
        assert res["chart_version"] == version and res["changed"] is True, (name, res)

    def refused(name, field, *needles):
        if helm_major == "v4" and name not in V4_CASES:
            return
        res = run.result(name)
        assert res.get("failed"), (name, res)
        msg = res["msg"]
        assert msg.startswith(field + ":"), (name, msg)
        assert all(n in msg for n in needles) and "Fix:" in msg and "Traceback" not in msg, (name, msg)

    ok("a latest", newest)
    ok("a pinned", previous)
    refused("a unpublished", "chart_version", "0.1.999 is not published in " + tls_ref,
            "give a published version (the newest is %s), or latest" % newest)
    ok("b latest", newest)
    ok("b pinned", previous)
    refused("c no ca", "registry_ca_file", "cannot be verified", "certificate signed by unknown authority",
            "registry_insecure_skip_tls_verify")
    refused("c no ca after login", "registry_ca_file", "cannot be verified")
    refused("c no credentials", "registry_username", "requires credentials", "registry_password",
            "helm registry login", "HELM_REGISTRY_CONFIG")
    ok("d insecure", newest)
    ok("e plain latest", newest)
    ok("e plain pinned", previous)
    refused("e plain_http on the TLS registry", "plain_http", "remove plain_http")
    refused("f wrong password", "registry_password", "refused registry_username/registry_password",
            "check registry_username and registry_password")
    secret = password()
    assert secret not in run.stdout + run.stderr
    assert "not-" + secret not in run.stdout + run.stderr
    assert not os.path.exists(empty)  # nothing logged in on the user's behalf


def test_role_installs_from_the_private_registry_logged_in_beforehand(cluster, kube, tmp_path):
    """One real install: site.yml with kueue_helm_registry_ca_file and a login done beforehand (the inventory
    holds no credentials), helm v4; verified, then uninstalled."""
    binary = os.environ["HELM_V4"]
    logged_in = str(tmp_path / "registry-login.json")
    registry_login(binary, logged_in)
    env = {"HELM_REGISTRY_CONFIG": logged_in, "PATH": os.path.dirname(binary) + os.pathsep + os.environ["PATH"]}
    previous = cluster.state["chart_versions"][1]
    extravars = {"kueue_helm_chart_ref": os.environ["KUEUE_TLS_CHART_REF"], "kueue_helm_plain_http": False,
                 "kueue_helm_registry_ca_file": os.environ["KUEUE_TLS_REGISTRY_CA"], "kueue_version": previous}
    try:
        install = run_playbook(SITE, extravars=extravars, env=env, verbosity=3)
        assert install.rc == 0, install.stdout[-3000:]
        assert install.result("Install or upgrade Kueue")["chart_version"] == previous
        assert install.result("Verify Kueue")["ok"] is True
        assert helm_revision(kube) == (1, "deployed")
        assert password() not in install.stdout + install.stderr
    finally:
        gone = run_playbook([{"name": "Uninstall", "hosts": "local", "gather_facts": False, "tasks": [
            {"name": "Uninstall Kueue", "kueueops.aks.kueue_helm": {
                "state": "absent", "delete_namespace": True, "timeout": 240, "binary_path": binary}}]}])
        assert gone.rc == 0, gone
