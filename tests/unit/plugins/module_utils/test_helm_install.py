"""module_utils/install/helm_install.py: the decisions of kueue_helm on plain values, and KueueHelm driven with fakes up to
the point where it contacts the cluster (the cluster-facing proof is tests/integration/test_kueue_helm.py)."""

import pytest

from ansible_collections.kueueops.aks.plugins.module_utils.install import helm_install as hi
from ansible_collections.kueueops.aks.plugins.module_utils.helm import helm_values as hv
from ansible_collections.kueueops.aks.plugins.module_utils.kueue import release_train
from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import KueueOpsError, ModuleFailure
from ansible_collections.kueueops.aks.plugins.module_utils.helm.helm_runner import HelmError
from ansible_collections.kueueops.aks.plugins.module_utils.kube.kube_client import REDACTED
from tests.unit.fakes import FakeCluster


def params(**kw):
    base = dict(state="present", timeout=300, values={}, values_files=[], registry_username=None,
                registry_password=None, chart_ref="oci://registry.k8s.io/kueue/charts/kueue", chart_version="latest",
                plain_http=False)
    base.update(kw)
    return base


def test_no_ansible_basic_at_import():
    """The class runs without the AnsibleModule: helm_install itself never imports ansible.module_utils.basic."""
    with open(hi.__file__) as handle:
        assert "ansible.module_utils.basic" not in handle.read()
    assert "AnsibleModule" not in vars(hi)


# ---- inputs, before anything is contacted ------------------------------------

def test_normalize_is_what_helm_records():
    assert hv.normalize(None) == {}
    assert hv.normalize({"b": (1, 2), "a": {"c": True}}) == {"a": {"c": True}, "b": [1, 2]}


def test_values_files_merge_in_order(tmp_path):
    first, second = tmp_path / "a.yml", tmp_path / "b.yml"
    first.write_text("controllerManager:\n  replicas: 1\n  x: keep\n")
    second.write_text("controllerManager:\n  replicas: 2\n")
    assert hv.load_values_files([str(first), str(second)]) == {"controllerManager": {"replicas": 2, "x": "keep"}}
    empty = tmp_path / "empty.yml"
    empty.write_text("")
    assert hv.load_values_files([str(empty)]) == {}


def test_values_files_refused(tmp_path):
    with pytest.raises(KueueOpsError) as err:
        hv.load_values_files([str(tmp_path / "absent.yml")])
    assert err.value.message() == ("values_files: values file %s does not exist. Fix: give a path on the controller."
                                   % (tmp_path / "absent.yml"))
    bad = tmp_path / "bad.yml"
    bad.write_text("a: [\n")
    with pytest.raises(KueueOpsError) as err:
        hv.load_values_files([str(bad)])
    assert err.value.field == "values_files" and "cannot read values file %s" % bad in err.value.problem
    listed = tmp_path / "list.yml"
    listed.write_text("- a\n")
    with pytest.raises(KueueOpsError) as err:
        hv.load_values_files([str(listed)])
    assert "is not a mapping (it holds a list)" in err.value.problem


def test_check_inputs_order_and_messages(tmp_path):
    loaded = []

    def load(paths):
        loaded.append(paths)
        return {}

    with pytest.raises(KueueOpsError) as err:
        hi.check_inputs(params(timeout=0), load=load)
    assert err.value.message() == "timeout: must be a positive number of seconds. Fix: e.g. timeout: 300."
    assert loaded == []  # the timeout is refused before any file is read
    with pytest.raises(KueueOpsError) as err:
        hi.check_inputs(params(values={"controllerManager": {"managerConfig": {"a": 1}}}), load=load)
    assert err.value.field == "values" and "controllerManager.managerConfig" in err.value.problem
    assert "top-level managerConfig.controllerManagerConfigYaml" in err.value.fix
    with pytest.raises(KueueOpsError) as err:
        hi.check_inputs(params(registry_password="s3cr3t"), load=load)
    assert err.value.message() == ("registry_username: registry_password is set without registry_username. "
                                   "Fix: give both, or neither for an anonymous registry.")


def test_check_inputs_values_files_only_for_present():
    files = {"controllerManager": {"managerConfig": {"a": 1}}}
    with pytest.raises(KueueOpsError) as err:
        hi.check_inputs(params(values_files=["f"]), load=lambda paths: files)
    assert err.value.problem.startswith("(in values_files) ")
    assert hi.check_inputs(params(state="absent", values_files=["f"]), load=lambda paths: files) == {}
    assert hi.check_inputs(params(values_files=["f"]), load=lambda paths: {"a": 1}) == {"a": 1}


