"""The examples of the README and the guides work as written (issue 43): a broken example fails CI.

The pages: README.md, docs/*.md, docs/docsite/rst/*.rst and the roles' READMEs. Their YAML examples (fenced ```yaml
blocks, ``.. code-block:: yaml`` and ``::`` literal blocks that are YAML) and their ``ansible-playbook`` command lines
(shell blocks, literal blocks) are read and checked:

- plays, task lists and play keywords (``module_defaults``) go through ``ansible-playbook --syntax-check``, with this
  checkout as the collection kueueops.aks (so a role or module name that does not exist fails too), all in one run;
- the role variables they set (a vars example, an inventory's host and group variables, a play's or a role's
  ``vars``, ``-e`` on a command line) must be documented (a role's argument spec, or the playbooks guide), and their
  values pass the job roles' argument specs (Ansible's own validator, as a role's validation task runs it); the
  values a module then checks further are checked by the module's own code: the GitOps objects of
  ``kueue_gitops_pause`` (``gitops.parse_ref``, which refused the uninstall example without an ``apiVersion``) and
  the Kueue objects of ``kueue_resources`` (``queues.normalise_all`` and ``queues.validate``, as kueue_queues runs
  them before it reads the cluster);
- a command's playbook (``kueueops.aks.<name>`` or ``playbooks/<name>.yml``) and a repository file it loads with
  ``-e @`` exist.

A value with a Jinja expression is left to the play that renders it.
"""
from __future__ import annotations

import functools
import glob
import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass

import pytest
import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.kueueops.aks.plugins.module_utils.kueue import kueue_api as api
from ansible_collections.kueueops.aks.plugins.module_utils.kueue import queues as q
from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import KueueOpsError
from ansible_collections.kueueops.aks.plugins.module_utils.backup.gitops import parse_ref
from test_playbook_vars import SPEC_OPTIONS, guide_sections

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PATTERNS = ("README.md", "docs/*.md", "docs/docsite/rst/*.rst", "roles/*/README.md")
PAGES = sorted(os.path.relpath(p, ROOT) for pattern in PATTERNS for p in glob.glob(os.path.join(ROOT, pattern)))
SHELL = {"bash", "sh", "shell", "console"}
PLAY_KEYWORDS = {"module_defaults", "vars", "environment", "collections", "gather_facts", "connection"}
JOB_ROLES = ("install", "configure_queues", "uninstall_with_backup", "upgrade", "multikueue")


@dataclass
class Block:
    page: str
    line: int
    lang: str     # yaml, bash, ..., or "literal" for an rst :: block
    text: str

    @property
    def where(self) -> str:
        return "%s:%d" % (self.page, self.line)


def _indented(lines, start):
    """The indented body of an rst directive or literal block starting after lines[start]: (first line, text)."""
    j = start + 1
    while j < len(lines) and (not lines[j].strip() or lines[j].lstrip().startswith(":") and j == start + 1):
        j += 1
    if j >= len(lines) or not lines[j].startswith(" "):
        return j, ""
    indent = len(lines[j]) - len(lines[j].lstrip())
    body, k = [], j
    while k < len(lines) and (not lines[k].strip() or len(lines[k]) - len(lines[k].lstrip()) >= indent):
        body.append(lines[k][indent:])
        k += 1
    return j + 1, "\n".join(body).strip("\n") + "\n"


def blocks(page: str) -> list:
    with open(os.path.join(ROOT, page)) as handle:
        text = handle.read()
    found = []
    if page.endswith(".md"):
        for m in re.finditer(r"^```(\w*)[^\n]*\n(.*?)^```", text, re.S | re.M):
            found.append(Block(page, text[:m.start()].count("\n") + 2, m.group(1).lower() or "text", m.group(2)))
        return found
    lines = text.splitlines()
    for i, line in enumerate(lines):
        directive = re.match(r"^\s*\.\. code-block::\s*(\S+)", line)
        if directive or (line.rstrip().endswith("::") and not re.match(r"^\s*\.\. ", line)):
            first, body = _indented(lines, i)
            if body:
                found.append(Block(page, first, directive.group(1).lower() if directive else "literal", body))
    return found


ALL_BLOCKS = [b for page in PAGES for b in blocks(page)]


def yaml_examples() -> list:
    """(block, data) of every YAML example: the yaml blocks, and the literal blocks that are YAML collections."""
    out = []
    for block in ALL_BLOCKS:
        if block.lang not in ("yaml", "yml", "yaml+jinja", "literal"):
            continue
        try:
            data = yaml.safe_load(block.text)
        except yaml.YAMLError as exc:
            if block.lang == "literal":
                continue     # prose or a command
            raise AssertionError("%s: not YAML: %s" % (block.where, exc))
        if isinstance(data, (dict, list)):
            out.append((block, data))
    return out


