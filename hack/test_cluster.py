#!/usr/bin/env python3
"""`make test-cluster`: the collection's ansible-test integration targets against a cluster you bring.

    make test-cluster KUBECONFIG=~/.kube/staging.yaml
    make test-cluster KUBECONFIG=... KUEUE_CHART_REF=oci://myacr.azurecr.io/kueue/charts/kueue \
        KUEUE_CHART_VERSION=0.19.2
    hack/test_cluster.py --help

What it does, in order (nothing is written to the cluster before step 4):
1. Reads the kubeconfig (``--kubeconfig``, else K8S_AUTH_KUBECONFIG, else KUBECONFIG, else ~/.kube/config; one file)
   and asks the API server for its version.
2. Refuses a cluster that already runs Kueue (a CRD of kueue.x-k8s.io, or the kueue-system namespace): the targets
   install, upgrade and uninstall Kueue, which would replace it and delete every Kueue object. ``--replace-kueue``
   (KUEUEOPS_TEST_REPLACE_KUEUE=true) lets the run go on anyway.
3. Builds the collection with ``ansible-galaxy collection build`` and installs the tarball into a temporary
   ``ansible_collections/`` (what users install, tests/integration/targets included), and writes the targets'
   ``integration_config.yml``: the kubeconfig, the chart, helm and a run-unique prefix (``kt-<8 hex>``, or
   KUEUEOPS_TEST_PREFIX) that names every object the targets create.
4. Runs ``ansible-test integration`` in the installed collection (the targets: kueue_helm, kueue_queues,
   kueue_backup, kueue_verify, kueueops_roles, or those given as arguments).
5. Always, even when a target failed or the run was interrupted: deletes every namespace and every Kueue object whose
   name starts with the prefix, and uninstalls Kueue (kueueops.aks.kueue_helm state=absent) if the run found none and
   one is left; then prints what it removed and what, if anything, could not be removed.

Exit status (of this script; `make` turns any failure into its own 2): 0 when every target passed and nothing was
left behind; 1 when a target failed or the cleanup left something; 2 when the run was refused before any write (bad
input, unreachable cluster, a Kueue already there).

The chart comes from KUEUE_CHART_REF (default: upstream, oci://registry.k8s.io/kueue/charts/kueue) at
KUEUE_CHART_VERSION (default: latest), with KUEUE_PLAIN_HTTP=true for a plain-HTTP registry; helm is HELM (default:
helm on PATH). The Kueue images are pulled by the cluster's nodes, so they must reach the chart's image registry.
On the local control plane (`make cluster-up`), tests/integration/test_targets.py runs this same command.
"""
from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(os.path.abspath(sys.executable))
# The targets that run on their own (setup_* ones are their dependencies).
TARGETS = tuple(sorted(t for t in os.listdir(os.path.join(ROOT, "tests", "integration", "targets"))
                       if not t.startswith("setup_")))
KUEUE_GROUP = "kueue.x-k8s.io"
TRUE = ("1", "true", "yes", "on")
sys.path.insert(0, ROOT)
from tests.integration.kubeutil import kueue_present  # noqa: E402  the suite's own test of "Kueue is there"


class Refused(Exception):
    """The run stops before writing anything: the message names the problem and the fix."""


