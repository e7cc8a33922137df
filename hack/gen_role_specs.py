#!/usr/bin/env python3
"""Write meta/argument_specs.yml of the six roles from roles/kueue/meta/entry_points.yml.

roles/install, roles/configure_queues, roles/uninstall_with_backup, roles/upgrade and roles/multikueue are thin
roles: each runs one entry point of roles/kueue (the shared implementation), so each one's ``main`` entry point takes
exactly the options of that entry point. The options are written once, in roles/kueue/meta/entry_points.yml, and this
script writes:

- each job role's meta/argument_specs.yml: its entry point's options copied verbatim, one sentence added to the
  description; the job role documents the options (ansible-doc, the docs site) and validates them;
- roles/kueue/meta/argument_specs.yml: the shared role's own page, each entry point with a short description of its own
  that names the job role running it, and no options (the job role validated them before the entry point starts), so
  that page is an index of the entry points rather than a second copy of the five job roles' options.

It also writes what the roles and playbooks take from kueueops.aks.kueue_helm's options (issue 42, item 4), so that a
new Helm option is its argument spec, its documentation, the module's code and its test, and nothing else: every
option of kueue_helm's documentation (its own and its doc fragments') but those a task sets itself (HELM_TASK_OPTIONS)
is the role variable ``kueue_helm_<option>`` (or the name HELM_VARIABLES gives), and from that table this script writes

- roles/kueue/vars/main.yml: ``kueue_helm_module_defaults`` (every such option from its variable, with the role's
  default or omitted), the same for kueue_upgrade_plan and kueue_drift_info (the kueue_helm options they take too),
  which every task of the roles and playbooks calling those modules takes as ``module_defaults``, and
  ``kueue_helm_only_options``, the Helm-only variables a run sets (the install entry point refuses them on the managed
  extension);
- plugins/plugin_utils/role_variables.py: the option -> variable table role_hint.py names in a failure;
- in the job roles' specs, an option of the install, upgrade and multikueue entry points for each such variable that
  roles/kueue/meta/entry_points.yml does not document, from the module's documentation.

tests/unit/test_role_specs.py fails when a written file differs from what this script would write. After changing
roles/kueue/meta/entry_points.yml or kueue_helm's options, run:

    .venv/bin/python hack/gen_role_specs.py          # rewrites the eight files
    .venv/bin/python hack/gen_role_specs.py --check  # exit 1 if any is out of date

Needs only the Python standard library and PyYAML.
"""

from __future__ import annotations

import argparse
import ast
import copy
import os
import re
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE = os.path.join(ROOT, "roles", "kueue", "meta", "entry_points.yml")
SHARED_ROLE = "kueue"
# wrapper role -> the entry point of roles/kueue it runs (its tasks/main.yml imports it)
WRAPPERS = {
    "install": "install",
    "configure_queues": "configure_queues",
    "uninstall_with_backup": "uninstall_with_backup",
    "upgrade": "upgrade",
    "multikueue": "multikueue",
}
# The shared role's main entry point (roles/kueue/tasks/main.yml) runs this one.
MAIN_RUNS = "install"

# ---- kueue_helm's options as role variables
MODULES = os.path.join(ROOT, "plugins", "modules")
HELM = "kueue_helm"
# kueue_helm's options that each task sets itself: no role variable.
HELM_TASK_OPTIONS = ("state", "rollback_revision", "create_namespace", "allow_minor_change", "delete_namespace")
# The connection options of the kube_auth fragment the roles pass (the others are the module's own).
KUBE_VARIABLES = {"kubeconfig": "kueue_kubeconfig", "context": "kueue_kube_context"}
# The Azure options the roles pass: every option of the azure_auth fragment, each from kueue_azure_<option>.
AZURE_FRAGMENT = os.path.join(ROOT, "plugins", "doc_fragments", "azure_auth.py")
# The options whose variable is not kueue_helm_<option>.
HELM_VARIABLES = dict(KUBE_VARIABLES, release_name="kueue_release_name", release_namespace="kueue_namespace",
                      chart_version="kueue_version", feature_gates="kueue_feature_gates",
                      integrations="kueue_integrations", binary_path="kueue_helm_binary")
# The modules whose tasks take kueue_helm's options from the variables (the ones they have too), as module_defaults.
HELM_OPTION_MODULES = (HELM, "kueue_upgrade_plan", "kueue_drift_info")
# The variables the managed extension path uses too (not refused there as Helm-only).
SHARED_VARIABLES = ("kueue_namespace", "kueue_helm_binary", "kueue_helm_wait", "kueue_helm_timeout") + tuple(
    KUBE_VARIABLES.values())
