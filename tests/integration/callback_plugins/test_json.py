# Test-only stdout callback: one JSON document with every task result and the
# play recap, so integration tests assert on what Ansible itself reported.
# (ansible-core ships no JSON callback; ansible.posix's is not installed here.)
from __future__ import annotations

import json
import os
import time

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
name: test_json
type: stdout
short_description: JSON results for the kueueops.aks integration tests
description: Collects task results and stats and prints them as one JSON document.
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "stdout"
    CALLBACK_NAME = "test_json"

    def __init__(self):
        super().__init__()
        self.plays = []

    def v2_playbook_on_play_start(self, play):
        self.plays.append({"play": {"name": play.get_name()}, "tasks": []})

    def v2_playbook_on_task_start(self, task, is_conditional):
        # seconds: from the task's start to its last result (bench/upgrade.py sums them per phase)
        self.plays[-1]["tasks"].append({"task": {"name": task.get_name(), "started": time.time()}, "hosts": {}})

    v2_playbook_on_handler_task_start = v2_playbook_on_task_start

    def _record(self, result, **extra):
        data = dict(result._result)
        data.update(extra)
        if not self.plays[-1]["tasks"]:
            self.plays[-1]["tasks"].append({"task": {"name": result._task.get_name()}, "hosts": {}})
        self.plays[-1]["tasks"][-1]["hosts"][result._host.get_name()] = data
        task = self.plays[-1]["tasks"][-1]["task"]
        task["seconds"] = round(time.time() - task.get("started", time.time()), 3)

    @staticmethod
    def _ran(result):
        """With $KUEUEOPS_MODULES_RAN set (hack/compat.sh), append the collection module a task ran (ok or failed,
        not skipped) to that file: the job checks every module of plugins/modules ran at least once."""
        path = os.environ.get("KUEUEOPS_MODULES_RAN")
        action = result._task.action or ""
        if path and action.startswith("kueueops.aks."):
            with open(path, "a") as out:
                out.write(action.rsplit(".", 1)[1] + "\n")

    def v2_runner_on_ok(self, result):
        self._ran(result)
        self._record(result)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._ran(result)
        self._record(result, failed=True, ignored=ignore_errors)

    def v2_runner_on_skipped(self, result):
        self._record(result, skipped=True)

    def v2_runner_on_unreachable(self, result):
        self._record(result, unreachable=True, failed=True)

    def v2_playbook_on_stats(self, stats):
        hosts = sorted(stats.processed.keys())
        out = {"plays": self.plays, "stats": {h: stats.summarize(h) for h in hosts}}
        self._display.display(json.dumps(out, default=str, sort_keys=True))
