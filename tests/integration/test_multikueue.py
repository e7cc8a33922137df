"""MultiKueue across the clusters of the inventory (issue 18), on three local control planes, each with its own real
Kueue manager installed by the role: worker-1 is the session cluster behind the ARM emulator, reached with the AKS
credentials ARM gives and installed as the AKS managed extension; the manager and worker-2 are started here and
installed with Helm. playbooks/multikueue.yml wires them; the tests prove the inputs refused
before any write, the chart's default integrations refused before any write when the workers lack their kinds (every
missing kind of every worker named at once; check mode the same; issue 44), the whole wiring with those defaults once
the workers serve the kinds (as installing the operators' CRDs does) with a Job dispatched to a worker and admitted
there, changed=0 on a re-run, token rotation without a pause, a worker whose API server is down named by verify, a worker removed from the
inventory, the manager's backup holding every MultiKueue object, and a queue kept inactive by a worker MultiKueue
refuses failing at once with the MultiKueueCluster's reason first. Everything listens on and dials 127.0.0.1."""
from __future__ import annotations

import base64
import os

import pytest
import yaml
from kubernetes import client, config

from tests.harness.cluster import Cluster, run_dir

from tests.reliability import rbac

from ansible_collections.kueueops.aks.plugins.filter.multikueue_manager import multikueue_manager
from ansible_collections.kueueops.aks.plugins.module_utils.kueue.multikueue import watched_kinds

from .ansible import REPO, run_playbook
from .kubeutil import condition, kind_crd_name, reset_kueue, serve_kinds, unserve_kinds, wait_for

PLAYBOOK = os.path.join(REPO, "playbooks", "multikueue.yml")
STATUS = os.path.join(REPO, "playbooks", "status.yml")
GROUP, VERSION = "kueue.x-k8s.io", "v1beta2"
SA = "kueueops-multikueue"
NS = "team-mk"
RESOURCES = [
    {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "mk-flavor"}, "spec": {}},
    {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "mk-cq"},
     "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [
         {"name": "mk-flavor", "resources": [{"name": "cpu", "nominalQuota": "4"},
                                             {"name": "memory", "nominalQuota": "4Gi"}]}]}]}},
    {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "mk-lq", "namespace": NS},
     "spec": {"clusterQueue": "mk-cq"}},
]
# An exec-plugin kubeconfig, as `az aks get-credentials` writes for an Entra ID cluster (kubelogin).
EXEC_KUBECONFIG = {
    "apiVersion": "v1", "kind": "Config", "current-context": "aks",
    "clusters": [{"name": "aks", "cluster": {"server": "https://127.0.0.1:1", "certificate-authority-data": "Zm9v"}}],
    "contexts": [{"name": "aks", "context": {"cluster": "aks", "user": "entra"}}],
    "users": [{"name": "entra", "user": {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1",
                                                  "command": "kubelogin", "args": ["get-token"]}}}]}


def _inventory(path, manager, workers, *, managers=None, worker_group=None, others=None, kubeconfigs=None,
               manager_integrations=("batch/job",), **common):
    """An inventory of the manager and worker clusters: worker-1 (the session cluster) on the managed extension with
    its AKS credentials from ARM, the others on Helm with their admin kubeconfig. `managers`/`worker_group` override
    the groups' hosts, `kubeconfigs` ({host: path}) how a host is reached, `manager_integrations` the manager's
    kueue_integrations (None: unset, the chart's defaults)."""
    extra_hostvars = common.pop("_hostvars", None) or {}
    everyone = {"manager": manager, **{"worker-%d" % (i + 1): w for i, w in enumerate(workers)}}

    def host(name):
        if name in (kubeconfigs or {}):
            reach = {"kueue_kubeconfig": kubeconfigs[name]}
        elif name == "worker-1":
            reach = {"kueue_aks_resource_group": os.environ["AKS_RESOURCE_GROUP"],
                     "kueue_aks_cluster_name": os.environ["AKS_CLUSTER_NAME"],
                     "kueue_aks_kubeconfig_dest": str(path.parent / "worker-1.kubeconfig")}
        else:
            reach = {"kueue_kubeconfig": everyone[name].kubeconfig}
        if name == "worker-1":
            return dict(reach, kueue_install_method="extension")
        # The manager watches the kind of every enabled integration on each worker: a kind without its CRD on a
        # worker (RayJob, JobSet here) keeps that worker inactive (ClientConnectionFailed: no matches for kind), which
        # the preflight refuses. Helm hosts enable batch/job only, unless manager_integrations says otherwise.
        integrations = manager_integrations if name == "manager" else ["batch/job"]
        return dict(reach, kueue_helm_chart_ref=everyone[name].chart_ref, kueue_helm_plain_http=True,
                    **({"kueue_integrations": list(integrations)} if integrations is not None else {}))

    managers = managers if managers is not None else ["manager"]
    worker_group = worker_group if worker_group is not None else [n for n in everyone if n != "manager"]
    inventory = {"all": {
        "vars": dict({
            "ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}",
            "kueue_resources": RESOURCES, "kueue_multikueue_cluster_queues": ["mk-cq"],
            "kueue_create_namespaces": True,
            "kueue_smoke_test": True, "kueue_smoke_test_queues": ["%s/mk-lq" % NS]}, **common),
        "children": {
            "kueue_multikueue_manager": {"hosts": {n: host(n) for n in managers}},
            "kueue_multikueue_workers": {"hosts": {n: host(n) for n in worker_group}},
            "kueue_clusters": {"hosts": {n: host(n) for n in (others or [])}}}}}
    for group, hostvars in extra_hostvars.items():
        inventory["all"]["children"][group]["hosts"].update(hostvars)
    path.write_text(yaml.safe_dump(inventory))
    return str(path)


