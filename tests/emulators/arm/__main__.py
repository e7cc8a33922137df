"""python -m tests.emulators.arm up|down|env|status  (state in $KUEUEOPS_RUN_DIR/arm/)"""
from __future__ import annotations

import fcntl
import json
import os
import shlex
import sys

from tests.harness.cluster import HarnessError

from .emulator import ArmEmulator


def main(argv: list[str]) -> int:
    cmd = argv[0] if argv else "status"
    emulator = ArmEmulator()
    try:
        if cmd in ("up", "down"):
            os.makedirs(emulator.folder, exist_ok=True)
            with open(os.path.join(emulator.folder, ".arm-lock"), "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                emulator.up() if cmd == "up" else emulator.down()
            if cmd == "up":
                print("ARM emulator at %s (eval \"$(make -s cluster-env)\" for its AZURE_* variables)" % emulator.url,
                      file=sys.stderr)
        elif cmd == "env":
            if not emulator.running():
                print("no ARM emulator runs in %s: run `make emulator-up`" % emulator.folder, file=sys.stderr)
                return 1
            for key, value in emulator.env().items():
                print("export %s=%s" % (key, shlex.quote(value)))
        elif cmd == "status":
            running = emulator.running()
            print(json.dumps({"running": running, "folder": emulator.dir,
                              "url": emulator.url if running else None}, indent=2))
        else:
            print("usage: python -m tests.emulators.arm up|down|env|status", file=sys.stderr)
            return 2
    except HarnessError as err:
        print("error: %s" % err, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
