"""Every variable a user can set on a playbook is documented (issue 43): a role's argument spec documents it, or the
playbook's section of the playbooks guide (docs/docsite/rst/playbooks.rst) does.

What a playbook reads is found by parsing it: every Jinja expression of the playbook (``{{ }}`` in any value, the
bare expressions of ``when``, ``that``, ``failed_when``, ``changed_when``, ``until``; ``hosts`` and ``serial``
included), and of the task files of the shared role kueueops.aks.kueue it runs that are not an entry point (``confirm``,
``restore``, ``aks_credentials``, ... through ``tasks_from``, and what they import in turn): the entry points' variables
are the job roles' (their argument specs, tests/unit/test_role_specs.py). What the playbook, or any task file it runs
(entry points included), sets itself (``register``, ``set_fact``, ``vars``, ``loop_var``) is not a user's variable.
"""
from __future__ import annotations

import functools
import glob
import os
import re
import warnings

import pytest
import yaml
from jinja2 import Environment, nodes
from jinja_walk import expressions

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOKS = sorted(os.path.basename(p) for p in glob.glob(os.path.join(ROOT, "playbooks", "*.yml")))
GUIDE = os.path.join(ROOT, "docs", "docsite", "rst", "playbooks.rst")
SHARED_TASKS = os.path.join(ROOT, "roles", "kueue", "tasks")
ROLE_VARS = os.path.join(ROOT, "roles", "kueue", "vars", "main.yml")
JOB_ROLES = {"install", "configure_queues", "uninstall_with_backup", "upgrade", "multikueue"}
# Ansible's own variables a playbook may read (its special variables); every variable of the collection is kueue_*.
ANSIBLE_VARIABLES = {"ansible_check_mode", "ansible_play_hosts", "ansible_play_hosts_all", "ansible_play_batch",
                     "ansible_failed_result", "ansible_failed_task", "inventory_hostname", "hostvars", "groups",
                     "playbook_dir", "role_path", "omit", "item", "lookup", "query", "q"} | set(Environment().globals)


def _load(path):
    with open(path) as handle:
        return yaml.safe_load(handle)


def _nodes(data):
    """Every mapping of a loaded YAML document, depth first."""
    if isinstance(data, dict):
        yield data
        for value in data.values():
            yield from _nodes(value)
    elif isinstance(data, list):
        for value in data:
            yield from _nodes(value)


def read_names(data) -> set:
    """The variables the Jinja expressions of a document read (names a template assigns itself left out)."""
    names = set()
    for _key, text, bare in expressions(data):
        with warnings.catch_warnings():    # a regex's backslash in a string literal ('\('): Ansible's Jinja reads it
            warnings.simplefilter("ignore", DeprecationWarning)
            template = Environment().parse("{{ %s }}" % text if bare else text)
        found = list(template.find_all(nodes.Name))
        names |= {n.name for n in found if n.ctx == "load"} - {n.name for n in found if n.ctx in ("store", "param")}
    return names


def set_names(data) -> set:
    names = set()
    for node in _nodes(data):
        if isinstance(node.get("register"), str):
            names.add(node["register"])
        for key in ("ansible.builtin.set_fact", "set_fact", "vars"):
            if isinstance(node.get(key), dict):
                names |= set(node[key])
        if isinstance(node.get("loop_control"), dict) and "loop_var" in node["loop_control"]:
            names.add(node["loop_control"]["loop_var"])
    return names


def runs(data) -> set:
    """The task files of the shared role a document runs: tasks_from of kueueops.aks.kueue, its imports, the entry
    point of each job role it runs."""
    files = set()
    for node in _nodes(data):
        for key in ("ansible.builtin.import_tasks", "ansible.builtin.include_tasks"):
            if isinstance(node.get(key), str):
                files.add(node[key][:-len(".yml")])
        for key in ("ansible.builtin.import_role", "ansible.builtin.include_role"):
            if isinstance(node.get(key), dict):
                role = node[key]["name"].split(".")[-1]
                files.add(node[key].get("tasks_from", "main") if role == "kueue" else role)
        for role in node.get("roles") or []:
            files.add((role if isinstance(role, str) else role["role"]).split(".")[-1])
    return files


ENTRY_POINTS = set(_load(os.path.join(ROOT, "roles", "kueue", "meta", "entry_points.yml"))["entry_points"]) | {"main"}
SPEC_OPTIONS = set()
for _spec in glob.glob(os.path.join(ROOT, "roles", "*", "meta", "argument_specs.yml")):
    for _entry in _load(_spec)["argument_specs"].values():
        SPEC_OPTIONS |= set(_entry.get("options") or {})


