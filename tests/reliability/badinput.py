"""The shared shape of the bad-input corpus (issue 8, item 1): a case is one run that must fail safely.

Failing safely means, for every case of tests/reliability/test_bad_input_*.py:
- the run fails (rc != 0, a failed task), with no Python traceback and no "MODULE FAILURE" anywhere in
  stdout or stderr;
- the failure message names the field or object that is wrong (``names``) and says what to do about it
  (``fix``): each is a list of fragments that must all appear in the message (case-insensitive);
- none of the API server's raw words (RAW_SERVER_WORDS: "HTTP 500", "typed patch") is in it, and every
  ``problems`` entry of a result names its field (issue 20);
- the cluster is unchanged: `rbac.snapshot` (resourceVersions of every Kueue object, the namespaces,
  the Helm release records — hence the release revision —, the Kueue CRDs, the Jobs and every object
  the chart created) is equal before and after.
"""
from __future__ import annotations

import dataclasses
import json

from . import rbac


@dataclasses.dataclass
class Case:
    """One bad input: an id, the entry point it goes through (a module or a role entry point),
    what the message must name, and the fix it must suggest."""
    id: str
    entry: str
    names: list
    fix: list
    # free-form per test file: module args, extra vars, a playbook, an environment...
    data: dict = dataclasses.field(default_factory=dict)

    def __str__(self):
        return self.id


def message_of(result, host: str = "local") -> str:
    """Every failure message of the run for `host`, joined (falls back to the end of stdout+stderr when Ansible
    failed before any task, e.g. a playbook that does not parse)."""
    messages = result.failure_messages(host)
    if messages:
        return " ".join(str(m) for m in messages)
    return (result.stdout + result.stderr)[-4000:]


TRACEBACK_MARKS = ("Traceback (most recent call last)", "MODULE FAILURE")


def assert_no_traceback(result) -> None:
    assert_no_traceback_in(result.stdout + result.stderr)


def assert_no_traceback_in(text: str, what: str = "") -> None:
    for mark in TRACEBACK_MARKS:
        assert mark not in text, "%s%s" % (what and what + ": ", text[-4000:])


def assert_names_and_fix(case: Case, message: str) -> None:
    """Every fragment of ``case.names`` and ``case.fix`` is in the message (case-insensitive)."""
    low = message.lower()
    for fragment in case.names:
        assert fragment.lower() in low, "%s: the message does not name %r:\n%s" % (case.id, fragment, message)
    for fragment in case.fix:
        assert fragment.lower() in low, "%s: the message does not say the fix %r:\n%s" % (case.id, fragment, message)


# The API server's words that must never reach the user untranslated (issue 20): a type error reads like a
# crash ("HTTP 500 ... failed to create typed patch object") and names no field.
RAW_SERVER_WORDS = ("HTTP 500", "typed patch")


def assert_plain_words(case: Case, message: str, results) -> None:
    """No raw server words in the message, and every `problems` entry of ``results`` (task results) has its field."""
    for words in RAW_SERVER_WORDS:
        assert words.lower() not in message.lower(), "%s: the message has %r:\n%s" % (case.id, words, message)
    for res in results:
        for problem in res.get("problems") or []:  # kueue_queues' entries (kueue_backup's are sentences)
            if isinstance(problem, dict):
                assert problem.get("field"), "%s: a problem without its field: %r" % (case.id, problem)


def assert_unchanged(case: Case, before: dict, after: dict) -> None:
    changed = {k: (before.get(k), after.get(k)) for k in set(before) | set(after) if before.get(k) != after.get(k)}
    assert not changed, "%s changed the cluster: %s" % (case.id, changed)


def assert_fails_safely(case: Case, result, kube, before: dict | None, host: str = "local",
                        after: dict | None = None) -> str:
    """Assert the three properties above; return the message (for the test's own extra checks).
    `before` is `rbac.snapshot(kube)` taken before the run (None when the case has no cluster to
    compare, e.g. an unreachable API server: then the caller compares what it can); `after` the one taken
    after it (taken here when None). `host` is the case's host of the run: a run of several cases, one host
    each (the role corpus's batches), is judged per host: that host failed, its messages name the field and
    the fix; no traceback anywhere in the run; the cluster unchanged over the whole run."""
    assert result.rc != 0, "the run did not fail: %r\n%s" % (result, result.stdout[-3000:])
    if host in result.stats:
        stats = result.host_stats(host)
        assert stats.get("failures", 0) + stats.get("unreachable", 0) >= 1, \
            "%s: its host did not fail: %r\n%s" % (case.id, stats, result.stdout[-3000:])
    assert_no_traceback(result)
    message = message_of(result, host)
    assert_names_and_fix(case, message)
    assert_plain_words(case, message, [res for _name, res in result.tasks(host)])
    if before is not None:
        assert_unchanged(case, before, rbac.snapshot(kube) if after is None else after)
    return message


def assert_task_fails_safely(case: Case, task: dict | None, output: str, before: dict, after: dict) -> str:
    """The same three properties for one case run as one task among others (one ansible-playbook run per
    batch, `ignore_errors: true` on each task): ``task`` is that task's result, ``output`` the run's whole
    stdout and stderr, ``before``/``after`` the snapshots taken just before and just after that task (the
    corpus_snapshot callback). The task failed; no traceback nor MODULE FAILURE in its result (msg,
    exception, module_stdout, module_stderr, every other key) nor anywhere in the run's output; its message
    names the field and the fix; the cluster is unchanged between ``before`` and ``after``. Returns the message."""
    assert task is not None, "%s: the run has no result for this case's task:\n%s" % (case.id, output[-3000:])
    assert task.get("failed") is True, "%s: the task did not fail: %r" % (case.id, task)
    for key in ("msg", "exception", "module_stdout", "module_stderr"):
        assert_no_traceback_in(str(task.get(key, "")), "%s: %s" % (case.id, key))
    assert_no_traceback_in(json.dumps(task, default=str), "%s: its task result" % case.id)
    assert_no_traceback_in(output, "%s: the run's output" % case.id)
    message = str(task.get("msg", ""))
    assert_names_and_fix(case, message)
    assert_plain_words(case, message, [task])
    assert_unchanged(case, before, after)
    return message


def fake_extension_deployment(kube, namespace: str, create: bool = True) -> None:
    """What kueue_queues takes for the AKS managed extension: a kueue-extension Deployment in its
    kueue_namespace (replicas 0: nothing runs). ``create=False`` deletes it."""
    from kubernetes import client

    apps = client.AppsV1Api(kube)
    if not create:
        apps.delete_namespaced_deployment("kueue-extension", namespace)
        return
    labels = {"app": "kueue-extension"}
    apps.create_namespaced_deployment(namespace, {
        "metadata": {"name": "kueue-extension"},
        "spec": {"replicas": 0, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels},
                              "spec": {"containers": [{"name": "x", "image": "registry.k8s.io/pause:3.10"}]}}}})
