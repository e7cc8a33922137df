"""python -m tests.harness up|down|env|status|hold [TAG...]|release|visibility-block|visibility-unblock|apiserver-stop|apiserver-start"""
from __future__ import annotations

import fcntl
import json
import os
import shlex
import sys

from tests.emulators.arm.emulator import ArmEmulator

from . import cli
from .cluster import Cluster

# Commands that set or clear a flag file the node agent reads: command -> (file in <run>/agent, set it?).
AGENT_FLAGS = {"hold": ("hold", True), "release": ("hold", False),
               "visibility-block": ("block-visibility", True), "visibility-unblock": ("block-visibility", False)}


def command(argv: list[str]):
    cmd = argv[0] if argv else "status"
    cluster = Cluster()
    if cmd in ("up", "down"):
        # One `up` or `down` at a time per run folder: two at once would each take the
        # other's half-started processes for a stale cluster and stop them.
        os.makedirs(cluster.folder, exist_ok=True)
        lock = open(os.path.join(cluster.folder, ".lock"), "w")
        fcntl.flock(lock, fcntl.LOCK_EX)
        cluster = Cluster()  # re-read the state under the lock
    if cmd == "up":
        cluster.up()
    elif cmd == "down":
        cluster.down()
    elif cmd == "env":
        if not cluster.state.get("processes"):
            print("no cluster in %s: run `make cluster-up`" % cluster.folder, file=sys.stderr)
            return 1
        for key, value in cluster.env().items():
            if key == "PATH":
                print('export PATH=%s:"$PATH"' % shlex.quote(value.rsplit(":", 1)[0]))
            else:
                cli.print_exports({key: value})
        arm = ArmEmulator(cluster.folder)
        if arm.running():
            cli.print_exports(arm.env())
    elif cmd == "status":
        print(json.dumps({"running": cluster.running(), "folder": cluster.folder,
                          "server": cluster.server if cluster.state.get("ports") else None,
                          "processes": cluster.state.get("processes", {})}, indent=2))
    elif cmd in AGENT_FLAGS:
        # hold: the node agent stops restarting the Kueue manager (and the test kills it); release: it
        # starts it again. visibility-block: the agent stops proxying the visibility Service (the manager
        # keeps running and stays ready), so its APIServices turn unavailable; unblock: proxied again.
        # `hold TAG...` holds only the managers of those image tags (the others keep running).
        name, present = AGENT_FLAGS[cmd]
        flag = os.path.join(cluster.folder, "agent", name)
        if present:
            with open(flag, "w") as handle:
                handle.write("".join(tag + "\n" for tag in argv[1:]))
        elif os.path.exists(flag):
            os.unlink(flag)
    elif cmd == "apiserver-stop":  # fault injection: etcd, controllers and agent keep running
        cluster.stop_apiserver()
    elif cmd == "apiserver-start":  # the same port, etcd and certificates
        cluster.start_apiserver()
    else:
        return cli.USAGE
    return 0


def main(argv: list[str]) -> int:
    return cli.run(command, argv, "python -m tests.harness up|down|env|status|hold|release|visibility-block|"
                                  "visibility-unblock|apiserver-stop|apiserver-start")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
