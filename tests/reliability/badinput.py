"""The shared shape of the bad-input corpus (issue 8, item 1): a case is one run that must fail safely.

Failing safely means, for every case of tests/reliability/test_bad_input_*.py:
- the run fails (rc != 0, a failed task), with no Python traceback and no "MODULE FAILURE" anywhere in
  stdout or stderr;
- the failure message names the field or object that is wrong (``names``) and says what to do about it
  (``fix``): each is a list of fragments that must all appear in the message (case-insensitive);
- the cluster is unchanged: `rbac.snapshot` (resourceVersions of every Kueue object, the namespaces,
  the Helm release records — hence the release revision —, the Kueue CRDs, the Jobs and every object
  the chart created) is equal before and after.
"""
from __future__ import annotations

import dataclasses

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


def message_of(result) -> str:
    """Every failure message of the run, joined (falls back to the end of stdout+stderr when Ansible
    failed before any task, e.g. a playbook that does not parse)."""
    messages = result.failure_messages()
    if messages:
        return " ".join(str(m) for m in messages)
    return (result.stdout + result.stderr)[-4000:]


def assert_no_traceback(result) -> None:
    text = result.stdout + result.stderr
    assert "Traceback (most recent call last)" not in text, text[-4000:]
    assert "MODULE FAILURE" not in text, text[-4000:]


def assert_fails_safely(case: Case, result, kube, before: dict | None) -> str:
    """Assert the three properties above; return the message (for the test's own extra checks).
    `before` is `rbac.snapshot(kube)` taken before the run (None when the case has no cluster to
    compare, e.g. an unreachable API server: then the caller compares what it can)."""
    assert result.rc != 0, "the run did not fail: %r\n%s" % (result, result.stdout[-3000:])
    assert_no_traceback(result)
    message = message_of(result)
    low = message.lower()
    for fragment in case.names:
        assert fragment.lower() in low, "%s: the message does not name %r:\n%s" % (case.id, fragment, message)
    for fragment in case.fix:
        assert fragment.lower() in low, "%s: the message does not say the fix %r:\n%s" % (case.id, fragment, message)
    if before is not None:
        after = rbac.snapshot(kube)
        changed = {k: (before.get(k), after.get(k)) for k in set(before) | set(after) if before.get(k) != after.get(k)}
        assert not changed, "%s changed the cluster: %s" % (case.id, changed)
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