def kind_of(data) -> str:
    if isinstance(data, list) and data and all(isinstance(p, dict) and ("hosts" in p or "import_playbook" in p)
                                               for p in data):
        return "playbook"
    if isinstance(data, list) and data and all(isinstance(t, dict) and any("." in k or k == "block" for k in t)
                                               for t in data):
        return "tasks"
    if isinstance(data, dict) and data and set(data) <= PLAY_KEYWORDS and "module_defaults" in data:
        return "play keywords"
    if isinstance(data, dict) and any(_is_group(g) for g in data.values()):
        return "inventory"      # (an inventory and a vars file shown in one block: both)
    if isinstance(data, dict) and any(str(k).startswith("kueue_") for k in data):
        return "vars"
    return "other"


def _is_group(value) -> bool:
    return isinstance(value, dict) and bool(value) and set(value) <= {"hosts", "children", "vars"}


def as_playbook(data):
    kind = kind_of(data)
    if kind == "playbook":
        return data
    if kind == "tasks":
        return [{"hosts": "localhost", "gather_facts": False, "tasks": data}]
    return [dict({"hosts": "localhost", "gather_facts": False, "tasks": []}, **data)]


def commands() -> list:
    """(block, argv) of every ansible-playbook command line of the shell and literal blocks."""
    out = []
    for block in ALL_BLOCKS:
        if block.lang not in SHELL | {"literal"}:
            continue
        for line in block.text.replace("\\\n", " ").splitlines():
            line = re.sub(r"^\s*\$\s+", "", line).strip()
            if line.startswith("ansible-playbook "):
                out.append((block, shlex.split(line, comments=True)))
    return out


# ------------------------------------------------------------------ the variables the examples set
def _inventory_vars(group: dict):
    yield from (group.get("vars") or {}).items()
    for host in (group.get("hosts") or {}).values():
        yield from (host or {}).items()
    for child in (group.get("children") or {}).values():
        yield from _inventory_vars(child or {})


def _play_vars(data):
    """The vars of plays, blocks, tasks and role entries of a play list."""
    if isinstance(data, dict):
        if isinstance(data.get("vars"), dict):
            yield from data["vars"].items()
        for value in data.values():
            yield from _play_vars(value)
    elif isinstance(data, list):
        for value in data:
            yield from _play_vars(value)


def _extra_vars(argv):
    """The -e / --extra-vars of a command: key=value words (strings, as Ansible takes them) and JSON/YAML mappings."""
    for i, arg in enumerate(argv[:-1]):
        if arg not in ("-e", "--extra-vars") or argv[i + 1].startswith("@"):
            continue
        value = argv[i + 1]
        if value.lstrip().startswith("{"):
            yield from yaml.safe_load(value).items()
        else:
            for word in shlex.split(value):
                key, _, val = word.partition("=")
                yield key, val


def example_variables() -> list:
    """(where, name, value) of every variable an example sets."""
    out = []
    for block, data in yaml_examples():
        kind = kind_of(data)
        if kind in ("inventory", "vars"):
            pairs = [kv for key, value in data.items()
                     for kv in (_inventory_vars(value) if _is_group(value) else [(key, value)])]
        elif kind in ("playbook", "tasks", "play keywords"):
            pairs = list(_play_vars(data))
        else:
            pairs = []
        out += [(block.where, k, v) for k, v in pairs]
    for block, argv in commands():
        out += [(block.where, k, v) for k, v in _extra_vars(argv)]
    return out


@functools.lru_cache(maxsize=None)
def _job_role_options() -> dict:
    """Every job role's options, by name (a name two roles take is documented alike: test_role_specs)."""
    options = {}
    for role in JOB_ROLES:
        with open(os.path.join(ROOT, "roles", role, "meta", "argument_specs.yml")) as handle:
            options.update(yaml.safe_load(handle)["argument_specs"]["main"]["options"])
    return options


def _role_spec(name: str) -> dict:
    # a playbook's own variable (documented in the playbooks guide) has no spec: any value
    return _job_role_options().get(name, {"type": "raw"})


def _has_jinja(value) -> bool:
    return "{{" in json.dumps(value, default=str) or "{%" in json.dumps(value, default=str)


def value_problems(name: str, value) -> list:
    """What the role's argument validation, then the module's own check of such a value, says of it."""
    if _has_jinja(value):
        return []
    result = ArgumentSpecValidator({name: _role_spec(name)}).validate({name: value})
    problems = [str(e) for e in result.errors]
    if problems:
        return problems
    value = result.validated_parameters[name]
    if name == "kueue_gitops_pause":
        for index, item in enumerate(value or []):
            try:
                parse_ref(item, index)
            except KueueOpsError as exc:
                problems.append(exc.message())
    if name == "kueue_resources":
        found = []
        served = dict((kind, "v1beta2") for kind in api.KIND_ORDER)
        objects = q.normalise_all([("kueue_resources[%d]" % i, d) for i, d in enumerate(value or [])], served, found)
        found += q.validate(objects, {}, set(), create_namespaces=True)
        problems += [str(p) for p in found]
    return problems