def _custom(api, plural, name=None, namespace=None):
    objs = client.CustomObjectsApi(api)
    try:
        if name is None:
            return objs.list_cluster_custom_object(GROUP, VERSION, plural)["items"]
        if namespace:
            return objs.get_namespaced_custom_object(GROUP, VERSION, namespace, plural, name)
        return objs.get_cluster_custom_object(GROUP, VERSION, plural, name)
    except client.exceptions.ApiException as exc:
        if exc.status == 404:
            return None if name is not None else []
        raise


def _secret_kubeconfigs(api) -> dict:
    """{worker: kubeconfig dict} of the manager's MultiKueue Secrets (read by name from the MultiKueueClusters)."""
    core = client.CoreV1Api(api)
    found = {}
    for mkc in _custom(api, "multikueueclusters"):
        name = mkc["spec"]["clusterSource"]["kubeConfig"]["location"]
        data = core.read_namespaced_secret(name, "kueue-system").data["kubeconfig"]
        found[mkc["metadata"]["name"]] = yaml.safe_load(base64.b64decode(data))
    return found


def _token_authenticated(api, token) -> bool:
    review = client.AuthenticationV1Api(api).create_token_review(
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}})
    return bool(review.status.authenticated)


def _active(api, name) -> str | None:
    mkc = _custom(api, "multikueueclusters", name)
    return condition(mkc, "Active") if mkc else None


def _least_privileged(cluster, *files) -> str:
    """The kubeconfig of a user bound only to the roles of docs/rbac/<file>.yaml for each of `files`."""
    for name in files:
        rbac.apply_file(cluster, name)
    return rbac.make_user(cluster, "mk-" + "-".join(files), *["kueueops-" + name for name in files])


def _default_kinds(manager) -> list:
    """[(api_version, kind)] a manager with the chart's default integrations (of the newest chart of its registry)
    watches on every worker, but the kinds kube-apiserver serves itself."""
    side = multikueue_manager({"render": {"chart_version": manager.state["chart_versions"][0], "release_values": {}}})
    return [(version, kind) for _name, version, kind in watched_kinds(side["integrations"])
            if "." in version.split("/")[0]]


def _operator_kinds(manager) -> list:
    """The kinds installing the operators behind _default_kinds serves: those, and the runtimes Kubeflow Trainer's
    CRDs come with - a Kueue with the trainjob integration on a cluster that serves TrainJob but not TrainingRuntime
    and ClusterTrainingRuntime fails to start ("initializing runtime TrainingRuntime.trainer.kubeflow.org", seen with
    0.19.2), so a worker given TrainJob alone is not what a user has."""
    kinds = _default_kinds(manager)
    trainer = [version for version, kind in kinds if kind == "TrainJob"]
    return kinds + [(v, "TrainingRuntime") for v in trainer] + [(v, "ClusterTrainingRuntime", "Cluster") for v in trainer]