# The entry points that take every kueue_helm variable.
HELM_ENTRY_POINTS = ("install", "upgrade", "multikueue")
DEFAULTS = os.path.join(ROOT, "roles", "kueue", "defaults", "main.yml")
VARS = os.path.join(ROOT, "roles", "kueue", "vars", "main.yml")
ROLE_VARIABLES = os.path.join(ROOT, "plugins", "plugin_utils", "role_variables.py")
HEADER = """\
---
# GENERATED by hack/gen_role_specs.py from roles/kueue/meta/entry_points.yml ({what}):
# do not edit. Change that file, then run `.venv/bin/python hack/gen_role_specs.py`;
# tests/unit/test_role_specs.py fails while this file differs from what the script writes.
"""


class _Dumper(yaml.SafeDumper):
    """Block style with sequences indented under their key, as in the hand-written specs."""

    def increase_indent(self, flow=False, indentless=False):
        return super().increase_indent(flow, False)


def _str(dumper, value):
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_Dumper.add_representer(str, _str)


def load_source() -> dict:
    """The entry points of roles/kueue/meta/entry_points.yml, by name, with the kueue_helm variables they lack."""
    with open(SOURCE) as handle:
        return with_helm_options(yaml.safe_load(handle)["entry_points"])


def _role_ref(role: str) -> str:
    return "R(kueueops.aks.%s,ansible_collections.kueueops.aks.%s_role)" % (role, role)


def entry_spec(source: dict, role: str) -> dict:
    """The wrapper's ``main`` entry point: the shared entry point, with a sentence on where it comes from."""
    entry = WRAPPERS[role]
    spec = copy.deepcopy(source[entry])
    description = spec.get("description") or []
    if isinstance(description, str):
        description = [description]
    spec["description"] = list(description) + [
        "This role runs the C(%s) entry point of the kueueops.aks.kueue role (the shared implementation, whose "
        "defaults apply) and takes exactly its options; every job role shares the C(kueue_*) variables." % entry]
    return spec


def shared_specs(source: dict) -> dict:
    """The shared role's entry points: what each does and which job role runs it; their options are the job role's."""
    job_of = {entry: role for role, entry in WRAPPERS.items()}
    assert set(job_of) == set(source), "every entry point of %s has a job role in WRAPPERS" % SOURCE
    specs = {"main": {
        "short_description": "The shared implementation of the job roles; run those instead",
        "description": [
            "The collection's job roles are thin: each one is a static import of an entry point of this role, and all "
            "of them share the C(kueue_*) variables and this role's defaults. Their pages document the variables, "
            "and each job role validates them before its entry point runs.",
            "Run the job roles (C(roles:), C(import_role), C(include_role)). A play that needs several jobs runs "
            "several job roles with one set of C(kueue_*) variables.",
            "The C(main) entry point runs C(%s), as %s does, but without checking the variables against an "
            "argument spec first; so does every entry point below when this role is imported with C(tasks_from)."
            % (MAIN_RUNS, _role_ref(job_of[MAIN_RUNS])),
        ],
        "version_added": source[MAIN_RUNS]["version_added"],
        "author": copy.deepcopy(source[MAIN_RUNS].get("author", [])),
    }}
    for entry, spec in source.items():
        role = job_of[entry]
        specs[entry] = {
            "short_description": "The entry point that kueueops.aks.%s runs" % role,
            "description": [
                "%s. Its variables are documented, and validated, by %s."
                % (spec["short_description"].rstrip("."), _role_ref(role)),
            ],
            "version_added": spec["version_added"],
            "author": copy.deepcopy(spec.get("author", [])),
        }
    return specs


def _doc_assignments(path: str, owner: str | None = None) -> dict:
    """The YAML documentation strings assigned in a module file (or in class ``owner`` of a doc fragment), by name."""
    with open(path) as handle:
        body = ast.parse(handle.read()).body
    if owner:
        body = next(n.body for n in body if isinstance(n, ast.ClassDef) and n.name == owner)
    return dict((n.targets[0].id, yaml.safe_load(n.value.value)) for n in body
                if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str))


def module_options(module: str) -> dict:
    """The documented options of ``module``: its DOCUMENTATION's and those of this collection's fragments it extends."""
    doc = _doc_assignments(os.path.join(MODULES, module + ".py"))["DOCUMENTATION"]
    options = dict(doc.get("options") or {})
    for fragment in doc.get("extends_documentation_fragment") or []:
        if fragment.startswith("kueueops.aks."):
            file_name, _dot, section = fragment[len("kueueops.aks."):].partition(".")
            docs = _doc_assignments(os.path.join(ROOT, "plugins", "doc_fragments", file_name + ".py"),
                                    "ModuleDocFragment")
            for name, spec in (docs[(section or "documentation").upper()].get("options") or {}).items():
                options.setdefault(name, spec)
    return options