def test_managed_extension_error():
    err = hi.managed_extension_error(["kube-system/kueue-extension"])
    assert err.field == "allow_managed_extension"
    assert "runs on this cluster (kube-system/kueue-extension); it is a cluster singleton" in err.problem


# ---- the chart version -------------------------------------------------------

def test_check_catalog():
    hv.check_catalog("0.14.2", {"TopologyAwareScheduling": True}, ["batch/job"])
    hv.check_catalog("9.9.9", {"Bogus": True}, ["nope/x"])  # a version the catalog does not know: helm decides
    with pytest.raises(KueueOpsError) as err:
        hv.check_catalog("0.14.2", {"Bogus": True}, None)
    assert err.value.field == "feature_gates" and "unknown feature gate 'Bogus'" in err.value.problem
    with pytest.raises(KueueOpsError) as err:
        hv.check_catalog("0.14.2", None, ["nope/x"])
    assert err.value.field == "integrations" and "unknown integration framework 'nope/x'" in err.value.problem


# ---- the plan ----------------------------------------------------------------

RELEASE = {"name": "kueue", "namespace": "kueue-system", "revision": "2", "status": "deployed",
           "chart": "kueue-0.19.2", "app_version": "v0.19.2"}


def test_chart_version_of():
    assert hi.chart_version_of(RELEASE) == "0.19.2"
    assert hi.chart_version_of(dict(RELEASE, chart="my-kueue-fork-0.20.0")) == "0.20.0"
    # A pre-release keeps its suffix (it was read as "rc.1").
    assert hi.chart_version_of(dict(RELEASE, chart="kueue-0.20.0-rc.1")) == "0.20.0-rc.1"
    assert hi.chart_version_of(dict(RELEASE, chart="my-kueue-fork-0.19.6-aks.0.4.4")) == "0.19.6-aks.0.4.4"
    assert hi.chart_version_of(dict(RELEASE, chart="kueue-latest")) == "latest"


def test_release_plan():
    values = {"a": 1}
    before, after, changed = hi.release_plan(None, None, "0.19.2", values)
    assert (before, changed) == ({}, True)
    assert after == {"chart_version": "0.19.2", "status": "deployed", "values": values}
    assert hi.release_plan(RELEASE, values, "0.19.2", values)[2] is False
    assert hi.release_plan(RELEASE, values, "0.19.3", values)[2] is True
    assert hi.release_plan(RELEASE, {"a": 2}, "0.19.2", values)[2] is True
    assert hi.release_plan(dict(RELEASE, status="failed"), values, "0.19.2", values)[2] is True


def test_diff_hides_the_managed_extensions_values():
    before, after, _ = hi.release_plan(RELEASE, {"secret": "x"}, "0.19.2", {"a": 1})
    assert hi.diff_shown(before, after, extension=[]) == dict(before=before, after=after)
    shown = hi.diff_shown(before, after, extension=["kube-system/kueue-extension"])
    assert shown["before"] == dict(before, values=REDACTED) and shown["after"] == after
    assert before["values"] == {"secret": "x"}  # compared, never changed
    assert hi.diff_shown({}, after, extension=["x/y"]) == dict(before={}, after=after)


@pytest.mark.parametrize("text,timeout", [("Error: context deadline exceeded", True),
                                          ("timed out waiting for the condition", True),
                                          ("Error: UPGRADE FAILED: forbidden", False)])
def test_is_wait_timeout(text, timeout):
    assert hi.is_wait_timeout(KueueOpsError(text)) is timeout
    assert hi.is_wait_timeout(RuntimeError(text)) is timeout


def test_wait_timeout_error():
    exc = KueueOpsError("helm upgrade failed\nError: context deadline exceeded")
    err = hi.wait_timeout_error(exc, ["deployment/kueue-controller-manager: 0/1 ready"], 60, "kueue-system")
    assert err.message() == (
        "timeout: helm --wait gave up after 60s (timeout) with the release not ready: "
        "deployment/kueue-controller-manager: 0/1 ready; helm said: Error: context deadline exceeded. Fix: raise "
        "timeout, or look at why: kubectl -n kueue-system get deploy,pods; kueueops.aks.kueue_verify.")
    assert "no Deployment of namespace ns is unready now" in hi.wait_timeout_error(exc, [], 5, "ns").problem


