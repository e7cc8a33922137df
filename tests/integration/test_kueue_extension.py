"""kueueops.aks.kueue_extension end to end (issue 6): real ansible-playbook, the real Azure SDK and
azure-identity over HTTPS against the ARM emulator (tests/emulators/arm), which really installs Kueue
into the real local control plane, the way AKS does for the managed extension.

Every test starts from the emulator's defaults (the `arm_control` fixture resets faults, cluster
properties and the request log) and leaves no extension behind.
"""
from __future__ import annotations

import os
import stat

import pytest
from kubernetes import client, config

from .ansible import run_playbook
from .kubeutil import kueue_crds, wait_for

PROTECTED = "prot-s3cret-value-4711"
# The preflight reads Deployments with the credentials the module fetches from ARM, not the harness's.
NO_KUBE_OPTIONS = {"K8S_AUTH_KUBECONFIG": ""}


def ext_args(**kw):
    args = {"resource_group": os.environ["AKS_RESOURCE_GROUP"], "cluster_name": os.environ["AKS_CLUSTER_NAME"],
            "timeout": 300}
    args.update(kw)
    return args


def play(args, no_log=False, name="Manage the Kueue extension"):
    task = {"name": name, "kueueops.aks.kueue_extension": args}
    if no_log:
        task["no_log"] = True
    return [{"name": "Extension", "hosts": "local", "gather_facts": False, "tasks": [task]}]


def run(args, check=False, diff=False, env=None, **kw):
    full_env = dict(NO_KUBE_OPTIONS)
    full_env.update(env or {})
    return run_playbook(play(args, **kw), check=check, diff=diff, env=full_env)


def writes(ctl):
    return ctl.writes(path="/extensions/")


def deployments_ready(kube, namespace="kueue-system"):
    apps = client.AppsV1Api(kube)
    ready = {}
    for name in ("kueue-controller-manager", "kueue-extension"):
        try:
            ready[name] = apps.read_namespaced_deployment(name, namespace).status.available_replicas or 0
        except client.exceptions.ApiException as exc:
            if exc.status != 404:
                raise
            ready[name] = None
    return ready


@pytest.fixture
def no_extension(arm, arm_control):
    """Remove the extension (and what it installed) after the test, whatever happened."""
    yield arm_control
    arm_control.reset()
    res = run(ext_args(state="absent"))
    if res.rc != 0:  # the failure is the test's to report; leave a clean cluster for the next one
        res = run(ext_args(state="absent", force_delete=True))
    assert res.rc == 0, res.stdout[-3000:]