def log(msg: str) -> None:
    print("[test-cluster %s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="make test-cluster", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("targets", nargs="*", help="targets to run (default: all of %s)" % ", ".join(TARGETS))
    parser.add_argument("--kubeconfig", default=os.environ.get("K8S_AUTH_KUBECONFIG") or os.environ.get("KUBECONFIG")
                        or os.path.expanduser("~/.kube/config"))
    parser.add_argument("--context", default=os.environ.get("K8S_AUTH_CONTEXT") or None)
    parser.add_argument("--chart-ref", default=os.environ.get("KUEUE_CHART_REF")
                        or "oci://registry.k8s.io/kueue/charts/kueue")
    parser.add_argument("--chart-version", default=os.environ.get("KUEUE_CHART_VERSION") or "latest")
    parser.add_argument("--plain-http", action="store_true",
                        default=os.environ.get("KUEUE_PLAIN_HTTP", "").lower() in TRUE)
    parser.add_argument("--helm", default=os.environ.get("HELM") or "helm")
    parser.add_argument("--prefix", default=os.environ.get("KUEUEOPS_TEST_PREFIX") or "kt-" + secrets.token_hex(4))
    parser.add_argument("--replace-kueue", action="store_true",
                        default=os.environ.get("KUEUEOPS_TEST_REPLACE_KUEUE", "").lower() in TRUE,
                        help="run even though the cluster already runs Kueue (it is replaced, its objects lost)")
    parser.add_argument("--inject-failure", default=os.environ.get("KUEUEOPS_TEST_INJECT_FAILURE") or "",
                        help=argparse.SUPPRESS)  # the cleanup drill of tests/integration/test_targets.py
    return parser.parse_args(argv)


def check_input(args) -> None:
    if os.pathsep in args.kubeconfig:
        raise Refused("kubeconfig %r lists several files; fix: pass one file (KUBECONFIG=path, or --kubeconfig)"
                      % args.kubeconfig)
    if not os.path.isfile(args.kubeconfig):
        raise Refused("kubeconfig %s does not exist; fix: make test-cluster KUBECONFIG=/path/to/kubeconfig"
                      % args.kubeconfig)
    unknown = sorted(set(args.targets) - set(TARGETS))
    if unknown:
        raise Refused("unknown target(s) %s; fix: name some of %s" % (", ".join(unknown), ", ".join(TARGETS)))
    if not args.prefix.replace("-", "").isalnum() or not args.prefix[0].isalpha() or len(args.prefix) > 20 \
            or args.prefix != args.prefix.lower():
        raise Refused("prefix %r is not a DNS label start; fix: KUEUEOPS_TEST_PREFIX of lowercase letters, digits "
                      "and '-', starting with a letter, at most 20 characters" % args.prefix)
    if shutil.which(args.helm) is None:
        raise Refused("helm %r not found; fix: HELM=/path/to/helm (v3.13 or newer, or v4)" % args.helm)


def api_client(args):
    from kubernetes import config
    return config.new_client_from_config(args.kubeconfig, context=args.context)


def install_collection(work: str) -> str:
    """The collection as users install it: build the tarball, `ansible-galaxy collection install` it."""
    galaxy = os.path.join(BIN, "ansible-galaxy")
    subprocess.run([galaxy, "collection", "build", ROOT, "--output-path", work, "--force"], check=True,
                   stdout=subprocess.DEVNULL)
    (tarball,) = [f for f in os.listdir(work) if f.endswith(".tar.gz")]
    subprocess.run([galaxy, "collection", "install", os.path.join(work, tarball), "-p", work, "--no-deps",
                    "--force"], check=True, stdout=subprocess.DEVNULL, env=dict(os.environ, ANSIBLE_COLLECTIONS_PATH=work))
    return os.path.join(work, "ansible_collections", "kueueops", "aks")


def write_config(installed: str, args) -> None:
    config = {
        "kueueops_test_prefix": args.prefix,
        "kueueops_test_kubeconfig": os.path.abspath(args.kubeconfig),
        "kueueops_test_chart_ref": args.chart_ref,
        "kueueops_test_chart_version": args.chart_version,
        "kueueops_test_plain_http": args.plain_http,
        "kueueops_test_helm": shutil.which(args.helm),
        "kueueops_test_inject_failure": args.inject_failure,
    }
    path = os.path.join(installed, "tests", "integration", "integration_config.yml")
    # JSON is YAML; 0600: it names the kubeconfig (not its content).
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump(config, handle, indent=1)


def run_targets(installed: str, args) -> int:
    cmd = [os.path.join(BIN, "ansible-test"), "integration", "-v", "--color", "no"] + (args.targets or list(TARGETS))
    env = dict(os.environ, PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    if args.context:
        env["K8S_AUTH_CONTEXT"] = args.context
    log("running: %s (in %s)" % (" ".join(cmd[1:]), installed))
    return subprocess.run(cmd, cwd=installed, env=env).returncode


def sweep(api, args, kueue_before: list, collections: str | None) -> list:
    """Delete what carries the prefix, and a Kueue the run installed; returns what is still left."""
    from kubernetes import client
    core, ext, custom = client.CoreV1Api(api), client.ApiextensionsV1Api(api), client.CustomObjectsApi(api)
    mine = args.prefix + "-"
    for crd in ext.list_custom_resource_definition().items:
        if crd.spec.group != KUEUE_GROUP:
            continue
        version = next(v.name for v in crd.spec.versions if v.storage)
        for item in custom.list_cluster_custom_object(KUEUE_GROUP, version, crd.spec.names.plural)["items"]:
            meta = item["metadata"]
            if meta["name"].startswith(mine) or meta.get("namespace", "").startswith(mine):
                log("removing %s %s%s" % (crd.spec.names.kind, meta.get("namespace", "") and meta["namespace"] + "/",
                                          meta["name"]))
                try:
                    if meta.get("namespace"):
                        custom.delete_namespaced_custom_object(KUEUE_GROUP, version, meta["namespace"],
                                                               crd.spec.names.plural, meta["name"])
                    else:
                        custom.delete_cluster_custom_object(KUEUE_GROUP, version, crd.spec.names.plural, meta["name"])
                except client.exceptions.ApiException as exc:
                    if exc.status != 404:
                        raise
    for ns in core.list_namespace().items:
        if ns.metadata.name.startswith(mine) and not ns.metadata.deletion_timestamp:
            log("removing namespace %s" % ns.metadata.name)
            core.delete_namespace(ns.metadata.name)
    uninstalled = True
    if not kueue_before and kueue_present(api):
        log("removing the Kueue this run installed (kueueops.aks.kueue_helm state=absent delete_namespace=true)")
        uninstalled = uninstall_kueue(args, collections)
    deadline = time.time() + (300 if uninstalled else 30)
    while True:
        left = ["namespace/" + n.metadata.name for n in core.list_namespace().items if n.metadata.name.startswith(mine)]
        if not kueue_before:
            left += kueue_present(api)
        if not left or time.time() > deadline:
            return left
        time.sleep(2)


def uninstall_kueue(args, collections: str | None) -> bool:
    """kueueops.aks.kueue_helm state=absent, from the installed collection under `collections` (else the checkout's)."""
    module_args = {"state": "absent", "delete_namespace": True, "binary_path": shutil.which(args.helm),
                   "kubeconfig": os.path.abspath(args.kubeconfig)}
    if args.context:
        module_args["context"] = args.context
    env = dict(os.environ)
    if collections:
        env["ANSIBLE_COLLECTIONS_PATH"] = collections
    run = subprocess.run([os.path.join(BIN, "ansible"), "localhost", "-c", "local", "-i", "localhost,",
                          "-e", "ansible_python_interpreter=" + sys.executable,
                          "-m", "kueueops.aks.kueue_helm", "-a", json.dumps(module_args)], env=env, check=False,
                         capture_output=True, text=True)
    if run.returncode != 0:
        log("the uninstall failed (rc %d): %s" % (run.returncode, (run.stdout + run.stderr).strip()[-2000:]))
    return run.returncode == 0


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        check_input(args)
        try:
            api = api_client(args)
            from kubernetes import client
            server = client.VersionApi(api).get_code().git_version
        except Exception as exc:  # any failure to load or reach: one line, no traceback
            raise Refused("cannot reach the cluster of %s: %s; fix: check the kubeconfig and its current context"
                          % (args.kubeconfig, str(exc).splitlines()[0] if str(exc) else type(exc).__name__))
        kueue_before = kueue_present(api)
        if kueue_before and not args.replace_kueue:
            raise Refused("the cluster already runs Kueue (%s): the targets install, upgrade and uninstall Kueue, "
                          "which would replace it and delete every Kueue object; fix: use a cluster without Kueue, or "
                          "set KUEUEOPS_TEST_REPLACE_KUEUE=true (--replace-kueue) to replace it"
                          % ", ".join(kueue_before))
    except Refused as exc:
        print("test-cluster: refused, nothing was changed: %s" % exc, file=sys.stderr)
        return 2
    replacing = ", replacing its Kueue" if kueue_before else ""
    log("cluster %s (%s), prefix %s, chart %s %s%s" % (
        args.kubeconfig, server, args.prefix, args.chart_ref, args.chart_version, replacing))
    work = tempfile.mkdtemp(prefix="kueueops-test-cluster-")
    installed, rc = None, 1
    try:
        installed = install_collection(work)  # work/ansible_collections/kueueops/aks
        write_config(installed, args)
        rc = run_targets(installed, args)
    except KeyboardInterrupt:
        log("interrupted")
    except subprocess.CalledProcessError as exc:
        log("failed: %s" % exc)
    finally:
        left = sweep(api, args, kueue_before, work if installed else None)
        shutil.rmtree(work, ignore_errors=True)
    if left:
        log("LEFT ON THE CLUSTER (remove by hand): %s" % ", ".join(left))
        return 1
    log("targets %s; nothing of prefix %s is left on the cluster" % ("passed" if rc == 0 else "FAILED", args.prefix))
    return 0 if rc == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