def test_deleted_warning():
    assert hi.deleted_warning({"localqueues": 7, "clusterqueues": 2}) == (
        "helm uninstall deleted Kueue's CRDs and with them 2 clusterqueues, 7 localqueues")


@pytest.mark.parametrize("finalizers,held,body", [
    (None, None, None),
    (["kueue.x-k8s.io/resource-in-use"], None, {"metadata": {"finalizers": None, "resourceVersion": "7"}}),
    (["kueue.x-k8s.io/a", "example.com/keep"], "localqueues team/q (finalizers example.com/keep)",
     {"metadata": {"finalizers": ["example.com/keep"], "resourceVersion": "7"}}),
    (["example.com/keep"], "localqueues team/q (finalizers example.com/keep)", None),
])
def test_finalizer_patch(finalizers, held, body):
    meta = {"name": "q", "namespace": "team", "resourceVersion": "7"}
    if finalizers is not None:
        meta["finalizers"] = finalizers
    assert hi.finalizer_patch("localqueues", meta) == (held, body)


def test_finalizer_patch_cluster_scoped():
    held, _ = hi.finalizer_patch("clusterqueues", {"name": "cq", "resourceVersion": "1", "finalizers": ["x/y"]})
    assert held == "clusterqueues cq (finalizers x/y)"


def test_terminating_messages():
    crds = [{"metadata": {"name": "clusterqueues.kueue.x-k8s.io"}}]
    assert hi.crds_terminating_error(30, crds, []).message() == (
        "timeout: Kueue CRDs still terminating after 30s: clusterqueues.kueue.x-k8s.io. Fix: raise timeout, or "
        "remove those finalizers (whoever added them should).")
    assert "; objects held by finalizers that are not Kueue's: a; b" in hi.crds_terminating_error(
        30, crds, ["a", "b"]).problem
    ns = {"status": {"phase": "Terminating", "conditions": [
        {"status": "True", "message": "Some content remains"}, {"status": "False", "message": "fine"}]}}
    assert hi.namespace_terminating_error("kueue-system", 9, ns).problem == (
        "namespace kueue-system still terminating after 9s: Some content remains")
    assert hi.namespace_terminating_error("n", 9, {"status": {"phase": "Terminating"}}).problem.endswith(
        ": Terminating")


# ---- KueueHelm with fakes, up to the cluster ---------------------------------

def helm(**kw):
    calls = []
    runner = hi.KueueHelm(params(**kw), connect=lambda: calls.append("connect"), run_command=None)
    return runner, calls


def test_input_problems_before_connecting():
    runner, calls = helm(timeout=0)
    with pytest.raises(KueueOpsError):
        runner.run()
    assert calls == [] and runner.warnings == []


def test_fail_is_a_module_failure_without_warnings():
    with pytest.raises(ModuleFailure) as err:
        hi.KueueHelm.fail(KueueOpsError("broken", field="host", fix="mend it"), release=None, changed=False)
    assert err.value.result == {"msg": "host: broken. Fix: mend it.", "release": None, "changed": False}
    with pytest.raises(ModuleFailure) as err:
        hi.KueueHelm.fail(RuntimeError("plain"))
    assert err.value.result == {"msg": "plain"}


def test_find_helm(tmp_path, monkeypatch):
    binary = tmp_path / "helm"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    runner, _ = helm(binary_path=str(binary))
    assert runner.find_helm() == str(binary)
    monkeypatch.setenv("PATH", str(tmp_path))
    runner, _ = helm(binary_path="helm")
    assert runner.find_helm() == str(binary)
    runner, _ = helm(binary_path="no-such-helm")
    with pytest.raises(KueueOpsError) as err:
        runner.find_helm()
    assert err.value.field == "binary_path" and "PATH=%s" % tmp_path in err.value.problem
    runner, _ = helm(binary_path=str(tmp_path / "absent"))
    with pytest.raises(KueueOpsError) as err:
        runner.find_helm()
    assert "(looked in: %s)" % (tmp_path / "absent") in err.value.problem


class FakeRunner:
    """The HelmRunner calls resolve_version makes: show_chart answers from ``charts``, {version: Chart.yaml}."""

    def __init__(self, charts):
        self.charts = charts
        self.calls = []

    def show_chart(self, ref, version=None, plain_http=False, tls=None):
        self.calls.append((ref, version))
        if version not in self.charts:
            raise HelmError('Error: failed to perform "FetchReference" on source: %s:%s: not found'
                            % (ref[len("oci://"):], version))
        return self.charts[version]