@pytest.fixture(scope="module")
def clusters(cluster, arm, tmp_path_factory):
    """(manager, [worker-1, worker-2], folder): worker-1 is the session cluster (ARM emulator), the others new."""
    started = [Cluster(run_dir().rstrip("/") + suffix) for suffix in ("-mkm", "-mk2")]
    try:
        for handle in started:
            handle.up()
        yield started[0], [cluster, started[1]], tmp_path_factory.mktemp("multikueue")
    finally:
        for handle in started:
            handle.down()
        api = config.new_client_from_config(cluster.kubeconfig)
        reset_kueue(api, [NS], extension=True)
        # the kinds the wiring test served on worker-1 (the session cluster), which other files use after this one
        unserve_kinds(api, [kind_crd_name(*kind) for kind in _operator_kinds(cluster)])
        api.close()


def test_bad_inputs_are_refused_before_anything_is_written(clusters):
    manager, workers, tmp = clusters
    cases = [
        (dict(managers=[]), "kueue_multikueue_manager"),
        (dict(managers=["manager", "worker-2"], worker_group=["worker-1"]), "kueue_multikueue_manager"),
        (dict(worker_group=["manager", "worker-1"]), "both the manager and a worker"),
        (dict(_hostvars={"kueue_multikueue_workers": {"worker-2": {
            "kueue_kubeconfig": workers[1].kubeconfig, "kueue_multikueue_worker_kubeconfig": EXEC_KUBECONFIG}}}),
         "exec"),
        (dict(kueue_multikueue_cluster_queues=["mk-cq", "no-such-cq"]), "no-such-cq"),
        (dict(kueue_multikueue_token_ttl=60), "kueue_multikueue_token_ttl: 60 seconds is shorter than 600"),
        (dict(_hostvars={"kueue_multikueue_workers": {"worker-2": {
            "kueue_kubeconfig": workers[1].kubeconfig, "kueue_multikueue_worker_server": "http://127.0.0.1:1"}}}),
         "worker worker-2: kueue_multikueue_worker_server"),
        # the role's argument spec, before any task of the entry point
        (dict(kueue_multikueue_token_type="forever"), "kueue_multikueue_token_type"),
        # issue 40: a smoke test with no LocalQueue to dispatch through would test nothing
        (dict(kueue_smoke_test_queues=[]), "kueue_smoke_test is true, but kueue_smoke_test_queues is empty"),
    ]
    for index, (shape, expected) in enumerate(cases):
        inv = _inventory(tmp / ("bad-%d.yml" % index), manager, workers, **shape)
        run = run_playbook(PLAYBOOK, inventory=inv, timeout=300)
        text = run.stdout + run.stderr
        assert run.rc != 0 and expected in text, (shape, text[-3000:])
        assert "Nothing was changed" in text or "argument_spec" in text or "Argument spec" in text.lower() \
            or "validating arguments" in text.lower(), (shape, text[-3000:])
        assert "Traceback" not in text
    # Nothing was written on any cluster: no Kueue namespace on the workers, no Kueue on the manager.
    for c in [manager] + workers:
        api = config.new_client_from_config(c.kubeconfig)
        names = [n.metadata.name for n in client.CoreV1Api(api).list_namespace().items]
        assert "kueue-system" not in names and NS not in names, (c.folder, names)
        api.close()


def _missing_kinds_sentence(text, worker):
    """The sentence of the preflight's failure about `worker` (up to the next worker's or the end)."""
    start = text.index("worker %s does not serve" % worker)
    ends = [i for i in (text.find("worker worker-", start + 10), text.find("Nothing was changed", start)) if i > 0]
    return text[start:min(ends)]


