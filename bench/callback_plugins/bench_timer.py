# Benchmark-only aggregate callback: records each task's wall time, how many
# results (loop items) it had, how many changed or failed, and for kueue_queues
# its per-kind counts, into the JSON file named by BENCH_TIMER_OUT.
from __future__ import annotations

import json
import os
import time

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
name: bench_timer
type: aggregate
short_description: per-task timings and change counts for bench/run.py
description: Writes task timings, result counts and kueue_queues counts to $BENCH_TIMER_OUT.
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "bench_timer"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        self.started = time.time()
        self.tasks = []

    def _current(self):
        return self.tasks[-1] if self.tasks else None

    def v2_playbook_on_task_start(self, task, is_conditional):
        now = time.time()
        if self.tasks:
            self.tasks[-1].setdefault("end", now)
        self.tasks.append({"name": task.get_name(), "action": task.action, "start": now, "results": 0,
                           "changed": 0, "failed": 0, "msgs": []})

    def _record(self, result, failed=False):
        task = self._current()
        if task is None:
            return
        res = result._result
        task["results"] += 1
        if res.get("changed"):
            task["changed"] += 1
        if failed or res.get("failed"):
            task["failed"] += 1
            if len(task["msgs"]) < 5:
                task["msgs"].append(str(res.get("msg", ""))[:2000])
        for key in ("counts", "api_version", "namespaces_created", "not_active"):
            if key in res and "results" not in res:
                task[key] = res[key]

    def v2_runner_on_ok(self, result):
        if "results" in result._result:  # the loop summary; items were counted one by one
            return
        self._record(result)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        if "results" in result._result:
            task = self._current()
            if task is not None and len(task["msgs"]) < 5:
                task["msgs"].append(str(result._result.get("msg", ""))[:2000])
            return
        self._record(result, failed=True)

    def v2_runner_item_on_ok(self, result):
        self._record(result)

    def v2_runner_item_on_failed(self, result):
        self._record(result, failed=True)

    def v2_playbook_on_stats(self, stats):
        now = time.time()
        if self.tasks:
            self.tasks[-1].setdefault("end", now)
        for task in self.tasks:
            task["seconds"] = round(task.pop("end") - task.pop("start"), 3)
        out = {"tasks": self.tasks, "seconds": round(now - self.started, 3),
               "stats": {h: stats.summarize(h) for h in sorted(stats.processed.keys())}}
        path = os.environ.get("BENCH_TIMER_OUT")
        if path:
            with open(path, "w", encoding="utf-8") as handle:
                json.dump(out, handle, indent=1, default=str)