def test_resolve_version():
    runner, _ = helm(chart_version="latest")
    fake = FakeRunner({None: {"version": "0.19.3"}})
    assert runner.resolve_version(fake) == "0.19.3"
    runner, _ = helm(chart_version=" v0.19.2 ")
    fake = FakeRunner({"0.19.2": {"version": "0.19.2"}})
    assert runner.resolve_version(fake) == "0.19.2"
    assert fake.calls == [("oci://registry.k8s.io/kueue/charts/kueue", "0.19.2")]
    runner, _ = helm(chart_version="latest")
    with pytest.raises(KueueOpsError) as err:
        runner.resolve_version(FakeRunner({None: {}}))
    assert err.value.field == "chart_ref" and "has no version" in err.value.problem


class Registry(FakeRunner):
    """show_chart as helm resolves it against a registry publishing ``tags``: no version is the highest that is not a
    pre-release; an exact version must be published; a range (``>=0.18.0 <0.19.0, !=0.18.1``) is the highest tag in
    it. The decisions of resolve_version are unit-tested on it; the real helm is in tests/integration."""

    def __init__(self, tags):
        FakeRunner.__init__(self, {})
        self.tags = tags

    def show_chart(self, ref, version=None, plain_http=False, tls=None):
        self.calls.append((ref, version))
        key = hi.versions.parse

        def matches(tag):
            if version is None:
                return key(tag).suffix == ""
            if " " not in version:
                return tag == version
            ok = key(tag).suffix == ""
            for term in version.replace(",", " ").split():
                op, bound = term[:2].strip("0123456789."), term.lstrip("<>=!")
                ok = ok and {">=": key(tag).core >= key(bound).core, "<": key(tag).core < key(bound).core,
                             "!=": tag != bound}[op]
            return ok
        found = sorted((t for t in self.tags if matches(t)), key=lambda t: key(t).core)
        if not found:
            raise HelmError("Error: could not locate a version matching %s" % version if version and " " in version
                            else 'Error: failed to perform "FetchReference" on source: %s:%s: not found' % (ref, version))
        return {"version": found[-1]}


@pytest.fixture
def broken_020(monkeypatch):
    monkeypatch.setattr(release_train.catalog.catalog_for("0.20"), "broken_patches", dict(
        ("0.20.%d" % n, {"reason": "its CRDs name the conversion webhook", "fixed_in": "0.20.6"}) for n in range(6)))


def test_latest_on_an_installed_kueue_stays_on_its_minor_and_names_the_newer_one():
    runner, _ = helm(chart_version="latest")
    registry = Registry(["0.18.2", "0.18.4", "0.19.2", "0.20.0-rc.1"])
    assert runner.resolve_version(registry, installed="0.18.2") == "0.18.4"  # a patch within the minor
    assert [v for _ref, v in registry.calls] == [None, ">=0.18.0 <0.19.0"]
    assert len(runner.notices) == 1 and runner.notices == runner.warnings
    assert runner.notices[0].startswith("Kueue 0.19.2 is published, a newer minor than the installed 0.18.2")
    assert "playbooks/upgrade.yml --check" in runner.notices[0]
    runner, _ = helm(chart_version="latest")
    assert runner.resolve_version(Registry(["0.18.4", "0.19.2"]), installed="0.19.2") == "0.19.2"
    assert runner.notices == []


def test_a_pin_of_another_minor_on_an_installed_kueue_is_refused_before_the_registry():
    runner, _ = helm(chart_version="0.19.2")
    registry = Registry(["0.18.4", "0.19.2"])
    with pytest.raises(KueueOpsError) as err:
        runner.resolve_version(registry, installed="0.18.4")
    assert err.value.field == "chart_version" and "playbooks/upgrade.yml" in err.value.message()
    assert registry.calls == []
    runner, _ = helm(chart_version="0.19.2", allow_minor_change=True)  # the upgrade role's hop
    runner.cluster = crd_listing(["v1beta2"])
    assert runner.resolve_version(registry, installed="0.18.4") == "0.19.2"
    runner, _ = helm(chart_version="0.18.2")  # a patch of the installed minor, down or up, is an install's business
    assert runner.resolve_version(Registry(["0.18.2", "0.18.4"]), installed="0.18.4") == "0.18.2"


