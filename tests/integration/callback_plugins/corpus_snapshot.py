# Test-only callback of the module bad-input corpus (tests/reliability/test_bad_input_modules.py): when the
# corpus runs its cases in one ansible-playbook run, one task per case, this takes the cluster snapshot
# (tests/reliability/rbac.snapshot) at the start of the play and after each task result, and the length of
# the ARM emulator's request log beside it, so each case is judged on what changed between the task before
# it and its own task. The linear strategy sends a task's result callbacks before it queues the next task
# (StrategyBase._process_pending_results sends v2_runner_on_* and only then lowers _pending_results, which
# linear's _wait_on_pending_results waits to reach 0: ansible-core 2.16 and 2.19), so the snapshot after
# task i is taken before task i+1 starts.
# Enabled only by the corpus: ANSIBLE_CALLBACKS_ENABLED=corpus_snapshot and KUEUEOPS_CORPUS_SNAPSHOTS=<file>.
from __future__ import annotations

import json
import os
import sys

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
name: corpus_snapshot
type: aggregate
short_description: cluster snapshots between the tasks of the kueueops.aks bad-input corpus
description:
  - After the play starts and after each task result, records rbac.snapshot of the local cluster and the
    length of the ARM emulator's request log as one JSON line in the file named by KUEUEOPS_CORPUS_SNAPSHOTS.
requirements:
  - enabled in callbacks_enabled
"""

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "corpus_snapshot"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        self.path = os.environ.get("KUEUEOPS_CORPUS_SNAPSHOTS")
        self.kube = self.control = None

    def _setup(self):
        if REPO not in sys.path:
            sys.path.insert(0, REPO)
        from kubernetes import config

        self.kube = config.new_client_from_config(os.environ["KUEUEOPS_CORPUS_KUBECONFIG"])
        if os.environ.get("KUEUEOPS_CORPUS_ARM_URL"):
            from tests.emulators.arm.control import Control
            self.control = Control(os.environ["KUEUEOPS_CORPUS_ARM_URL"], os.environ["KUEUEOPS_CORPUS_ARM_CA"])

    def _take(self, task: str | None) -> None:
        if not self.path:
            return
        if self.kube is None:
            self._setup()
        from tests.reliability import rbac

        snap = rbac.snapshot(self.kube)
        line = {"task": task, "snapshot": {"|".join(key): value for key, value in snap.items()},
                "arm_requests": len(self.control.requests()) if self.control else None}
        with open(self.path, "a") as handle:
            handle.write(json.dumps(line, sort_keys=True) + "\n")

    def v2_playbook_on_play_start(self, play):
        self._take(None)

    def _result(self, result, *_args, **_kwargs):
        self._take(result._task.get_name())

    v2_runner_on_ok = v2_runner_on_failed = v2_runner_on_skipped = v2_runner_on_unreachable = _result