def helm_variables(options: dict | None = None) -> dict:
    """{kueue_helm option: its role variable}, in the order of the module's documentation."""
    options = module_options(HELM) if options is None else options
    kube_auth = _doc_assignments(os.path.join(ROOT, "plugins", "doc_fragments", "kube_auth.py"), "ModuleDocFragment")
    kube_only = set(kube_auth["DOCUMENTATION"]["options"]) - set(KUBE_VARIABLES)  # the roles pass two of them
    return dict((name, HELM_VARIABLES.get(name, "kueue_helm_" + name)) for name in options
                if name not in HELM_TASK_OPTIONS and name not in kube_only)


def _role_defaults() -> dict:
    with open(DEFAULTS) as handle:
        return yaml.safe_load(handle) or {}


def _literal(value) -> str:
    """``value`` as a Jinja literal."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return "'%s'" % value.replace("\\", "\\\\").replace("'", "\\'")
    return repr(value)


def _expression(variable: str, spec: dict, defaults: dict) -> str:
    """The module argument ``variable`` gives: its value (the role's defaults apply: only the role's tasks read
    vars/main.yml); omitted where the role has no default, or where the role's default is an empty list or mapping and
    the module's is none (empty means unset: integrations [] would be "no framework")."""
    if variable not in defaults or defaults[variable] is None:
        return "{{ %s | default(omit) }}" % variable
    if defaults[variable] in ([], {}) and spec.get("default") is None:
        return "{{ %s if %s | length > 0 else omit }}" % (variable, variable)
    return "{{ %s }}" % variable


def _was_set(variable: str, spec: dict, defaults: dict) -> str:
    """A test that ``variable`` is set to something other than the role's default."""
    if variable not in defaults or defaults[variable] is None:
        return "%s | default('', true) | length > 0" % variable
    default = defaults[variable]
    if isinstance(default, bool):
        return "%s%s | bool" % ("" if not default else "not ", variable)
    if isinstance(default, (list, dict)):
        return "%s | length > 0" % variable
    if isinstance(default, int):
        return "%s | int != %d" % (variable, default)
    return "%s | string != %s" % (variable, _literal(str(default)))


def azure_variables() -> dict:
    """{Azure option: its role variable}: every option of the azure_auth fragment (DOCUMENTATION and CONNECTION)."""
    docs = _doc_assignments(AZURE_FRAGMENT, "ModuleDocFragment")
    names = list(docs["DOCUMENTATION"].get("options") or {}) + list(docs["CONNECTION"].get("options") or {})
    return dict((name, "kueue_azure_" + name) for name in names)


def helm_vars(options: dict | None = None, defaults: dict | None = None) -> dict:
    """roles/kueue/vars/main.yml's module_defaults of each module of HELM_OPTION_MODULES, without the connection
    options (the tasks combine them with kueue_kube_options)."""
    options = module_options(HELM) if options is None else options
    defaults = _role_defaults() if defaults is None else defaults
    variables = helm_variables(options)
    out = {}
    for module in HELM_OPTION_MODULES:
        takes = module_options(module) if module != HELM else options
        out["%s_module_defaults" % module] = dict(
            (name, _expression(variable, options[name], defaults)) for name, variable in variables.items()
            if name in takes and name not in KUBE_VARIABLES)
    return out


def set_options(variables: dict) -> str:
    """The expression of a mapping of the options whose variable is set (neither undefined, none nor empty), each
    from its variable: the connection the roles' tasks take as module_defaults of their module. An option left out
    keeps what a play's module_defaults for the module's action group give it; passing it as omit would drop that."""
    pairs = ",\n     ".join("%s: %s | default(none)" % (_literal(name), variable) for name, variable in variables.items())
    return "{{ {\n     %s\n   } | dict2items | selectattr('value') | items2dict }}" % pairs


def helm_only_options(options: dict | None = None, defaults: dict | None = None) -> str:
    """The expression of ``kueue_helm_only_options``: the Helm-only variables a run sets, by name."""
    options = module_options(HELM) if options is None else options
    defaults = _role_defaults() if defaults is None else defaults
    tests = ["'%s' if %s else ''" % (variable, _was_set(variable, options[name], defaults))
             for name, variable in helm_variables(options).items() if variable not in SHARED_VARIABLES]
    return "{{ [\n     %s\n   ] | select | list }}" % ",\n     ".join(tests)


