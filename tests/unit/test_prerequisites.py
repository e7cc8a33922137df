"""tests/prerequisites.py (issue 42, item 5): a missing artifact fails the test in CI and skips it elsewhere, with the
reason; and no test under tests/ skips on its own, outside that one rule, but for the platform skips listed here."""
import ast
import os

import pytest

from tests import prerequisites

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The pytest and unittest names that skip (or expect a failure): pytest.skip, pytest.mark.skip(if), importorskip, ...
SKIPPING = {"skip", "skipif", "importorskip", "xfail", "SkipTest", "skipIf", "skipUnless"}
# Skips about the platform, not about a missing artifact, each justified in a comment beside it: {file: how many}.
PLATFORM_SKIPS = {
    # kube_import's laziness exists only on kubernetes < 37; the 2.16 and 2.21 jobs run kubernetes 37.
    "tests/unit/plugins/module_utils/test_kube_import.py": 1,
}


@pytest.mark.parametrize("ci", [None, "", "false", "0"])
def test_a_missing_prerequisite_skips_with_its_reason_outside_ci(monkeypatch, ci, tmp_path):
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    with pytest.raises(pytest.skip.Exception) as caught:
        prerequisites.require(str(tmp_path / "absent"), "helm v3 not built at x (run make toolchain)")
    assert str(caught.value) == "helm v3 not built at x (run make toolchain)"
    with pytest.raises(pytest.skip.Exception):
        prerequisites.require(False, "no tmpfs")


@pytest.mark.parametrize("ci", ["true", "True", "1"])
def test_a_missing_prerequisite_fails_in_ci_naming_the_reason(monkeypatch, ci, tmp_path):
    monkeypatch.setenv("CI", ci)
    with pytest.raises(pytest.fail.Exception) as caught:
        prerequisites.require(str(tmp_path / "absent"), "helm v3 not built at x (run make toolchain)")
    assert str(caught.value) == ("missing in CI (CI=%s; a missing prerequisite fails the run there): helm v3 not "
                                 "built at x (run make toolchain)" % ci)
    with pytest.raises(pytest.fail.Exception):
        prerequisites.require(0, "no tmpfs")


def test_a_present_prerequisite_is_returned_in_ci_and_out(monkeypatch, tmp_path):
    for ci in ("true", ""):
        monkeypatch.setenv("CI", ci)
        assert prerequisites.require(str(tmp_path), "x") == str(tmp_path)
        assert prerequisites.require(tmp_path, "x") == tmp_path
        assert prerequisites.require(True, "x") is True


def test_artifact_locations_follow_the_toolchains_settings(monkeypatch):
    monkeypatch.setenv("GOMODCACHE", "/gomod")
    assert prerequisites.kueue_module("0.19.2") == "/gomod/sigs.k8s.io/kueue@v0.19.2"
    assert prerequisites.kueue_module("v0.18.4") == "/gomod/sigs.k8s.io/kueue@v0.18.4"
    monkeypatch.delenv("KUEUEOPS_TOOLCHAIN", raising=False)
    monkeypatch.setenv("KUEUEOPS_CACHE", "/cache")
    assert prerequisites.toolchain("helm-v3.19.5", "bin", "helm") == "/cache/toolchain/helm-v3.19.5/bin/helm"
    monkeypatch.setenv("KUEUEOPS_TOOLCHAIN", "/tc")
    assert prerequisites.toolchain("x") == "/tc/x"


def skips_in(source, name="t.py"):
    """The lines of ``source`` that skip a test by themselves (any name of SKIPPING, reached as an attribute or
    imported)."""
    lines = []
    for node in ast.walk(ast.parse(source, name)):
        if isinstance(node, ast.Attribute) and node.attr in SKIPPING:
            lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and any(a.name in SKIPPING for a in node.names):
            lines.append(node.lineno)
    return sorted(set(lines))


def test_no_test_skips_outside_the_one_rule():
    own = {os.path.join("tests", "prerequisites.py"), os.path.relpath(__file__, ROOT)}
    found = {}
    for folder, dirs, names in os.walk(os.path.join(ROOT, "tests")):
        dirs[:] = [d for d in dirs if d not in ("output", "__pycache__")]
        for name in names:
            path = os.path.relpath(os.path.join(folder, name), ROOT)
            if name.endswith(".py") and path not in own:
                with open(os.path.join(ROOT, path), encoding="utf-8") as handle:
                    lines = skips_in(handle.read(), path)
                if lines:
                    found[path.replace(os.sep, "/")] = len(lines)
    assert found == PLATFORM_SKIPS, ("skip through tests/prerequisites.py's require(what, reason) (it fails in CI); "
                                     "a skip about the platform goes in PLATFORM_SKIPS with its reason")


def test_the_skip_scan_sees_every_way_to_skip():
    source = ("import pytest\nimport unittest\nfrom pytest import skip\n"
              "@pytest.mark.skipif(True, reason='x')\ndef test_a():\n    pytest.skip('y')\n"
              "def test_b():\n    pytest.importorskip('z')\n    raise unittest.SkipTest('w')\n"
              "@pytest.mark.xfail\ndef test_c():\n    pass\n"
              "def test_d():\n    assert 'skip' in 'skipped'\n")
    assert skips_in(source) == [3, 4, 6, 8, 9, 10]