def test_install_idempotent_check_diff_settings_credentials_uninstall(cluster, kube, arm, no_extension, tmp_path):
    ctl = no_extension
    dest = str(tmp_path / "aks.kubeconfig")
    base = ext_args(kubeconfig_dest=dest, configuration_protected_settings={"token": PROTECTED})

    # 1. Check mode + diff: would create, preflight ran, nothing written in ARM or on disk.
    check = run(base, check=True, diff=True)
    assert check.rc == 0, check.stdout[-3000:]
    res = check.result("Manage the Kueue extension")
    assert res["changed"] is True and res["operation"] == "created"
    assert res["preflight"]["ran"] is True and res["preflight"]["kubernetes_version"] == cluster.kubernetes_version().lstrip("v")
    assert res["preflight"]["kueue_deployments"] == []
    assert res["diff"]["before"] == {}
    assert res["diff"]["after"]["release_train"] == "preview"
    assert res["diff"]["after"]["configuration_protected_settings"] == {"token": "VALUE_REDACTED_BY_KUEUEOPS"}
    assert any("preview" in w for w in res.get("warnings", []))
    assert writes(ctl) == [] and not os.path.exists(dest)

    # 2. Install: Kueue really installed by the extension, both Deployments ready.
    first = run(base, diff=True)
    assert first.rc == 0, first.stdout[-3000:]
    res = first.result("Manage the Kueue extension")
    assert res["changed"] is True and res["operation"] == "created"
    props = res["extension"]["properties"]
    assert props["provisioningState"] == "Succeeded" and props["extensionState"] in ("Available", "Ready")
    assert props["extensionType"] == "microsoft.kueue" and props["releaseTrain"].lower() == "preview"
    assert props["currentVersion"] and props["autoUpgradeMinorVersion"] is True
    assert props["scope"] == {"cluster": {"releaseNamespace": "kueue-system"}}
    assert [m for m, _p in writes(ctl)] == ["PUT"]
    ready = deployments_ready(kube)
    assert ready["kueue-controller-manager"] >= 1 and ready["kueue-extension"] >= 1, ready
    assert PROTECTED not in first.stdout + first.stderr

    # The kubeconfig file: 0600 and usable.
    assert res["kubeconfig_path"] == dest
    assert stat.S_IMODE(os.stat(dest).st_mode) == 0o600
    api = config.new_client_from_config(dest)
    names = [d.metadata.name for d in client.AppsV1Api(api).list_namespaced_deployment("kueue-system").items]
    assert {"kueue-controller-manager", "kueue-extension"} <= set(names)

    # A stale or too open file is replaced (check mode only says so).
    with open(dest, "w") as handle:
        handle.write("stale")
    os.chmod(dest, 0o644)
    check = run(base, check=True)
    res = check.result("Manage the Kueue extension")
    assert check.rc == 0 and res["changed"] is True and res["operation"] == "none"
    assert open(dest).read() == "stale"
    fixed = run(base)
    assert fixed.rc == 0 and fixed.result("Manage the Kueue extension")["operation"] == "none"
    assert stat.S_IMODE(os.stat(dest).st_mode) == 0o600 and open(dest).read() != "stale"
    # The file is rewritten only when it differs: the same run again changes nothing.
    written = os.stat(dest).st_mtime_ns
    same = run(base)
    assert same.rc == 0 and same.changed == 0, "the kubeconfig file was rewritten: " + same.stdout[-3000:]
    assert os.stat(dest).st_mtime_ns == written
    assert [m for m, _p in writes(ctl)] == ["PUT"]

    # 3. Second run without kubeconfig_dest: changed=0, nothing written (protected settings are not re-sent:
    #    on_create).
    base = dict(base, kubeconfig_dest=None)
    ctl.clear_requests()
    again = run(base)
    assert again.rc == 0 and again.changed == 0, again.stdout[-3000:]
    assert again.result("Manage the Kueue extension")["preflight"] == {"ran": False}
    assert writes(ctl) == []

    # 4. configuration_settings: check mode + diff first, then a real PATCH; then idempotent.
    settings = dict(base, configuration_settings={"controllerManager.replicas": 1, "kueueops.example": True})
    check = run(settings, check=True, diff=True)
    res = check.result("Manage the Kueue extension")
    assert check.rc == 0 and res["changed"] is True and res["changes"] == ["configuration_settings"]
    assert res["diff"]["before"]["configuration_settings"] == {}
    assert res["diff"]["after"]["configuration_settings"] == {"controllerManager.replicas": "1",
                                                              "kueueops.example": "true"}
    assert writes(ctl) == []
    update = run(settings, diff=True)
    assert update.rc == 0, update.stdout[-3000:]
    res = update.result("Manage the Kueue extension")
    assert res["operation"] == "updated"
    assert res["extension"]["properties"]["configurationSettings"] == {"controllerManager.replicas": "1",
                                                                       "kueueops.example": "true"}
    assert [m for m, _p in writes(ctl)] == ["PATCH"]
    assert run(settings).changed == 0

    # 5. Rotating a protected setting: update_protected_settings=always sends it (and says so).
    ctl.clear_requests()
    rotate = run(dict(settings, update_protected_settings="always"), diff=True)
    assert rotate.rc == 0 and rotate.changed == 1, rotate.stdout[-3000:]
    assert [m for m, _p in writes(ctl)] == ["PATCH"]
    assert PROTECTED not in rotate.stdout + rotate.stderr

    # 6. Absent: check mode deletes nothing; then the extension and every Kueue object are gone.
    ctl.clear_requests()
    check = run(ext_args(state="absent"), check=True)
    assert check.rc == 0 and check.changed == 1 and writes(ctl) == []
    gone = run(ext_args(state="absent"))
    assert gone.rc == 0 and gone.changed == 1, gone.stdout[-3000:]
    res = gone.result("Manage the Kueue extension")
    assert res["operation"] == "deleted"
    assert any("every Kueue custom resource" in w for w in res.get("warnings", []))
    assert [m for m, _p in writes(ctl)] == ["DELETE"]
    ready = deployments_ready(kube)
    assert ready == {"kueue-controller-manager": None, "kueue-extension": None}, ready
    wait_for("the Kueue CRDs to be gone", lambda: kueue_crds(kube) == [], timeout=120)
    assert run(ext_args(state="absent")).changed == 0


