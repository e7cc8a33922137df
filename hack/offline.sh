#!/usr/bin/env bash
# Run a command where it cannot reach the network: in a network namespace of its own whose only interface is loopback
# (brought up, so 127.0.0.1 works inside). The docs build (hack/docs.sh) and the browser check (tests/docsite) run this
# way, so neither Sphinx (intersphinx) nor Chromium (its background services) can send anything to another address,
# whatever their configuration says.
#
#   hack/offline.sh COMMAND [ARGS...]
#
# As root: `unshare --net`; otherwise a user namespace too (`unshare --map-root-user --net`), where the kernel allows
# it. Where neither works, it refuses (exit 3) rather than run the command with the network.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: hack/offline.sh COMMAND [ARGS...]" >&2; exit 2; }
inner='ip link set lo up 2>/dev/null || true; exec "$@"'
if [ "$(id -u)" = 0 ] && unshare --net true 2>/dev/null; then
    exec unshare --net -- bash -c "$inner" offline "$@"
elif unshare --map-root-user --net true 2>/dev/null; then
    exec unshare --map-root-user --net -- bash -c "$inner" offline "$@"
fi
echo "offline.sh: cannot make a network namespace here (unshare --net failed); not running $1 with the network" >&2
exit 3