def render_vars(options: dict | None = None) -> str:
    return HEADER.format(what="kueueops.aks.kueue_helm's options").replace(
        "roles/kueue/meta/entry_points.yml (", "the kueue_helm module's documentation (") + (
        "# What the kueue_helm, kueue_upgrade_plan and kueue_drift_info tasks of the roles and playbooks take from the\n"
        "# kueue_* variables (their module_defaults: a task's own arguments win), and the Helm-only variables a run sets.\n"
        + yaml.dump(helm_vars(options), Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=1000)
        + "kueue_helm_only_options: >-\n  " + helm_only_options(options).replace("\n", "\n  ") + "\n"
        + "# The connection each task of the roles takes as module_defaults of its module (with the mappings above:\n"
        "# combine): only the options whose kueue_* variable is set, so that a play's module_defaults for\n"
        "# group/kueueops.aks.kueue and group/kueueops.aks.azure give the others (a task argument omitted with\n"
        "# default(omit) drops the play's value too, and the module would fall back to KUBECONFIG or AZURE_*).\n"
        + "kueue_kube_options: >-\n  " + set_options(KUBE_VARIABLES).replace("\n", "\n  ") + "\n"
        + "kueue_azure_options: >-\n  " + set_options(azure_variables()).replace("\n", "\n  ") + "\n")


def render_role_variables(options: dict | None = None) -> str:
    variables = helm_variables(options)
    takes = dict((module, [name for name in variables if name in module_options(module)])
                 for module in HELM_OPTION_MODULES if module != HELM)
    lines = ["# Copyright: (c) 2026, kueueops contributors",
             "# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)",
             '"""GENERATED by hack/gen_role_specs.py from kueueops.aks.kueue_helm\'s options: do not edit.',
             "",
             "HELM: each kueue_helm option the roles and playbooks set from a variable, and that variable. HELM_OPTIONS_OF:",
             'the kueue_helm options other modules take too, set by the same variables."""',
             "",
             "HELM = {"]
    lines += ["    %r: %r," % (name, variable) for name, variable in variables.items()]
    lines += ["}", "", "HELM_OPTIONS_OF = {"]
    for module, names in takes.items():
        lines.append("    %r: (" % module)
        lines += ["        %r," % name for name in names]
        lines.append("    ),")
    lines += ["}", ""]
    return "\n".join(lines)


_OPTION_REF = re.compile(r"O\(([a-z_]+)\)")


def _role_option(spec: dict, variables: dict) -> dict:
    """A role option documenting the variable of a kueue_helm option, from the module's documentation."""
    description = spec.get("description") or []
    description = [description] if isinstance(description, str) else list(description)
    description = [_OPTION_REF.sub(lambda m: "O(%s)" % variables[m.group(1)] if m.group(1) in variables else
                                   "C(%s)" % m.group(1), line) for line in description]
    out = {"description": description}
    for key in ("type", "elements", "choices"):
        if key in spec:
            out[key] = spec[key]
    return out


def with_helm_options(source: dict, options: dict | None = None) -> dict:
    """``source`` with an option for each kueue_helm variable an entry point of HELM_ENTRY_POINTS does not document."""
    options = module_options(HELM) if options is None else options
    variables = helm_variables(options)
    source = copy.deepcopy(source)
    for entry in HELM_ENTRY_POINTS:
        documented = source[entry].setdefault("options", {})
        for name, variable in variables.items():
            if variable not in documented:
                documented[variable] = _role_option(options[name], variables)
    return source


def _dump(specs: dict) -> str:
    return yaml.dump({"argument_specs": specs}, Dumper=_Dumper, sort_keys=False, default_flow_style=False,
                     width=112, allow_unicode=True)


def render(role: str, source: dict | None = None) -> str:
    if source is None:
        source = load_source()
    if role == SHARED_ROLE:
        return HEADER.format(what="the shared role's entry points, without their options") + _dump(shared_specs(source))
    return HEADER.format(what="entry point " + WRAPPERS[role]) + _dump({"main": entry_spec(source, role)})


def target(role: str) -> str:
    return os.path.join(ROOT, "roles", role, "meta", "argument_specs.yml")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report files that are out of date (exit 1)")
    args = parser.parse_args(argv)
    stale = []
    source = load_source()
    files = [(target(role), render(role, source)) for role in list(WRAPPERS) + [SHARED_ROLE]]
    files += [(VARS, render_vars()), (ROLE_VARIABLES, render_role_variables())]
    for path, text in files:
        current = open(path).read() if os.path.exists(path) else None
        if current == text:
            continue
        stale.append(os.path.relpath(path, ROOT))
        if not args.check:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as handle:
                handle.write(text)
    for path in stale:
        print(("out of date: %s" if args.check else "wrote %s") % path)
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