def test_the_chart_default_integrations_are_refused_before_any_write(clusters):
    """Issue 44: a new user's inventory - no kueue_integrations on the manager, so the chart's defaults (Ray, JobSet,
    LeaderWorkerSet, ...) - over workers without those CRDs: refused by the preflight before anything is written on
    any cluster, naming every missing kind of every worker at once and both fixes; check mode says the same."""
    manager, workers, tmp = clusters
    inv = _inventory(tmp / "defaults.yml", manager, workers, manager_integrations=None)
    apis = [config.new_client_from_config(c.kubeconfig) for c in [manager] + workers]
    before = [rbac.snapshot(api) for api in apis]
    # What the manager would run: the chart's default integrations of the newest chart of its registry.
    side = multikueue_manager({"render": {"chart_version": manager.state["chart_versions"][0], "release_values": {}}})
    served_by_operators = _default_kinds(manager)
    expected = [(name, version, kind) for name, version, kind in watched_kinds(side["integrations"])
                if (version, kind) in served_by_operators]
    assert len(expected) >= 5, side
    for check in (True, False):
        run = run_playbook(PLAYBOOK, inventory=inv, check=check, timeout=600)
        text = run.stdout + run.stderr
        assert run.rc != 0 and "Traceback" not in text and "MODULE FAILURE" not in text, text[-3000:]
        messages = set(m for h in ("manager", "worker-1", "worker-2") for m in run.failure_messages(h))
        assert len(messages) == 1, messages
        (message,) = messages
        assert message.startswith("MultiKueue cannot use these workers with the manager's Kueue (the chart's default "
                                  "integrations of Kueue %s" % manager.state["chart_versions"][0]), message
        assert message.rstrip().endswith("Nothing was changed on any cluster."), message
        for worker in ("worker-1", "worker-2"):
            sentence = _missing_kinds_sentence(message, worker)
            for name, version, kind in expected:
                assert "%s (%s, integration %s)" % (kind, version, name) in sentence, (kind, sentence)
            assert "does not serve %d kind(s)" % len(expected) in sentence, sentence
            assert "set the manager's kueue_integrations" in sentence and "install the CRDs of" in sentence
            assert "[batch/job" in sentence, sentence
        # the install never ran: the preflight is the last task of every host
        for host in ("manager", "worker-1", "worker-2"):
            names = [n for n, _r in run.tasks(host)]
            assert not [n for n in names if "Install and verify Kueue" in n or "Install or upgrade" in n], names
            assert [n for n in names if "Preflight - refuse workers MultiKueue cannot use" in n] or host != "manager"
    # Both clusters (and the other worker) exactly as they were: no object written, no namespace, no Helm record.
    for api, was in zip(apis, before):
        assert rbac.snapshot(api) == was
        api.close()