def test_pinned_version_then_release_train_through_throttling_and_transient_errors(cluster, kube, arm, no_extension):
    ctl = no_extension
    # The versions in AKS's form (0.19.2-aks.0.4.4), each installing the Kueue chart of the same core version.
    newest, previous = os.environ["KUEUE_EXTENSION_VERSIONS"].split()[:2]
    pinned = ext_args(version="v" + previous)
    # The install goes through ARM's throttling and transient errors, retried: two 500s on the first GETs of the
    # cluster, two 429s (Retry-After: 1) on the PUT (one install for both claims: each install is a real Helm
    # install of Kueue and its removal).
    ctl.fault(500, count=2, method="GET", path="/managedClusters/")
    ctl.fault(429, count=2, method="PUT", path="/extensions/", retry_after=1)
    first = run(pinned)
    assert first.rc == 0, first.stdout[-3000:]
    assert first.result("Manage the Kueue extension")["extension"]["properties"]["provisioningState"] == "Succeeded"
    puts = [r["status"] for r in ctl.requests(method="PUT", path="/extensions/")]
    assert puts[:2] == [429, 429] and puts[2] in (200, 201), puts
    cluster_gets = [r["status"] for r in ctl.requests(method="GET", path="/managedClusters/")
                    if "/extensions/" not in r["path"]]
    assert cluster_gets[:3] == [500, 500, 200], cluster_gets
    # The preflight read what the release train offers the cluster (ExtensionTypes_ClusterListVersions).
    assert first.result("Manage the Kueue extension")["preflight"]["offered_versions"] == \
        os.environ["KUEUE_EXTENSION_VERSIONS"].split()
    props = first.result("Manage the Kueue extension")["extension"]["properties"]
    # A pin is sent with autoUpgradeMinorVersion=false (the API refuses a version otherwise), mode none.
    assert props["version"] == previous and props["currentVersion"] == previous
    assert props["autoUpgradeMinorVersion"] is False and props["autoUpgradeMode"] == "none"
    apps = client.AppsV1Api(kube)
    image = apps.read_namespaced_deployment("kueue-controller-manager", "kueue-system").spec.template.spec.containers[0].image
    assert image.endswith(":v" + previous.split("-aks.")[0]), image
    assert run(pinned).changed == 0

    ctl.clear_requests()
    train = run(ext_args(), diff=True)
    assert train.rc == 0, train.stdout[-3000:]
    res = train.result("Manage the Kueue extension")
    assert res["operation"] == "updated" and res["changes"] == ["version"]
    assert res["diff"]["before"]["version"] == previous and res["diff"]["after"]["version"] is None
    props = res["extension"]["properties"]
    assert props["autoUpgradeMinorVersion"] is True and props["currentVersion"] == newest
    assert [m for m, _p in writes(ctl)] == ["PATCH"]
    assert run(ext_args()).changed == 0


def test_version_the_train_does_not_offer_fails_before_any_write(arm, no_extension):
    """A well-formed version that ARM does not offer the cluster, or a release train offering nothing, fails in
    the preflight (check mode too), naming the option and what is offered; nothing is written to ARM."""
    ctl = no_extension
    newest, previous = os.environ["KUEUE_EXTENSION_VERSIONS"].split()[:2]
    ctl.offers({"preview": [previous], "stable": []})
    for check in (True, False):
        res = run(ext_args(version=newest), check=check)
        assert res.rc != 0, res.stdout[-3000:]
        msg = res.failure_messages()[0]
        assert msg.startswith("version: ") and "%s is not a version of microsoft.kueue offered" % newest in msg, msg
        assert "release train preview (offered: %s)" % previous in msg and "omit version" in msg, msg
    res = run(ext_args(release_train="stable"))
    assert res.rc != 0
    msg = res.failure_messages()[0]
    assert msg.startswith("release_train: ") and "release train stable offers no version" in msg, msg
    assert writes(ctl) == []
    assert len(ctl.requests(method="GET", path="/extensionTypes/microsoft.kueue/versions")) == 3
    # What the train offers passes the preflight (check mode: a pinned version's install is
    # test_pinned_version_then_release_train_through_throttling_and_transient_errors).
    ok = run(ext_args(version=previous, preflight=True), check=True)
    assert ok.rc == 0, ok.stdout[-3000:]
    res = ok.result("Manage the Kueue extension")
    assert res["changed"] is True and res["operation"] == "created"
    assert res["preflight"]["ran"] is True and res["preflight"]["offered_versions"] == [previous]
    assert writes(ctl) == []


