"""The frame of the harness' command lines (``python -m tests.harness``, ``python -m tests.emulators.arm``): one
command a run, its exit code, a HarnessError as ``error: ...`` (1), an unknown command as the usage (2)."""
from __future__ import annotations

import shlex
import sys

from .cluster import HarnessError

USAGE = object()  # what a command body returns for a command it does not know


def run(body, argv: list[str], usage: str) -> int:
    """The exit code of ``body(argv)`` (None is 0): 2 with ``usage`` printed for USAGE, 1 with the message of a
    HarnessError."""
    try:
        code = body(argv)
    except HarnessError as err:
        print("error: %s" % err, file=sys.stderr)
        return 1
    if code is USAGE:
        print("usage: " + usage, file=sys.stderr)
        return 2
    return code or 0


def print_exports(env: dict) -> None:
    """``export KEY=value`` lines, for ``eval "$(make -s cluster-env)"``."""
    for key, value in env.items():
        print("export %s=%s" % (key, shlex.quote(value)))
