"""What a test needs from the machine, and the one rule for when it is missing (issue 42, item 5).

``require(what, reason)``: ``what`` is a path (it must exist) or a condition (it must be true). When it is missing,
the test **fails in CI** (the variable ``CI`` is ``true``: ``CI=true bash .ci/run``), naming the reason, so a CI
without the artifact is never green without running the test; **on a developer's machine it skips**, with the same
reason (hack/test.sh and hack/compat.sh run pytest with ``-rs``, which prints every skip's reason). No test under
tests/ calls ``pytest.skip``, ``skipif`` or ``importorskip`` itself: tests/unit/test_prerequisites.py fails when
one does, except the few skips it lists, each about the platform and not about a missing artifact.

Where the artifacts are: the Go module cache of hack/toolchain.sh (``go env GOMODCACHE``: the Kueue source and its
chart) and its toolchain folder (``$KUEUEOPS_CACHE/toolchain``: the helm binaries).
"""
from __future__ import annotations

import functools
import os
import subprocess

import pytest

CI_VALUES = ("true", "1", "yes")


def in_ci() -> bool:
    """Whether this run is CI's (``CI`` set to true, as CI runners set it)."""
    return os.environ.get("CI", "").strip().lower() in CI_VALUES


def require(what, reason: str):
    """``what`` (a path that must exist, or a condition that must be true) or the test stops: failed in CI, skipped
    elsewhere, with ``reason`` (what is missing and how to get it). Returns ``what``."""
    present = os.path.exists(what) if isinstance(what, (str, os.PathLike)) else bool(what)
    if present:
        return what
    if in_ci():
        pytest.fail("missing in CI (CI=%s; a missing prerequisite fails the run there): %s"
                    % (os.environ.get("CI"), reason), pytrace=False)
    pytest.skip(reason)
    return what  # not reached: pytest.skip raises


def go_module_cache() -> str:
    """Where ``go mod download`` (hack/toolchain.sh) puts modules: ``$GOMODCACHE``, else ``go env GOMODCACHE``,
    else ``$GOPATH/pkg/mod`` or ``~/go/pkg/mod`` (Go's default) when there is no go on PATH."""
    if os.environ.get("GOMODCACHE"):
        return os.environ["GOMODCACHE"]
    gopath = os.environ.get("GOPATH", "").split(os.pathsep)[0] or os.path.join(os.path.expanduser("~"), "go")
    return _go_env_modcache() or os.path.join(gopath, "pkg", "mod")


@functools.lru_cache(maxsize=None)
def _go_env_modcache() -> str:
    try:
        return subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=True,
                              timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def kueue_module(version: str) -> str:
    """The source of Kueue ``version`` (``0.19.2``) as hack/toolchain.sh downloads it from the Go module proxy."""
    return os.path.join(go_module_cache(), "sigs.k8s.io", "kueue@v%s" % version.lstrip("v"))


def kueue_module_reason(version: str) -> str:
    return "sigs.k8s.io/kueue@v%s is not in the Go module cache at %s (make toolchain downloads it, or: cd /tmp && " \
           "go mod download sigs.k8s.io/kueue@v%s)" % (version, kueue_module(version), version)


def toolchain(*parts: str) -> str:
    """A path in hack/toolchain.sh's folder: ``$KUEUEOPS_TOOLCHAIN``, else ``$KUEUEOPS_CACHE/toolchain``, else
    ``~/.cache/kueueops/toolchain``."""
    folder = os.environ.get("KUEUEOPS_TOOLCHAIN") or os.path.join(
        os.environ.get("KUEUEOPS_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "kueueops"), "toolchain")
    return os.path.join(folder, *parts)