@functools.lru_cache(maxsize=None)
def user_variables(playbook: str) -> frozenset:
    """The variables a playbook reads that neither it nor a task file it runs sets."""
    data = _load(os.path.join(ROOT, "playbooks", playbook))
    read, assigned = read_names(data), set_names(data)
    todo, seen = list(runs(data)), set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        tasks = _load(os.path.join(SHARED_TASKS, name + ".yml"))
        assigned |= set_names(tasks)
        if name not in ENTRY_POINTS and name not in JOB_ROLES:
            read |= read_names(tasks)
        todo.extend(runs(tasks))
    # The variables files it loads (vars_files), and the shared role's vars/main.yml when it runs the role: what they
    # set is the collection's, what their templates read the playbook reads.
    files = [os.path.join(ROOT, "playbooks", path) for node in _nodes(data) for path in node.get("vars_files") or []]
    files += [ROLE_VARS] if seen else []
    for path in files:
        values = _load(path)
        read |= read_names(values)
        assigned |= set(values)
    return frozenset(read - assigned)


@functools.lru_cache(maxsize=None)
def guide_sections() -> dict:
    """The playbooks guide: section title -> the variables it documents (its definition list terms)."""
    with open(GUIDE) as handle:
        lines = handle.read().splitlines()
    sections, title = {}, None
    for i, line in enumerate(lines):
        if i + 1 < len(lines) and lines[i + 1] and set(lines[i + 1]) == {"-"} and len(lines[i + 1]) >= len(line) > 0:
            title = line
            sections[title] = set()
        match = re.match(r"^``(\w+)``$", line)
        if match and title and i + 1 < len(lines) and lines[i + 1].startswith("    "):
            sections[title].add(match.group(1))
    return sections


def documented_for(playbook: str) -> set:
    sections = guide_sections()
    own = [names for title, names in sections.items() if title.startswith("``%s``" % playbook)]
    assert len(own) == 1, "docs/docsite/rst/playbooks.rst has no section ``%s``: ... of its own" % playbook
    return own[0] | sections["Every playbook"]


@pytest.mark.parametrize("playbook", PLAYBOOKS)
def test_every_variable_the_playbook_reads_is_documented(playbook):
    variables = user_variables(playbook)
    assert not variables - ANSIBLE_VARIABLES - {v for v in variables if v.startswith("kueue_")}, (
        "%s reads a variable that is neither the collection's (kueue_*) nor Ansible's" % playbook)
    undocumented = {v for v in variables if v.startswith("kueue_")} - SPEC_OPTIONS - documented_for(playbook)
    assert not undocumented, ("%s reads %s, which no role's argument spec documents: document it in its section of "
                              "docs/docsite/rst/playbooks.rst" % (playbook, sorted(undocumented)))


@pytest.mark.parametrize("playbook", PLAYBOOKS)
def test_the_guide_documents_only_what_the_playbook_reads(playbook):
    own = [names for title, names in guide_sections().items() if title.startswith("``%s``" % playbook)][0]
    assert own <= user_variables(playbook), "the guide documents variables %s does not read" % playbook


def test_the_variables_issue_43_named_are_found_and_documented():
    """The parse finds what a reader of the playbooks finds (the variables issue 43 listed)."""
    found = {v for playbook in PLAYBOOKS for v in user_variables(playbook)}
    assert {"kueue_target_hosts", "kueue_status_report", "kueue_fail_on_drift", "kueue_upgrade_serial",
            "kueue_restore_reinstall", "kueue_backup_path", "kueue_confirm_hosts", "kueue_migrate_to"} <= found
    assert "kueue_target_hosts" in guide_sections()["Every playbook"]


def test_the_parse_sees_conditions_templates_and_defaults():
    play = [{"hosts": "{{ kueue_a | default('all') }}", "serial": "{{ kueue_b }}", "vars": {"kueue_set": 1},
             "tasks": [{"ansible.builtin.debug": {"msg": "{% for x in kueue_c %}{{ x }}{% endfor %}"},
                        "when": "kueue_d | bool and kueue_set", "register": "kueue_r"},
                       {"ansible.builtin.set_fact": {"kueue_f": "{{ kueue_r.x }}"}}]}]
    assert read_names(play) == {"kueue_a", "kueue_b", "kueue_c", "kueue_d", "kueue_set", "kueue_r"}
    assert set_names(play) == {"kueue_set", "kueue_r", "kueue_f"}
