"""python -m tests.emulators.arm up|down|env|status  (state in $KUEUEOPS_RUN_DIR/arm/)"""
from __future__ import annotations

import fcntl
import json
import os
import sys

from tests.harness import cli

from .emulator import ArmEmulator


def command(argv: list[str]):
    cmd = argv[0] if argv else "status"
    emulator = ArmEmulator()
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
        cli.print_exports(emulator.env())
    elif cmd == "status":
        running = emulator.running()
        print(json.dumps({"running": running, "folder": emulator.dir,
                          "url": emulator.url if running else None}, indent=2))
    else:
        return cli.USAGE
    return 0


def main(argv: list[str]) -> int:
    return cli.run(command, argv, "python -m tests.emulators.arm up|down|env|status")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
