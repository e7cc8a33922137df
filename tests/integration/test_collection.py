"""The collection as users get it: `ansible-galaxy collection build` makes a tarball that
installs, whose modules and roles (the shared kueue and the job roles) `ansible-doc` renders; module_defaults for the action
group `kueue` sets authentication once (issue 3)."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import yaml

from .ansible import REPO, run_playbook

BIN = os.path.dirname(sys.executable)
# hack/gen_role_specs.py: what it adds to the role specs besides roles/kueue/meta/entry_points.yml
_GEN = importlib.util.spec_from_file_location("gen_role_specs", os.path.join(REPO, "hack", "gen_role_specs.py"))
gen_role_specs = importlib.util.module_from_spec(_GEN)
_GEN.loader.exec_module(gen_role_specs)
MODULES = sorted(f[:-3] for f in os.listdir(os.path.join(REPO, "plugins", "modules")) if f.endswith(".py")
                 and not f.startswith("_"))
FILTERS = sorted(f[:-3] for f in os.listdir(os.path.join(REPO, "plugins", "filter")) if f.endswith(".py")
                 and not f.startswith("_"))


def test_build_install_and_ansible_doc(tmp_path):
    build = subprocess.run([os.path.join(BIN, "ansible-galaxy"), "collection", "build", REPO,
                            "--output-path", str(tmp_path)], capture_output=True, text=True, check=True)
    tarball = [p for p in os.listdir(tmp_path) if p.endswith(".tar.gz")]
    with open(os.path.join(REPO, "galaxy.yml")) as handle:
        version = yaml.safe_load(handle)["version"]
    assert tarball == ["kueueops-aks-%s.tar.gz" % version], build.stdout
    listing = subprocess.run(["tar", "tzf", str(tmp_path / tarball[0])], capture_output=True, text=True,
                             check=True).stdout.split()
    # What is shipped, and what is not (build_ignore).
    assert "plugins/modules/kueue_helm.py" in listing and "roles/kueue/meta/argument_specs.yml" in listing
    excluded = ("tests/harness", "tests/reliability", "tests/unit", "tests/__init__.py", "tests/conftest.py", "hack/",
                ".venv", ".run")
    assert not [p for p in listing if p.startswith(excluded)]
    # Of tests/, only ansible-test's configuration and its integration targets are shipped (ansible-test integration
    # runs them from the installed collection).
    assert "tests/config.yml" in listing and "tests/integration/targets/kueue_helm/tasks/main.yml" in listing
    assert not [p for p in listing if p.startswith("tests/integration/") and p != "tests/integration/"
                and not p.startswith("tests/integration/targets/")]
    dest = tmp_path / "collections"
    # Only the fresh path: with the working tree's collection path in the environment (make
    # exports it), ansible-galaxy would find kueueops.aks installed there and skip the install.
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(dest))
    subprocess.run([os.path.join(BIN, "ansible-galaxy"), "collection", "install", str(tmp_path / tarball[0]),
                    "-p", str(dest), "--force"], capture_output=True, text=True, check=True, env=env)
    assert (dest / "ansible_collections" / "kueueops" / "aks" / "MANIFEST.json").is_file()
    for module in MODULES:
        doc = subprocess.run([os.path.join(BIN, "ansible-doc"), "--json", "kueueops.aks." + module],
                             capture_output=True, text=True, env=env)
        assert doc.returncode == 0, doc.stderr
        data = json.loads(doc.stdout)["kueueops.aks." + module]
        assert data["doc"]["short_description"] and data["examples"] and data["return"]
        assert "kubeconfig" in data["doc"]["options"]  # the shared kube_auth fragment
    assert {"kueue_extension", "kueue_helm", "kueue_info", "kueue_queues"} <= set(MODULES)
    for name in FILTERS:
        doc = subprocess.run([os.path.join(BIN, "ansible-doc"), "-t", "filter", "--json", "kueueops.aks." + name],
                             capture_output=True, text=True, env=env)
        assert doc.returncode == 0, doc.stderr
        assert json.loads(doc.stdout)["kueueops.aks." + name]["doc"]["short_description"]
    role = subprocess.run([os.path.join(BIN, "ansible-doc"), "-t", "role", "--json", "kueueops.aks.kueue"],
                          capture_output=True, text=True, env=env)
    assert role.returncode == 0, role.stderr
    entry_points = json.loads(role.stdout)["kueueops.aks.kueue"]["entry_points"]
    assert {"main", "install", "configure_queues", "uninstall_with_backup", "upgrade", "multikueue"} == set(entry_points)
    # the shared role's page lists its entry points, naming the job role of each, without a copy of its options
    assert not [e for e, spec in entry_points.items() if spec.get("options")], entry_points
    with open(dest / "ansible_collections" / "kueueops" / "aks" / "roles" / "kueue" / "meta" / "entry_points.yml") as f:
        source = yaml.safe_load(f)["entry_points"]
    # the job roles (issue 13): each renders, with the options of the shared role's entry point it runs
    for job in ("install", "configure_queues", "uninstall_with_backup", "upgrade", "multikueue"):
        assert "kueueops.aks." + job in entry_points[job]["short_description"]
        assert "roles/%s/meta/argument_specs.yml" % job in listing and "roles/%s/tasks/main.yml" % job in listing
        doc = subprocess.run([os.path.join(BIN, "ansible-doc"), "-t", "role", "--json", "kueueops.aks." + job],
                             capture_output=True, text=True, env=env)
        assert doc.returncode == 0, doc.stderr
        main = json.loads(doc.stdout)["kueueops.aks." + job]["entry_points"]
        assert list(main) == ["main"] and main["main"]["short_description"] == source[job]["short_description"]
        # entry_points.yml's options, and the kueue_helm variables hack/gen_role_specs.py adds to the entry points
        # that install (issue 42, item 4: a new kueue_helm option is a role variable with no edit of the roles)
        helm = set(gen_role_specs.helm_variables().values()) if job in gen_role_specs.HELM_ENTRY_POINTS else set()
        assert set(main["main"]["options"]) == set(source[job]["options"]) | helm, job
        text = subprocess.run([os.path.join(BIN, "ansible-doc"), "-t", "role", "kueueops.aks." + job],
                              capture_output=True, text=True, env=dict(env, ANSIBLE_NOCOLOR="1"))  # bold is *main*
        assert text.returncode == 0 and "ENTRY POINT: *main*" in text.stdout, text.stdout[:500] + text.stderr


def test_module_defaults_for_the_action_group(cluster):
    """No kubeconfig on the task and none in the environment: module_defaults supplies it."""
    env = {"K8S_AUTH_KUBECONFIG": "", "KUBECONFIG": "/nonexistent"}
    play = [{"name": "defaults", "hosts": "local", "gather_facts": False,
             "module_defaults": {"group/kueueops.aks.kueue": {"kubeconfig": cluster.kubeconfig}},
             "tasks": [{"name": "Status", "kueueops.aks.kueue_verify": {"wait": False, "fail_on_error": False}}]}]
    result = run_playbook(play, env=env)
    assert result.rc == 0, result
    # It reached the cluster (a failed deployment check means it talked to the API server).
    assert result.result("Status")["checks"]
    without = run_playbook([dict(play[0], module_defaults={})], env=env)
    assert without.rc != 0 and "kubeconfig" in " ".join(without.failure_messages())


def test_execution_environment_build_context(tmp_path):
    """`ansible-builder create` on execution-environment.yml gives a context whose galaxy stage
    installs our tarball, whose introspection yields our Python and system requirements, and
    which carries the pinned helm. No image is built (no container engine here): the stages
    that can run without one are run exactly as the Containerfile does."""
    out = tmp_path / "ee"
    run = subprocess.run(["bash", os.path.join(REPO, "hack", "ee-context.sh")], capture_output=True, text=True,
                         env=dict(os.environ, EE_OUT=str(out)))
    assert run.returncode == 0, run.stdout + run.stderr
    context = out / "context"
    containerfile = (context / "Containerfile").read_text()
    assert "COPY _build/helm/helm /usr/local/bin/helm" in containerfile
    assert "ansible-galaxy collection install" in containerfile and "-r requirements.yml" in containerfile
    # The galaxy stage: WORKDIR /build (= _build), install -r requirements.yml.
    coll = tmp_path / "collections"
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(coll))
    install = subprocess.run([os.path.join(BIN, "ansible-galaxy"), "collection", "install", "-r", "requirements.yml",
                              "--collections-path", str(coll)], cwd=str(context / "_build"),
                             capture_output=True, text=True, env=env)
    assert install.returncode == 0, install.stdout + install.stderr
    assert (coll / "ansible_collections" / "kueueops" / "aks" / "meta" / "execution-environment.yml").is_file()
    # The builder stage: introspect the installed collections for pip and bindep requirements.
    intro = subprocess.run([sys.executable, str(context / "_build" / "scripts" / "introspect.py"), "introspect",
                            str(coll)], capture_output=True, text=True)
    assert intro.returncode == 0, intro.stderr
    wanted = [line.split("#")[0].strip() for line in open(os.path.join(REPO, "requirements.txt"))
              if line.strip() and not line.startswith("#") and not line.lower().startswith("pyyaml")]
    for requirement in wanted:
        assert requirement in intro.stdout, (requirement, intro.stdout)
    assert "ca-certificates" in intro.stdout  # bindep.txt
    helm = subprocess.run([str(context / "_build" / "helm" / "helm"), "version", "--short"],
                          capture_output=True, text=True)
    versions = open(os.path.join(REPO, "hack", "versions.env")).read()
    assert helm.returncode == 0 and helm.stdout.startswith(
        [v.split("=")[1] for v in versions.splitlines() if v.startswith("HELM_V3_VERSION=")][0])