def test_unreadable_offered_versions_warn_and_leave_the_version_to_arm(arm, no_extension):
    """Without permission to read extension types (a custom role), the preflight warns, with ARM's reason, and
    goes on: ARM still checks the version when the extension is written."""
    ctl = no_extension
    ctl.fault(403, count=1, path="/extensionTypes/")
    res = run(ext_args(), check=True)
    assert res.rc == 0, res.stdout[-3000:]
    result = res.result("Manage the Kueue extension")
    assert result["changed"] and result["preflight"]["offered_versions"] is None
    warning = [w for w in result.get("warnings", []) if "offered versions were not checked" in w]
    assert warning and "AuthorizationFailed" in warning[0] and "extensionTypes/versions/read" in warning[0], warning
    assert writes(ctl) == []


@pytest.mark.parametrize("properties,needle", [
    ({"kubernetesVersion": "1.33.7", "currentKubernetesVersion": "1.33.7"}, "Kubernetes 1.33.7"),
    ({"sku": {"name": "Automatic", "tier": "Standard"}}, "AKS Automatic"),
    ({"nodeProvisioningProfile": {"mode": "Auto"}}, "node auto-provisioning"),
], ids=["k8s-1.33", "automatic", "nap-auto"])
def test_preflight_refuses_before_any_put(arm, arm_control, properties, needle):
    arm_control.cluster(**properties)
    for check in (True, False):
        res = run(ext_args(), check=check)
        assert res.rc != 0, res.stdout[-3000:]
        msg = res.failure_messages()[0]
        assert needle in msg and "Fix:" in msg and "preflight failed" in msg
    assert writes(arm_control) == []
    assert arm_control.extensions() == []


def test_failed_provisioning_reports_error_info(arm, no_extension):
    ctl = no_extension
    ctl.provisioning(fail={"code": "ExtensionOperationFailed", "message": "helm install timed out after 10m"})
    res = run(ext_args())
    assert res.rc != 0
    msg = res.failure_messages()[0]
    assert "Failed" in msg and "ExtensionOperationFailed" in msg and "helm install timed out after 10m" in msg


def test_wrong_secret_is_an_auth_error_without_the_secret(arm, arm_control):
    wrong = "wrong-Secret-Value-0815"
    res = run(ext_args(), env={"AZURE_SECRET": wrong})
    assert res.rc != 0
    msg = res.failure_messages()[0]
    assert "authentication to Azure failed" in msg and msg.startswith("secret: "), msg
    assert wrong not in res.stdout and wrong not in res.stderr
    assert writes(arm_control) == []


def test_unknown_cluster_names_the_option(arm, arm_control):
    res = run(ext_args(cluster_name="no-such-cluster"))
    assert res.rc != 0
    msg = res.failure_messages()[0]
    assert msg.startswith("cluster_name: ") and "no-such-cluster" in msg, msg


def test_return_kubeconfig_needs_no_log(arm, arm_control):
    res = run(ext_args(return_kubeconfig=True))
    assert res.rc != 0 and res.failure_messages()[0].startswith("return_kubeconfig: ")


# Last: the module-scoped `kueue` fixture (Helm-installed OSS Kueue) stays until the module ends.
def test_preflight_refuses_unmanaged_kueue(arm, arm_control, kueue):
    res = run(ext_args())
    assert res.rc != 0
    msg = res.failure_messages()[0]
    assert "kueue-system/kueue-controller-manager" in msg and "playbooks/migrate.yml" in msg, msg
    assert writes(arm_control) == []