# ------------------------------------------------------------------ the tests
def test_the_examples_are_found():
    kinds = [kind_of(data) for _block, data in yaml_examples()]
    assert kinds.count("playbook") >= 8 and kinds.count("inventory") >= 4 and "tasks" in kinds and "vars" in kinds
    assert "play keywords" in kinds
    assert len(commands()) >= 20 and len(example_variables()) >= 40
    # each kind of page holds some
    assert {b.page.split("/")[0] for b, _ in yaml_examples()} >= {"README.md", "docs", "roles"}
    assert any(b.page.endswith(".rst") and b.lang == "literal" for b, _ in yaml_examples())


@pytest.fixture(scope="module")
def collection(tmp_path_factory):
    """ANSIBLE_COLLECTIONS_PATH with this checkout as kueueops.aks."""
    base = tmp_path_factory.mktemp("collections")
    (base / "ansible_collections" / "kueueops").mkdir(parents=True)
    os.symlink(ROOT, base / "ansible_collections" / "kueueops" / "aks")
    return str(base)


def syntax_check(collection: str, files: list) -> subprocess.CompletedProcess:
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collection, ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="False", ANSIBLE_INVENTORY_UNPARSED_WARNING="False")
    return subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "--syntax-check",
                           "-i", "localhost,"] + files, capture_output=True, text=True, env=env)


def test_the_plays_and_tasks_pass_syntax_check(collection, tmp_path):
    files = []
    for block, data in yaml_examples():
        if kind_of(data) in ("playbook", "tasks", "play keywords"):
            path = tmp_path / ("%s-line%d.yml" % (block.page.replace("/", "_"), block.line))
            path.write_text(yaml.safe_dump(as_playbook(data), sort_keys=False))
            files.append(str(path))
    assert len(files) >= 10
    run = syntax_check(collection, files)
    if run.returncode != 0:     # name each example that fails
        failed = [f for f in files if syntax_check(collection, [f]).returncode != 0]
        raise AssertionError("these examples fail ansible-playbook --syntax-check: %s\n%s"
                             % ([os.path.basename(f) for f in failed], run.stdout[-3000:] + run.stderr[-3000:]))


def test_the_syntax_check_fails_a_broken_example(collection, tmp_path):
    """A role that does not exist, as a renamed role would leave an example."""
    path = tmp_path / "broken.yml"
    path.write_text(yaml.safe_dump([{"hosts": "localhost", "roles": ["kueueops.aks.install_kueue"]}]))
    assert syntax_check(collection, [str(path)]).returncode != 0


def test_every_variable_an_example_sets_is_documented_and_valid():
    documented = set(SPEC_OPTIONS).union(*guide_sections().values())
    wrong = []
    for where, name, value in example_variables():
        if not str(name).startswith("kueue_"):
            continue    # ansible_connection, a user's own variable, a module_defaults option
        if name not in documented:
            wrong.append("%s: %s is documented nowhere" % (where, name))
            continue
        wrong += ["%s: %s: %s" % (where, name, problem) for problem in value_problems(name, value)]
    assert wrong == []


def test_the_value_checks_refuse_what_the_modules_refuse():
    # the uninstall example before its fix: a GitOps object without its apiVersion
    assert value_problems("kueue_gitops_pause", [{"kind": "Kustomization", "namespace": "flux-system",
                                                  "name": "kueue-queues"}]) == \
        ["objects[0]: apiVersion missing. Fix: give apiVersion, kind, name and namespace of each GitOps object."]
    assert value_problems("kueue_gitops_pause", [{"apiVersion": "kustomize.toolkit.fluxcd.io/v1",
                                                  "kind": "Kustomization", "namespace": "flux-system",
                                                  "name": "kueue-queues"}]) == []
    assert value_problems("kueue_install_method", "kubectl")        # not a choice
    assert value_problems("kueue_feature_gates", ["TopologyAwareScheduling"])       # not a dict
    assert value_problems("kueue_resources", [{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                                               "metadata": {"name": "a", "namespace": "team-a"},
                                               "spec": {"clusterQueue": "nowhere"}}])
    assert value_problems("kueue_version", "{{ wanted }}") == []


def test_every_command_names_a_playbook_and_files_that_exist():
    wrong = []
    for block, argv in commands():
        books = [a for a in argv[1:] if a.endswith(".yml") and "/" in a or a.startswith("kueueops.aks.")]
        books = [a for a in books if not any(argv[i - 1] in ("-i", "-e", "--extra-vars") for i, x in
                                             enumerate(argv) if x == a)]
        if len(books) != 1:
            wrong.append("%s: %s names no playbook" % (block.where, " ".join(argv)))
            continue
        name = books[0][len("kueueops.aks."):] + ".yml" if books[0].startswith("kueueops.aks.") else \
            books[0].split("/")[-1]
        if not os.path.isfile(os.path.join(ROOT, "playbooks", name)):
            wrong.append("%s: no playbook %s" % (block.where, books[0]))
        for i, arg in enumerate(argv[:-1]):
            loaded = argv[i + 1][1:]
            if arg in ("-e", "--extra-vars") and argv[i + 1].startswith("@") and loaded.startswith("playbooks/") \
                    and not os.path.isfile(os.path.join(ROOT, loaded)):
                wrong.append("%s: no file %s" % (block.where, loaded))
    assert wrong == []
