#!/usr/bin/env bash
# Provide a headless Chromium for the docs site's browser check (tests/docsite): Debian's own `chromium` package,
# installed with apt-get when it is not there yet, nothing else. Prints the browser's path on stdout (progress goes to
# stderr).
#
#   hack/chromium.sh               # e.g. CHROMIUM=$(hack/chromium.sh)
#
# Warm (the package installed): one dpkg query, nothing downloaded. Cold: `apt-get update` and `apt-get install
# --no-install-recommends chromium` from the mirror apt already uses (Debian's package mirror, the only place this
# reaches), about 100 MB. Needs root for the install, like hack/python.sh; under a lock (flock), so two checkouts
# installing at once wait for each other. The check itself never lets the browser reach the network: it runs in a
# network namespace of its own with nothing but loopback (tests/docsite/conftest.py).
set -euo pipefail

CACHE=${KUEUEOPS_CACHE:-$HOME/.cache/kueueops}
log() { echo "chromium.sh: $*" >&2; }
installed() { [ "$(dpkg-query -W -f '${Status}' chromium 2>/dev/null)" = "install ok installed" ] && [ -x /usr/bin/chromium ]; }

if ! installed; then
    mkdir -p "$CACHE"
    exec 9>"$CACHE/chromium.lock"
    flock 9
    if ! installed; then
        [ "$(id -u)" = 0 ] || { log "Debian's chromium package is not installed, and installing it needs root (apt-get)"; exit 1; }
        start=$(date +%s)
        log "installing Debian's chromium package (apt-get)"
        export DEBIAN_FRONTEND=noninteractive
        aptlog=$(mktemp)
        trap 'rm -f "$aptlog"' EXIT
        { apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium; } >"$aptlog" 2>&1 \
            || { cat "$aptlog" >&2; log "apt-get failed (its output above)"; exit 1; }
        installed || { log "apt-get install chromium finished, but the package is not installed"; exit 1; }
        log "chromium $(dpkg-query -W -f '${Version}' chromium) installed in $(( $(date +%s) - start )) s"
    fi
    flock -u 9
fi
echo /usr/bin/chromium
