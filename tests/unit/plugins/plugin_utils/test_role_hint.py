"""plugin_utils/role_hint.py: the role variable named in a module failure of the kueue role and playbooks."""
from __future__ import annotations

import gc
import importlib
import importlib.util
import os

import pytest

from ansible_collections.kueueops.aks.plugins.plugin_utils import role_hint

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
MODULES = os.path.join(REPO, "plugins", "modules")


def test_names_the_role_variable_of_each_option_the_message_names():
    msg = "binary_path: helm was not found on PATH. Fix: install helm or set binary_path"
    assert role_hint.hint(msg, "kueue_helm") == " In the kueue role and playbooks: binary_path is kueue_helm_binary."
    msg = "chart_version: 0.x.1 is not a version; with context no-such"
    assert role_hint.hint(msg, "kueue_helm") == " In the kueue role and playbooks: chart_version is kueue_version."


def test_a_one_word_option_only_as_the_leading_field():
    assert role_hint.hint("src: /x is missing", "kueue_queues") == (
        " In the kueue role and playbooks: src is kueue_resources_src.")
    assert role_hint.hint("the src file is missing", "kueue_queues") == ""


def test_the_options_every_module_has_and_unknown_modules():
    assert role_hint.hint("kubeconfig: no such file", "kueue_verify") == (
        " In the kueue role and playbooks: kubeconfig is kueue_kubeconfig.")
    assert role_hint.hint("kubeconfig: no such file", "not_ours") == ""
    assert role_hint.hint("nothing named here", "kueue_helm") == ""


@pytest.mark.parametrize("task_path,expected", [
    (os.path.join(REPO, "roles", "kueue", "tasks", "install_helm.yml") + ":12", True),
    (os.path.join(REPO, "playbooks", "status.yml") + ":30", True),
    ("/srv/platform/site.yml:4", False),
    (os.path.join(REPO, "tests", "integration", "play.yml") + ":1", False),
    ("", False),
    (None, False),
])
def test_only_the_collections_own_tasks_get_the_hint(task_path, expected):
    assert role_hint.in_collection(task_path) is expected


_SPEC = importlib.util.spec_from_file_location("gen_role_specs", os.path.join(REPO, "hack", "gen_role_specs.py"))
gen = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(gen)


def _module_options(name):
    """The option names of a module's DOCUMENTATION and of this collection's doc fragments it extends."""
    return set(gen.module_options(name))


@pytest.mark.parametrize("module", sorted(m for m in role_hint.OPTION_VARIABLES if m != "kube"))
def test_every_option_named_is_an_option_of_its_module(module):
    missing = set(role_hint.OPTION_VARIABLES[module]) - _module_options(module)
    assert not missing, "%s has no option %s" % (module, sorted(missing))


def test_every_module_has_its_action_plugin():
    modules = sorted(f[:-3] for f in os.listdir(MODULES) if f.endswith(".py"))
    actions = sorted(f[:-3] for f in os.listdir(os.path.join(REPO, "plugins", "action")) if f.endswith(".py"))
    assert actions == modules
    for name in actions:  # each one the RoleHintAction, so each task gets the hint and the paused collector
        action = importlib.import_module("ansible_collections.kueueops.aks.plugins.action." + name)
        assert issubclass(action.ActionModule, role_hint.RoleHintAction), name


def test_gc_paused_turns_the_collector_off_for_the_block_and_gives_its_state_back():
    assert gc.isenabled()
    with role_hint.gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError):
        with role_hint.gc_paused():
            raise RuntimeError("the task failed")
    assert gc.isenabled()
    gc.disable()  # a caller that had it off keeps it off
    try:
        with role_hint.gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


class _Task:
    action = "kueueops.aks.kueue_helm"

    @staticmethod
    def get_path():
        return os.path.join(REPO, "roles", "kueue", "tasks", "main.yml") + ":1"


def test_the_action_runs_the_module_with_the_collector_paused(monkeypatch):
    """RoleHintAction.run: ansible's normal action (which builds the payload and runs the module) sees the collector
    off; it is on again after, with the hint added to a failure."""
    seen = []

    def normal_run(self, tmp=None, task_vars=None):
        seen.append(gc.isenabled())
        return {"failed": True, "msg": "binary_path: helm was not found"}

    monkeypatch.setattr(role_hint.NormalAction, "run", normal_run)
    action = object.__new__(role_hint.RoleHintAction)
    action._task = _Task()
    result = action.run(task_vars={})
    assert seen == [False] and gc.isenabled()
    assert "binary_path is kueue_helm_binary" in result["msg"]
