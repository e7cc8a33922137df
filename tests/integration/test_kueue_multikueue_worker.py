"""kueueops.aks.kueue_multikueue_worker (issue 18, the worker side of MultiKueue) on the real local control plane:
the real kube-apiserver issues, binds, reviews and rejects the tokens, the real kube-controller-manager fills the
legacy token Secret and publishes kube-root-ca.crt, and the returned kubeconfig is used as the MultiKueue manager
would use it. Kueue itself is not needed (the module only needs its namespace): the test makes a namespace of its
own, ``mkw-system``, and removes it and everything named ``mkw-*`` afterwards.

Three ansible-playbook runs in all (each task's result is read from the run): the first prepares and re-runs,
the second revokes and switches the token type, the third removes (its wait for the deleted objects kept pending
by a finalizer first: the drill of that wait, tests/reliability/test_faults.py's WAITS).
"""
from __future__ import annotations

import base64
import json
import sys

import pytest
import yaml
from kubernetes import client, config

from .ansible import COLLECTIONS, run_playbook
from .kubeutil import delete_namespace, wait_for

# The collection as the modules see it (`make venv` links this checkout there).
if COLLECTIONS not in sys.path:
    sys.path.insert(0, COLLECTIONS)
from ansible_collections.kueueops.aks.plugins.module_utils.kueue import multikueue  # noqa: E402
from ansible_collections.kueueops.aks.plugins.module_utils.multikueue import multikueue_worker as mw  # noqa: E402
from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import REDACTED  # noqa: E402

NS, SA, OTHER = "mkw-system", "mkw-sa", "mkw-not-ours"
LABEL = "kueueops.aks/multikueue-worker=" + SA
MODULE = "kueueops.aks.kueue_multikueue_worker"


def _cleanup(kube):
    rbac = client.RbacAuthorizationV1Api(kube)
    for delete in (rbac.delete_cluster_role_binding, rbac.delete_cluster_role):
        for name in (SA, OTHER):
            try:
                delete(name)
            except client.exceptions.ApiException as exc:
                if exc.status != 404:
                    raise
    delete_namespace(kube, NS)


@pytest.fixture
def worker_ns(cluster, kube):
    _cleanup(kube)
    client.CoreV1Api(kube).create_namespace({"metadata": {"name": NS}})
    # kube-controller-manager publishes the cluster CA in every namespace; the ConfigMap test below needs it.
    wait_for("kube-root-ca.crt in " + NS, lambda: client.CoreV1Api(kube).list_namespaced_config_map(
        NS, field_selector="metadata.name=kube-root-ca.crt").items, timeout=30)
    yield kube
    _cleanup(kube)


def task(name, check=False, **args):
    out = {"name": name, MODULE: dict({"namespace": NS, "service_account": SA, "cluster_name": "mkw-worker"}, **args)}
    if check:
        out["check_mode"] = True
    return out


def play(*tasks):
    return [{"name": "multikueue worker", "hosts": "local", "gather_facts": False, "tasks": list(tasks)}]


def token_of(result):
    users = yaml.safe_load(result["kubeconfig"])["users"]
    assert len(users) == 1
    return users[0]["user"]["token"]


def api(kubeconfig_text):
    """A client of the kubeconfig the module returned, loaded as the manager would load it."""
    return config.new_client_from_config_dict(yaml.safe_load(kubeconfig_text))


def status_of(call):
    """The HTTP status of a call: 200, or the ApiException's."""
    try:
        call()
    except client.exceptions.ApiException as exc:
        return exc.status
    return 200


def jobs_status(kubeconfig_text):
    return status_of(lambda: client.BatchV1Api(api(kubeconfig_text)).list_job_for_all_namespaces(limit=1))


def labelled(kube):
    """The objects carrying this test's worker label, as Kind/name."""
    core, rbac = client.CoreV1Api(kube), client.RbacAuthorizationV1Api(kube)
    out = ["ServiceAccount/" + o.metadata.name for o in core.list_namespaced_service_account(NS, label_selector=LABEL).items]
    out += ["Secret/" + o.metadata.name for o in core.list_namespaced_secret(NS, label_selector=LABEL).items]
    out += ["ClusterRole/" + o.metadata.name for o in rbac.list_cluster_role(label_selector=LABEL).items]
    out += ["ClusterRoleBinding/" + o.metadata.name for o in rbac.list_cluster_role_binding(label_selector=LABEL).items]
    return sorted(out)


