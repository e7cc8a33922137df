"""helm_runner and helm_values against the real helm v3/v4 binaries (no cluster needed).

Binaries come from hack/toolchain.sh (``$KUEUEOPS_CACHE/toolchain/helm-<ver>/bin/helm``);
the Kueue chart from its Go module download of sigs.k8s.io/kueue@v0.19.2. A missing
piece fails the test in CI and skips it elsewhere, with the reason (tests/prerequisites.py).
"""

import os
import re
import subprocess

import pytest
import yaml

from ansible_collections.kueueops.aks.plugins.module_utils.helm import helm_runner as hr
from ansible_collections.kueueops.aks.plugins.module_utils.helm import helm_values as hv
from ansible_collections.kueueops.aks.plugins.module_utils.kueue import manager_config as mc
from tests.prerequisites import kueue_module, kueue_module_reason, require, toolchain
from tests.unit.plugins.module_utils.test_helm_values import SEED_FRAMEWORKS, SEED_GATES

BINARIES = {
    "v3": toolchain("helm-v3.19.5", "bin", "helm"),
    "v4": toolchain("helm-v4.2.4", "bin", "helm"),
}
CHART = os.path.join(kueue_module("0.19.2"), "charts", "kueue")


def run_command(args, environ_update=None, data=None):
    """The AnsibleModule.run_command contract, for tests."""
    env = dict(os.environ)
    env.update(environ_update or {})
    env.setdefault("HELM_CONFIG_HOME", "/nonexistent-kueueops-helm-config")
    p = subprocess.run(args, input=data, capture_output=True, text=True, env=env, timeout=120)
    return p.returncode, p.stdout, p.stderr


def _binary(major):
    path = BINARIES[major]
    require(os.access(path, os.X_OK), "helm %s not built at %s (run make toolchain)" % (major, path))
    return path


def _chart():
    return require(CHART, "the Kueue chart: " + kueue_module_reason("0.19.2"))


# Every registry TLS flag the runner can emit (a real call never sets them all with --plain-http).
TLS = {"ca_file": "/ca.pem", "cert_file": "/c.pem", "key_file": "/k.pem", "insecure_skip_tls_verify": True}


def _flags(args):
    return sorted({a.split("=", 1)[0] for a in args if a.startswith("--")})


def _help(binary, *sub):
    rc, out, err = run_command([binary] + list(sub) + ["--help"])
    assert rc == 0, err
    return out


@pytest.mark.parametrize("major,expected", [("v3", (3, 19, 5)), ("v4", (4, 2, 4))])
def test_detect_real_version(major, expected):
    r = hr.HelmRunner(run_command, _binary(major))
    assert r.version == expected and r.major == expected[0]


@pytest.mark.parametrize("major", ["v3", "v4"])
def test_every_emitted_flag_is_accepted(major):
    binary = _binary(major)
    r = hr.HelmRunner(run_command, binary)
    checks = [
        (("upgrade",), r.upgrade_args("kueue", "ns", "oci://r/x", hr.HelmUpgrade(
            version="1.0.0", values_file="/v.json", values_files=["/u.yaml"], create_namespace=True, wait=True,
            timeout=60, atomic=True, plain_http=True, tls=TLS))),
        (("uninstall",), r.uninstall_args("kueue", "ns", wait=True, timeout=60)),
        (("registry", "login"), r.registry_login_args("r.example", "bob", plain_http=True, tls=TLS)),
        (("show", "values"), ["show", "values"] + r._chart_args("oci://r/x", "1.0.0", True, TLS)),
        (("show", "chart"), ["show", "chart"] + r._chart_args("oci://r/x", "1.0.0", True, TLS)),
        (("status",), ["status", "kueue", "--namespace", "ns", "--output", "json"]),
        (("get", "values"), ["get", "values", "kueue", "--namespace", "ns", "--output", "json"]),
    ]
    for sub, args in checks:
        text = _help(binary, *sub)
        for flag in _flags(args):
            assert re.search(r"(^|\s|,)%s[\s=]" % re.escape(flag), text), "%s %s: %s not in help" % (major, sub, flag)
    if major == "v4":
        assert "watcher" in _help(binary, "upgrade")
        assert "rollback-on-failure" in _help(binary, "upgrade")


@pytest.mark.parametrize("major", ["v3", "v4"])
def test_v4_wait_strategy_rejected_by_v3_and_accepted_by_v4(major):
    """Proves the adaptation matters: --wait=watcher is a v4-only value."""
    binary = _binary(major)
    rc, _out, err = run_command([binary, "template", "kueue", _chart(), "--wait=watcher"])
    if major == "v3":
        assert rc != 0 and "watcher" in err
    else:
        assert rc == 0, err


def _template(binary, values):
    r = hr.HelmRunner(run_command, binary)
    with r:
        path = r._write_values(values)
        rc, out, err = run_command([binary, "template", "kueue", CHART, "--namespace", "kueue-system",
                                    "--values", path])
    assert rc == 0, err
    docs = [d for d in yaml.safe_load_all(out) if d]
    dep = [d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == "kueue-controller-manager"][0]
    cm = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "kueue-manager-config"][0]
    args = dep["spec"]["template"]["spec"]["containers"][0]["args"]
    return args, cm["data"][mc.CONFIG_KEY]


@pytest.mark.parametrize("major", ["v3", "v4"])
def test_rendered_values_take_effect_in_real_chart(major):
    binary = _binary(major)
    r = hr.HelmRunner(run_command, binary)
    default_cfg = hv.chart_default_config_yaml(r.show_values(_chart()))
    values = hv.render_values("0.19.2", SEED_GATES, SEED_FRAMEWORKS, {"controllerManager": {"replicas": 1}},
                              default_cfg)
    args, config = _template(binary, values)
    assert "--feature-gates=LocalQueueMetrics=true,TopologyAwareScheduling=true" in args
    gates, frameworks = mc.effective_from_deployment(args, config)
    assert gates == SEED_GATES
    assert frameworks == SEED_FRAMEWORKS
    cfg = yaml.safe_load(config)
    assert cfg["apiVersion"] == "config.kueue.x-k8s.io/v1beta2"
    assert cfg["leaderElection"]["resourceName"] == "c1f6bfd2.kueue.x-k8s.io"  # chart default kept


def test_seed_values_really_are_ignored_by_the_chart():
    """Evidence for detect_misnested_values: the seed's frameworks never reach the ConfigMap."""
    binary = BINARIES["v4"] if os.access(BINARIES["v4"], os.X_OK) else _binary("v3")
    _chart()
    seed = {"controllerManager": {"managerConfig": {"controllerManagerConfigYaml": yaml.safe_dump({
        "apiVersion": "config.kueue.x-k8s.io/v1beta1", "kind": "Configuration",
        "integrations": {"frameworks": ["kubeflow.org/jaxjob"]}})}}}
    _args, config = _template(binary, seed)
    assert "kubeflow.org/jaxjob" not in config
    assert hv.detect_misnested_values(seed)