def crd_listing(stored):
    """What the check before a hop reads: the Kueue CRDs with these storedVersions."""
    return FakeCluster(collections={"/apis/apiextensions.k8s.io/v1/customresourcedefinitions": [
        {"metadata": {"name": "clusterqueues.kueue.x-k8s.io"},
         "spec": {"group": "kueue.x-k8s.io", "versions": [{"name": "v1beta2", "storage": True}]},
         "status": {"storedVersions": list(stored)}}]})


def test_a_hop_is_refused_while_a_crd_stores_a_version_the_target_does_not_serve():
    runner, _ = helm(chart_version="0.20.6", allow_minor_change=True)
    runner.cluster = crd_listing(["v1beta1", "v1beta2"])
    registry = Registry(["0.19.2", "0.20.6"])
    with pytest.raises(KueueOpsError) as err:
        runner.resolve_version(registry, installed="0.19.2")
    assert err.value.field == "chart_version" and "storedVersions of clusterqueues.kueue.x-k8s.io" in err.value.problem
    assert registry.calls == []


def test_broken_patches_are_never_chosen_and_refused_when_pinned(broken_020):
    runner, _ = helm(chart_version="0.20.5")
    registry = Registry(["0.19.2", "0.20.5"])
    with pytest.raises(KueueOpsError) as err:
        runner.resolve_version(registry)
    assert "Kueue 0.20.5 is known to be broken" in err.value.message() and "pin 0.20.6" in err.value.message()
    assert registry.calls == []
    runner, _ = helm(chart_version="latest")  # fresh: 0.20.5 is the newest published, and broken
    registry = Registry(["0.19.2", "0.20.4", "0.20.5"])
    assert runner.resolve_version(registry) == "0.19.2"
    assert ">=0.20.0 <0.21.0, !=0.20.0, !=0.20.1, !=0.20.2, !=0.20.3, !=0.20.4, !=0.20.5" in [
        v for _ref, v in registry.calls]
    runner, _ = helm(chart_version="latest")  # installed on a broken patch: latest takes the first good one
    assert runner.resolve_version(Registry(["0.20.3", "0.20.6"]), installed="0.20.3") == "0.20.6"


def test_latest_on_a_fresh_cluster_never_takes_a_minor_the_catalog_does_not_know():
    runner, _ = helm(chart_version="latest")
    registry = Registry(["0.18.4", "0.19.2", "9.1.0"])
    assert runner.resolve_version(registry) == "0.19.2"
    assert any("does not know 9.1" in n for n in runner.notices)
    runner, _ = helm(chart_version="latest")
    with pytest.raises(KueueOpsError) as err:
        runner.resolve_version(Registry(["9.1.0"]))
    assert err.value.field == "chart_version" and "no good release of a Kueue minor this collection knows" in (
        err.value.problem)


def test_latest_fails_when_the_installed_minor_is_not_published():
    runner, _ = helm(chart_version="latest")
    with pytest.raises(KueueOpsError) as err:
        runner.resolve_version(Registry(["0.19.2"]), installed="0.17.0")
    assert err.value.field == "chart_version" and "the installed minor 0.17" in err.value.problem


def test_a_pinned_version_not_published_names_the_newest():
    runner, _ = helm(chart_version="0.1.0")
    fake = FakeRunner({None: {"version": "0.19.3"}})
    with pytest.raises(KueueOpsError) as err:
        runner.resolve_version(fake)
    assert err.value.message() == ("chart_version: version 0.1.0 is not published in "
                                   "oci://registry.k8s.io/kueue/charts/kueue. Fix: give a published version (the "
                                   "newest is 0.19.3), or latest.")
    assert [version for _ref, version in fake.calls] == ["0.1.0", None]


def test_resolve_version_local_chart(tmp_path):
    runner, _ = helm(chart_ref=str(tmp_path), chart_version="latest")
    fake = FakeRunner({None: {"version": "0.19.2"}})
    assert runner.resolve_version(fake) == "0.19.2"
    runner, _ = helm(chart_ref=str(tmp_path / "absent"))
    with pytest.raises(KueueOpsError) as err:
        runner.resolve_version(fake)
    assert err.value.field == "chart_ref" and "neither an oci:// reference nor an existing chart path" in (
        err.value.problem)


def test_defaults_of_the_narrow_interface():
    runner = hi.KueueHelm(params(), connect=None, run_command=None)
    assert (runner.check_mode, runner.diff_mode, runner.no_log_values, runner.warnings) == (False, False, set(), [])