def test_prepare_reuse_rotate_revoke_switch_type_and_remove(cluster, worker_ns, tmp_path):
    kube = worker_ns
    core = client.CoreV1Api(kube)
    # A connection without a CA (insecure-skip-tls-verify): the CA comes from the kube-root-ca.crt ConfigMap.
    with open(cluster.kubeconfig) as handle:
        insecure = json.load(handle)
    insecure["clusters"][0]["cluster"].pop("certificate-authority-data")
    insecure["clusters"][0]["cluster"]["insecure-skip-tls-verify"] = True
    insecure_path = tmp_path / "insecure.kubeconfig"
    insecure_path.write_text(json.dumps(insecure))
    insecure_path.chmod(0o600)

    # ---- run 1: check mode first, then prepare, re-run, rotate
    first_run = run_playbook(play(
        task("look-first", check=True),
        {"name": "labelled objects after the look", "changed_when": False,
         "ansible.builtin.command": "kubectl get serviceaccount,secret,clusterrole,clusterrolebinding -A -l %s -o name" % LABEL},
        task("configmap ca", check=True, kubeconfig=str(insecure_path)),
        task("prepare"),
        task("again"),
        task("rotation", rotate=True),
        task("look-after", check=True),
    ))
    assert first_run.rc == 0, first_run
    preview, prepare, again, rotate = (first_run.result(n) for n in ("look-first", "prepare", "again", "rotation"))
    # check mode: what it would do, with the token redacted, and nothing written
    assert preview["changed"] and preview["would_issue"] and preview["token"]["reason"] == "none yet"
    assert preview["token"]["issued"] is False and preview["token"]["name"] is None
    assert preview["rbac_changed"] == ["ServiceAccount", "ClusterRole", "ClusterRoleBinding"]
    assert token_of(preview) == REDACTED
    assert first_run.result("labelled objects after the look")["stdout"] == ""
    configmap_ca = first_run.result("configmap ca")
    ca_crt = core.read_namespaced_config_map("kube-root-ca.crt", NS).data["ca.crt"]
    assert configmap_ca["ca_source"] == "kube-root-ca.crt"
    assert yaml.safe_load(configmap_ca["kubeconfig"])["clusters"][0]["cluster"]["certificate-authority-data"] == \
        base64.b64encode(ca_crt.encode()).decode()
    # the first real run: objects, a bound token, a kubeconfig with the connection's server and CA
    assert prepare["changed"] and prepare["token"]["issued"] and prepare["token"]["reason"] == "none yet"
    assert prepare["server"] == cluster.server and prepare["ca_source"] == "connection"
    holder = core.read_namespaced_secret(prepare["token"]["name"], NS)
    assert holder.type == "Opaque" and holder.metadata.labels == {
        "app.kubernetes.io/managed-by": "kueueops", "kueueops.aks/multikueue-worker": SA,
        "kueueops.aks/multikueue-token": SA}
    assert holder.metadata.name.startswith(SA + "-token-") and len(holder.metadata.name) == len(SA) + 12
    assert holder.metadata.annotations[mw.EXPIRES_ANNOTATION] == prepare["token"]["expires"]
    assert base64.b64decode(holder.data["token"]).decode() == token_of(prepare)
    role = client.RbacAuthorizationV1Api(kube).read_cluster_role(SA)
    assert [kube.sanitize_for_serialization(r) for r in role.rules] == mw.CLUSTER_ROLE_RULES
    assert labelled(kube) == sorted(["ServiceAccount/" + SA, "ClusterRole/" + SA, "ClusterRoleBinding/" + SA,
                                     "Secret/" + holder.metadata.name, "Secret/" + rotate["token"]["name"]])
    # the kubeconfig works, and the role is not wider: Jobs cluster-wide yes, Secrets no
    first_kubeconfig = prepare["kubeconfig"]
    assert multikueue.kubeconfig_problems(first_kubeconfig) == []
    assert jobs_status(first_kubeconfig) == 200
    assert status_of(lambda: client.CoreV1Api(api(first_kubeconfig)).list_namespaced_secret(NS)) == 403
    # a re-run changes nothing and returns the same token
    assert not again["changed"] and again["token"]["reason"] is None and not again["token"]["issued"]
    assert again["kubeconfig"] == first_kubeconfig and again["rbac_changed"] == []
    # rotation: a new token, the old one still valid (the manager has not switched yet)
    assert rotate["changed"] and rotate["token"]["reason"] == "rotate" and rotate["revoked"] == []
    assert token_of(rotate) != token_of(prepare) and rotate["token"]["name"] != prepare["token"]["name"]
    assert jobs_status(rotate["kubeconfig"]) == 200 and jobs_status(first_kubeconfig) == 200
    # check mode after the rotation reuses the newest, still without showing it
    later = first_run.result("look-after")
    assert not later["changed"] and not later["would_issue"] and later["token"]["name"] == rotate["token"]["name"]
    assert token_of(later) == REDACTED
    secrets_seen = [token_of(prepare), token_of(rotate)]
    for name in ("look-first", "configmap ca", "look-after"):
        assert not [s for s in secrets_seen if s in json.dumps(first_run.result(name))], name

    # ---- run 2: revoke the older token, switch to a legacy Secret token (the rotated one kept)
    second_run = run_playbook(play(
        task("revoke-1", revoke_previous=True),
        task("revoke-2", revoke_previous=True),
        task("legacy-1", token_type="secret"),
        task("legacy-2", token_type="secret"),
    ))
    assert second_run.rc == 0, second_run
    revoke, revoke_again, legacy, legacy_again = (second_run.result(n) for n in (
        "revoke-1", "revoke-2", "legacy-1", "legacy-2"))
    assert revoke["changed"] and revoke["revoked"] == [prepare["token"]["name"]]
    assert token_of(revoke) == token_of(rotate) and revoke["token"]["reason"] is None
    assert not revoke_again["changed"] and revoke_again["revoked"] == []
    # the revoked token is rejected (its bound Secret is gone), the current one works
    wait_for("the revoked token to be rejected", lambda: jobs_status(first_kubeconfig) == 401, timeout=30)
    assert jobs_status(revoke["kubeconfig"]) == 200
    assert legacy["changed"] and legacy["token"]["reason"] == "type changed" and legacy["token"]["expires"] is None
    assert core.read_namespaced_secret(legacy["token"]["name"], NS).type == "kubernetes.io/service-account-token"
    assert jobs_status(legacy["kubeconfig"]) == 200 and jobs_status(rotate["kubeconfig"]) == 200
    assert not legacy_again["changed"] and legacy_again["kubeconfig"] == legacy["kubeconfig"]

    # ---- run 3: remove everything (and leave what is not ours); a finalizer holds the legacy token's Secret in the
    # first removal, which runs out of its timeout naming it, and the next run converges once it is lifted
    core.create_namespaced_service_account(NS, {"metadata": {"name": OTHER}})
    held = legacy["token"]["name"]
    core.patch_namespaced_secret(held, NS, {"metadata": {"finalizers": ["kueueops.test/hold"]}})
    third_run = run_playbook(play(
        task("remove-look", check=True, state="absent"),
        dict(task("remove-held", state="absent", timeout=2), ignore_errors=True),
        {"name": "lift the finalizer", "changed_when": False, "ansible.builtin.command":
            "kubectl patch secret -n %s %s --type=merge -p '{\"metadata\":{\"finalizers\":null}}'" % (NS, held)},
        task("remove-1", state="absent"),
        task("remove-2", state="absent"),
        task("not ours", state="absent", service_account=OTHER),
    ))
    assert third_run.rc == 0, third_run
    look, stuck, remove_again, not_ours = (third_run.result(n) for n in (
        "remove-look", "remove-held", "remove-2", "not ours"))
    assert look["changed"] and sorted(look["deleted"]) == sorted([
        "Secret/" + rotate["token"]["name"], "Secret/" + held, "ClusterRoleBinding/" + SA, "ClusterRole/" + SA,
        "ServiceAccount/" + SA])
    assert stuck["failed"] and stuck["msg"].startswith("timeout: still present 2s after their deletion: Secret/" + held)
    assert "Fix: raise timeout" in stuck["msg"]
    assert labelled(kube) == []  # remove-1 converged (the run's rc is 0)
    assert not remove_again["changed"] and remove_again["deleted"] == []
    assert not not_ours["changed"] and not_ours["deleted"] == []
    assert any("ServiceAccount %s in namespace %s has no label" % (OTHER, NS) in w for w in not_ours["warnings"])
    assert core.read_namespaced_service_account(OTHER, NS)
    for kubeconfig in (rotate["kubeconfig"], legacy["kubeconfig"]):
        wait_for("the removed tokens to be rejected", lambda k=kubeconfig: jobs_status(k) == 401, timeout=30)