def test_wiring_dispatch_rerun_rotation_outage_removal_and_backup(clusters):
    manager, workers, tmp = clusters
    # The defaults a new user has (issue 44): no kueue_integrations on the manager, so the chart's default
    # integrations, refused by the preflight above over these workers; once each worker serves the kinds they watch
    # (as installing the operators' CRDs does), the same inventory wires and dispatches.
    inv = _inventory(tmp / "mk.yml", manager, workers, manager_integrations=None)
    m_api = config.new_client_from_config(manager.kubeconfig)
    w_apis = [config.new_client_from_config(w.kubeconfig) for w in workers]
    for api in w_apis:
        serve_kinds(api, _operator_kinds(manager))

    # 1. The whole wiring, at -vvv: Kueue on all three, the worker side, the manager side, a Job dispatched.
    first = run_playbook(PLAYBOOK, inventory=inv, verbosity=3, timeout=1500)
    assert first.rc == 0, [(h, n, r.get("msg")) for h in ("manager", "worker-1", "worker-2")
                           for n, r in first.tasks(h) if r.get("failed")]
    for worker in ("worker-1", "worker-2"):
        preflight = first.result("Preflight - does the worker serve every kind", worker)
        assert preflight["problems"] == [] and preflight["missing_kinds"] == [] and preflight["checked_kinds"], preflight
    verify = first.result("Verify MultiKueue", "manager")
    assert not verify["failed_checks"], verify["checks"]
    assert {c["name"]: c["active"] for c in verify["multikueue"]["clusters"]} == {"worker-1": True, "worker-2": True}
    dispatched_to = verify["multikueue"]["dispatched"]["%s/mk-lq" % NS]
    assert dispatched_to in ("worker-1", "worker-2")
    smoke = [c for c in verify["checks"] if c["name"] == "smoke-test/%s/mk-lq" % NS]
    assert smoke and smoke[0]["ok"] and dispatched_to in smoke[0]["reason"], verify["checks"]
    # status.yml on the manager (issue 40): each worker token's expiry, and a warning for each, since the horizon
    # asked for (40 days) is longer than the tokens' lifetime (kueue_multikueue_token_ttl, 30 days by default).
    status = run_playbook(STATUS, inventory=inv, timeout=300, extravars={
        "kueue_target_hosts": "manager", "kueue_multikueue_token_warn_horizon": 40 * 86400})
    assert status.rc == 0, status.stdout[-3000:]
    tokens = status.result("Check Kueue and read its queues", "manager")["multikueue_tokens"]
    assert [t["cluster"] for t in tokens] == ["worker-1", "worker-2"], tokens
    for token in tokens:
        assert token["warning"] is True and token["expires"], token
        assert 29 * 86400 < token["seconds_left"] <= 30 * 86400, token
    warned = " ".join(status.result("Check Kueue and read its queues", "manager").get("warnings", []))
    assert "MultiKueueCluster worker-1" in warned and "playbooks/multikueue.yml" in warned, warned
    shown = "\n".join(status.result("Show the status", "manager")["msg"])
    assert "MultiKueue: 2 worker token(s) to re-issue" in shown and "MultiKueue worker tokens" in shown, shown
    assert "WARNING: expires in" in shown and "worker-2" in shown, shown
    for kubeconfig in _secret_kubeconfigs(m_api).values():
        token = kubeconfig["users"][0]["user"]["token"]
        assert token and token not in status.stdout + status.stderr
    # The manager: a MultiKueueCluster per worker (Active), the config, the AdmissionCheck, the ClusterQueue with it.
    assert _custom(m_api, "multikueueconfigs", "kueueops-multikueue")["spec"]["clusters"] == ["worker-1", "worker-2"]
    check = _custom(m_api, "admissionchecks", "kueueops-multikueue")
    assert check["spec"]["controllerName"] == "kueue.x-k8s.io/multikueue" and condition(check, "Active") == "True"
    cq = _custom(m_api, "clusterqueues", "mk-cq")
    assert [c["name"] for c in cq["spec"]["admissionChecksStrategy"]["admissionChecks"]] == ["kueueops-multikueue"]
    kubeconfigs = _secret_kubeconfigs(m_api)
    assert sorted(kubeconfigs) == ["worker-1", "worker-2"]
    tokens = {}
    for index, name in enumerate(("worker-1", "worker-2")):
        assert _active(m_api, name) == "True"
        kc = kubeconfigs[name]
        (entry,) = kc["clusters"]
        assert entry["cluster"]["server"] == workers[index].server and entry["cluster"]["certificate-authority-data"]
        assert not entry["cluster"].get("insecure-skip-tls-verify")
        (user,) = kc["users"]
        assert set(user["user"]) == {"token"}
        tokens[name] = user["user"]["token"]
        # The worker: the ServiceAccount's token authenticates; its queues exist without the MultiKueue check.
        assert _token_authenticated(w_apis[index], tokens[name])
        client.CoreV1Api(w_apis[index]).read_namespaced_service_account(SA, "kueue-system")
        client.RbacAuthorizationV1Api(w_apis[index]).read_cluster_role(SA)
        worker_cq = _custom(w_apis[index], "clusterqueues", "mk-cq")
        assert not (worker_cq["spec"].get("admissionChecksStrategy") or {}).get("admissionChecks"), worker_cq["spec"]
        assert _custom(w_apis[index], "localqueues", "mk-lq", NS)
    # No token at -vvv.
    for token in tokens.values():
        assert token not in first.stdout and token not in first.stderr

    # 2. A re-run changes nothing (the smoke test runs again and dispatches again).
    again = run_playbook(PLAYBOOK, inventory=inv, timeout=900)
    changed = [(h, n) for h in ("manager", "worker-1", "worker-2") for n, r in again.tasks(h) if r.get("changed")]
    assert again.rc == 0 and again.changed == 0, changed
    assert _secret_kubeconfigs(m_api) == kubeconfigs
    # Kueue runs on the workers now: the preflight also compared the Workload API the manager's Kueue uses.
    for worker in ("worker-1", "worker-2"):
        preflight = again.result("Preflight - does the worker serve every kind", worker)
        assert preflight["problems"] == [] and "v1beta2" in preflight["workload_versions"], preflight

    # From here on, as users bound to docs/rbac only (Kueue is installed): the manager as the configure-queues user,
    # each worker as a user of configure-queues.yaml and multikueue-worker.yaml.
    least = {"manager": _least_privileged(manager, "configure-queues")}
    for index, worker in enumerate(workers):
        least["worker-%d" % (index + 1)] = _least_privileged(worker, "configure-queues", "multikueue-worker")
    inv = _inventory(tmp / "mk-least.yml", manager, workers, kubeconfigs=least, kueue_multikueue_install=False)

    # 3. Rotation: new tokens on the manager, verified with a dispatch, then the old ones revoked. The same run
    # raises mk-cq's CPU quota with kueue_hold_admission: the ClusterQueue is held and released on the manager and on
    # each worker (the workers' queues ignored the variable before), and ends with the new quota and no hold.
    raised = list(RESOURCES)
    raised[1] = yaml.safe_load(yaml.safe_dump(RESOURCES[1]))
    raised[1]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "5"
    rotated = run_playbook(PLAYBOOK, inventory=inv, timeout=900, extravars={
        "kueue_multikueue_rotate_tokens": True, "kueue_hold_admission": True, "kueue_resources": raised})
    assert rotated.rc == 0, rotated.stdout[-5000:]
    assert rotated.result("Verify MultiKueue", "manager")["multikueue"]["dispatched"]["%s/mk-lq" % NS]
    assert rotated.result("Apply the manager's queues", "manager")["held"] == ["mk-cq"]
    for worker in ("worker-1", "worker-2"):
        assert rotated.result("Apply the worker's namespaces", worker)["held"] == ["mk-cq"], worker
    for api in [m_api] + w_apis:
        spec = _custom(api, "clusterqueues", "mk-cq")["spec"]
        assert spec["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] == "5", spec
        assert spec.get("stopPolicy", "None") == "None", spec
    new = _secret_kubeconfigs(m_api)
    for index, name in enumerate(("worker-1", "worker-2")):
        token = new[name]["users"][0]["user"]["token"]
        assert token != tokens[name]
        assert _token_authenticated(w_apis[index], token)
        # revoked: its holder Secret is gone (kube-apiserver caches a token it accepted for up to 10 s)
        wait_for("the old token of %s refused" % name,
                 lambda: not _token_authenticated(w_apis[index], tokens[name]), timeout=60)
        assert _active(m_api, name) == "True"

    # 4. A worker whose API server is down: its own tasks fail, the manager's wiring is left as it was, and the
    # manager's verify names it with the reason Kueue gives.
    workers[1].stop_apiserver()
    try:
        wait_for("worker-2 inactive on the manager", lambda: _active(m_api, "worker-2") == "False", timeout=120)
        down = run_playbook(PLAYBOOK, inventory=inv, extravars={"kueue_verify_timeout": 15}, timeout=900)
        assert down.rc != 0 and down.host_stats("worker-2").get("failures") == 1, down
        message = " ".join(down.failure_messages("manager"))
        assert "worker-2" in message and "multikueue/cluster/worker-2" in message, message
        assert _custom(m_api, "multikueueconfigs", "kueueops-multikueue")["spec"]["clusters"] == [
            "worker-1", "worker-2"]
    finally:
        workers[1].start_apiserver()
    wait_for("worker-2 active again", lambda: _active(m_api, "worker-2") == "True", timeout=180)

    # 5. worker-2 leaves kueue_multikueue_workers (still an inventory host): its MultiKueueCluster and Secret go,
    # and its ServiceAccount, ClusterRole and tokens on the worker; worker-1 still takes the Jobs.
    holders = [s.metadata.name for s in client.CoreV1Api(w_apis[1]).list_namespaced_secret(
        "kueue-system", label_selector="kueueops.aks/multikueue-token=%s" % SA).items]
    assert holders
    secret_name = _custom(m_api, "multikueueclusters", "worker-2")["spec"]["clusterSource"]["kubeConfig"]["location"]
    removed_inv = _inventory(tmp / "removed.yml", manager, workers, worker_group=["worker-1"], others=["worker-2"],
                             kubeconfigs=least, kueue_multikueue_install=False)
    removed = run_playbook(PLAYBOOK, inventory=removed_inv, timeout=900)
    assert removed.rc == 0, removed.stdout[-5000:]
    assert removed.result("Verify MultiKueue", "manager")["multikueue"]["dispatched"]["%s/mk-lq" % NS] == "worker-1"
    assert _custom(m_api, "multikueueclusters", "worker-2") is None
    assert _custom(m_api, "multikueueconfigs", "kueueops-multikueue")["spec"]["clusters"] == ["worker-1"]
    with pytest.raises(client.exceptions.ApiException) as gone:
        client.CoreV1Api(m_api).read_namespaced_secret(secret_name, "kueue-system")
    assert gone.value.status == 404
    core2 = client.CoreV1Api(w_apis[1])
    assert not core2.list_namespaced_secret("kueue-system", label_selector="kueueops.aks/multikueue-token=%s" % SA).items
    with pytest.raises(client.exceptions.ApiException):
        core2.read_namespaced_service_account(SA, "kueue-system")
    wait_for("worker-2's token refused", lambda: not _token_authenticated(
        w_apis[1], new["worker-2"]["users"][0]["user"]["token"]), timeout=60)
    again = run_playbook(PLAYBOOK, inventory=removed_inv, timeout=900)
    assert again.rc == 0 and again.changed == 0, again

    # 6. The manager's backup (include_secrets) holds every MultiKueue object and the worker's Secret.
    backup = run_playbook([{"hosts": "localhost", "connection": "local", "gather_facts": False, "tasks": [{
        "name": "Back up the manager", "kueueops.aks.kueue_backup": {
            "dest": str(tmp / "backup"), "include_secrets": True, "kubeconfig": manager.kubeconfig},
        "register": "out"}]}],
        timeout=300)
    assert backup.rc == 0, backup
    docs = []
    for root, _dirs, files in os.walk(str(tmp / "backup")):
        for name in files:
            if name.endswith((".yml", ".yaml")):
                with open(os.path.join(root, name)) as handle:
                    docs += [d for d in yaml.safe_load_all(handle) if isinstance(d, dict) and d.get("kind")]
    kinds = {(d["kind"], d["metadata"]["name"]) for d in docs}
    assert {("MultiKueueCluster", "worker-1"), ("MultiKueueConfig", "kueueops-multikueue"),
            ("AdmissionCheck", "kueueops-multikueue"), ("ClusterQueue", "mk-cq"),
            ("Secret", _custom(m_api, "multikueueclusters", "worker-1")["spec"]["clusterSource"]["kubeConfig"][
                "location"])} <= kinds, sorted(kinds)

    # 7. Nothing lost: the MultiKueue objects and the worker's Secret, deleted on the manager, come back from that
    # backup (kueue_queues src, admission held, as playbooks/restore.yml applies it) exactly as they were, the worker
    # is Active again, and the wiring run then has nothing to change.
    secret = _custom(m_api, "multikueueclusters", "worker-1")["spec"]["clusterSource"]["kubeConfig"]["location"]
    wiring = [("multikueueclusters", "worker-1"), ("multikueueconfigs", "kueueops-multikueue"),
              ("admissionchecks", "kueueops-multikueue")]

    def snapshot():
        objs = dict(((plural, name), (lambda o: (o["metadata"].get("labels"), o["spec"]))(
            _custom(m_api, plural, name))) for plural, name in wiring + [("clusterqueues", "mk-cq")])
        objs["secret"] = client.CoreV1Api(m_api).read_namespaced_secret(secret, "kueue-system").data
        return objs

    before = snapshot()
    objects = client.CustomObjectsApi(m_api)
    lost = wiring[:2]  # the AdmissionCheck stays: Kueue's resource-in-use finalizer holds it while mk-cq uses it
    for plural, name in lost:
        objects.delete_cluster_custom_object(GROUP, VERSION, plural, name)
    client.CoreV1Api(m_api).delete_namespaced_secret(secret, "kueue-system")
    wait_for("the wiring gone", lambda: all(_custom(m_api, p, n) is None for p, n in lost), timeout=120)
    path = backup.result("Back up the manager", "localhost")["backup_path"]
    restored = run_playbook([{"hosts": "localhost", "connection": "local", "gather_facts": False, "tasks": [{
        "name": "Restore the manager", "kueueops.aks.kueue_queues": {
            "src": path, "hold_admission": True, "kubeconfig": manager.kubeconfig}}]}], timeout=300)
    assert restored.rc == 0, restored
    assert snapshot() == before
    wait_for("worker-1 active after the restore", lambda: _active(m_api, "worker-1") == "True", timeout=120)
    # The wiring run finds every MultiKueue object as it applies it. (The restore applied the backup's ClusterQueue
    # and LocalQueue with their defaulted fields, which the declaration leaves to Kueue: that run gives the defaults
    # back to Kueue's ownership, an update with no visible difference; the run after it changes nothing.)
    after = run_playbook(PLAYBOOK, inventory=removed_inv, timeout=900)
    assert after.rc == 0, after
    updated = after.result("Apply the manager's queues", "manager")["changed_objects"]
    assert not [o for o in updated if o["kind"] not in ("ClusterQueue", "LocalQueue")], updated
    again = run_playbook(PLAYBOOK, inventory=removed_inv, timeout=900)
    assert again.rc == 0 and again.changed == 0, again

    # 8. A kubeconfig of one's own for a worker (kueue_multikueue_worker_kubeconfig, e.g. from a secret store): here
    # the very text the manager holds for worker-1. The role issues no token for it and applies it as given: nothing
    # changes, and worker-1 still takes the smoke test's Job.
    own = base64.b64decode(client.CoreV1Api(m_api).read_namespaced_secret(secret, "kueue-system").data[
        "kubeconfig"]).decode()
    own_inv = _inventory(tmp / "own.yml", manager, workers, worker_group=["worker-1"], others=["worker-2"],
                         kubeconfigs=least, kueue_multikueue_install=False, _hostvars={"kueue_multikueue_workers": {
                             "worker-1": {"kueue_kubeconfig": least["worker-1"], "kueue_install_method": "extension",
                                          "kueue_multikueue_worker_kubeconfig": own}}})
    given = run_playbook(PLAYBOOK, inventory=own_inv, timeout=900)
    assert given.rc == 0 and given.changed == 0, given
    assert given.result("Issue or reuse the worker's token", "worker-1").get("skipped") is True
    assert given.result("Verify MultiKueue", "manager")["multikueue"]["dispatched"]["%s/mk-lq" % NS] == "worker-1"

    # 9. Issue 44: the manager's Secret for worker-1 made a kubeconfig MultiKueue refuses (insecure TLS): the
    # MultiKueueCluster is InsecureKubeConfig, which waiting cannot heal, the AdmissionCheck has no usable cluster, a
    # ClusterQueue carrying it is never Active. A new such ClusterQueue applied with kueue_queues, and kueue_verify,
    # both with a 900 s timeout: each fails at once (the run is given 600 s) with the MultiKueueCluster's reason first.
    insecure = yaml.safe_load(own)
    insecure["clusters"][0]["cluster"]["insecure-skip-tls-verify"] = True
    client.CoreV1Api(m_api).patch_namespaced_secret(secret, "kueue-system", {"data": {"kubeconfig": base64.b64encode(
        yaml.safe_dump(insecure).encode()).decode()}})
    wait_for("worker-1 refused by MultiKueue", lambda: any(
        c["type"] == "Active" and c["reason"] == "InsecureKubeConfig"
        for c in (_custom(m_api, "multikueueclusters", "worker-1").get("status") or {}).get("conditions") or []),
        timeout=180)
    late = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "mk-late"},
            "spec": dict(RESOURCES[1]["spec"], admissionChecksStrategy={"admissionChecks": [
                {"name": "kueueops-multikueue"}]})}
    inactive = run_playbook([{"hosts": "localhost", "connection": "local", "gather_facts": False, "tasks": [
        {"name": "Apply a ClusterQueue with the MultiKueue check", "kueueops.aks.kueue_queues": {
            "resources": [late], "timeout": 900, "kubeconfig": manager.kubeconfig}, "ignore_errors": True},
        {"name": "Verify MultiKueue", "kueueops.aks.kueue_verify": {
            "multikueue_admission_check": "kueueops-multikueue", "install_method": "helm", "timeout": 900,
            "kubeconfig": manager.kubeconfig}, "ignore_errors": True}]}], timeout=600)
    queues = inactive.result("Apply a ClusterQueue", "localhost")
    assert queues.get("failed") and queues["wait_stopped"] is True, queues
    assert queues["msg"].startswith("ClusterQueue mk-late cannot become Active: MultiKueueCluster worker-1: "
                                    "Active=False, InsecureKubeConfig: "), queues["msg"]
    assert "rather than after 900s (timeout)" in queues["msg"] and "within 900s" not in queues["msg"], queues["msg"]
    verify = inactive.result("Verify MultiKueue", "localhost")
    assert verify.get("failed") and "without waiting out the 900s timeout" in verify["msg"], verify["msg"]
    assert verify["msg"].index("multikueue/cluster/worker-1") < verify["msg"].index("multikueue/admissioncheck/"), \
        verify["msg"]
    summaries = dict((q["name"], q) for q in verify["queues"]["cluster_queues"])
    assert summaries["mk-cq"]["reason"].startswith("MultiKueueCluster worker-1: Active=False, InsecureKubeConfig"), \
        summaries["mk-cq"]
    assert summaries["mk-cq"]["cannot_heal"] is True, summaries["mk-cq"]
    for api in [m_api] + w_apis:
        api.close()
