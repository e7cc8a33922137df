"""Small helpers for integration tests: waiting, reading conditions, running helm."""
from __future__ import annotations

import os
import subprocess
import time


def wait_for(what: str, check, timeout: float = 120.0, interval: float = 0.5):
    """Poll `check` until it returns something truthy; fail with `what` and the last value."""
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            last = check()
        except Exception as exc:  # noqa: BLE001 - kept as the last observation
            last = exc
        else:
            if last:
                return last
        time.sleep(interval)
    raise AssertionError("timed out after %ss waiting for %s (last: %r)" % (timeout, what, last))


def condition(obj: dict, ctype: str) -> str | None:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == ctype:
            return cond.get("status")
    return None


def helm(cluster, binary: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = cluster.helm_env()
    env["HELM_REGISTRY_CONFIG"] = os.path.join(cluster.folder, "helm", "registry.json")
    proc = subprocess.run([binary, *args], capture_output=True, text=True, env=env, timeout=600)
    if check and proc.returncode != 0:
        raise AssertionError("helm %s failed (%d): %s" % (" ".join(args), proc.returncode, proc.stderr))
    return proc
