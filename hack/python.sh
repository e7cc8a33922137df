#!/usr/bin/env bash
# Provide a Python interpreter this machine kind does not have (Debian 12 ships 3.11; ansible-core 2.20 and newer need
# a 3.12+ controller, 2.22 a 3.13+ one), built once from Debian's own source package and kept in the cache.
#
#   hack/python.sh [3.13]      # prints the interpreter's path on stdout (progress goes to stderr)
#   PY=$(hack/python.sh 3.13) hack/venv.sh .venv-core221 ansible-core~=2.21.0 ...
#
# A hit: $KUEUEOPS_CACHE/python-<minor> (default ~/.cache/kueueops, where the toolchain and the venvs are) holds a
# finished build (its .kueueops-built stamp): its path is printed at once. A miss builds it, about 5.5 min on 2 cores:
#   1. a deb-src entry for Debian's trixie suite (which has python3.13) in a sources file of its own,
#      /etc/apt/sources.list.d/kueueops-trixie-src.list, on the mirror this machine already uses; `apt-get update`;
#   2. the build tools and libraries from the machine's own suite (dpkg-dev, libssl-dev, zlib1g-dev, ...);
#   3. `apt-get source python3.<minor>` into a temporary folder: the upstream tarball with Debian's patches applied;
#   4. the sources file removed and `apt-get update` again, also when a step fails (a trap): apt's sources are left as
#      they were, so nothing later installs from trixie;
#   5. `./configure --prefix=<cache>/python-<minor> --without-pgo --with-ensurepip=no` (no --enable-optimizations:
#      PGO runs the test suite, about 3 times the build; no pip in the interpreter itself: Debian's patch lets
#      ensurepip seed virtual environments only, which is all hack/venv.sh asks of it; no test modules: CPython's own
#      test suite is neither built nor byte-compiled three times by `make install`), `make -j<cores>`,
#      `make install`, and a check that ssl, sqlite3, ctypes, lzma, bz2, zlib, readline and uuid import and that a venv
#      gets its pip (the venvs pip builds need them).
# The prefix is baked into the interpreter, so the build happens at its final path under a lock (flock): a second
# caller waits for the first and then reuses its build; a build that did not finish (no stamp) is removed and redone.
# Needs root (apt-get), like the rest of the toolchain; reaches only Debian's package mirror.
set -euo pipefail

MINOR=${1:-3.13}
case $MINOR in 3.1[2-9]) ;; *) echo "python.sh: usage: hack/python.sh [3.12|3.13]" >&2; exit 2 ;; esac
CACHE=${KUEUEOPS_CACHE:-$HOME/.cache/kueueops}
PREFIX=$CACHE/python-$MINOR
PYBIN=$PREFIX/bin/python$MINOR
STAMP=$PREFIX/.kueueops-built
SUITE=${KUEUEOPS_PYTHON_SUITE:-trixie}
SRC_LIST=/etc/apt/sources.list.d/kueueops-$SUITE-src.list
# What the interpreter needs to build the modules pip, ansible-core, cryptography and the kubernetes client use.
BUILD_DEPS=(dpkg-dev build-essential pkg-config libssl-dev zlib1g-dev libbz2-dev libffi-dev libsqlite3-dev
            libreadline-dev libncurses-dev liblzma-dev uuid-dev libgdbm-dev libexpat1-dev)

log() { echo "python.sh: $*" >&2; }

if [ -f "$STAMP" ] && [ -x "$PYBIN" ]; then
    echo "$PYBIN"
    exit 0
fi

mkdir -p "$CACHE"
exec 9>"$CACHE/python-$MINOR.lock"
flock 9
if [ -f "$STAMP" ] && [ -x "$PYBIN" ]; then    # built by whoever held the lock before us
    echo "$PYBIN"
    exit 0
fi
[ "$(id -u)" = 0 ] || { log "building Python $MINOR needs root (apt-get); none cached in $PREFIX"; exit 1; }

# The mirror this machine's apt uses (deb822 .sources or one-line .list), so the source comes from the same place.
mirror() {
    local uri
    uri=$(grep -hsE '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}' | grep -E '/debian/?$' | head -n1 || true)
    [ -n "$uri" ] || uri=$(grep -hsE '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
                          | awk '{for (i = 2; i <= NF; i++) if ($i !~ /^\[/) {print $i; exit}}' | grep -E '/debian/?$' | head -n1 || true)
    echo "${uri:-http://deb.debian.org/debian}"
}

start=$(date +%s)
cpu_start=$(awk '{print $14 + $15 + $16 + $17}' /proc/$$/stat)
work=$(mktemp -d "${TMPDIR:-/tmp}/kueueops-python.XXXXXX")
restore_apt() {
    if [ -f "$SRC_LIST" ]; then
        rm -f "$SRC_LIST"
        log "removed $SRC_LIST; apt-get update"
        apt-get update -qq >&2 || log "apt-get update failed after removing $SRC_LIST"
    fi
}
cleanup() {
    restore_apt
    rm -rf "$work"
    [ -f "$STAMP" ] || rm -rf "$PREFIX"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log "no Python $MINOR in $PREFIX: building it from Debian's $SUITE source package"
echo "deb-src $(mirror) $SUITE main" > "$SRC_LIST"
apt-get update -qq >&2
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${BUILD_DEPS[@]}" >"$work/apt.log" 2>&1 \
    || { tail -n 30 "$work/apt.log" >&2; exit 1; }
(cd "$work" && apt-get source -qq "python$MINOR" >"$work/source.log" 2>&1) || { tail -n 30 "$work/source.log" >&2; exit 1; }
restore_apt
src=$(find "$work" -mindepth 1 -maxdepth 1 -type d -name "python$MINOR-*" | head -n1)
[ -n "$src" ] || { log "apt-get source python$MINOR gave no source tree in $work"; exit 1; }
log "configure and build $(basename "$src") into $PREFIX"
rm -rf "$PREFIX"
(
    cd "$src"
    ./configure --prefix="$PREFIX" --without-pgo --with-ensurepip=no --disable-test-modules >"$work/configure.log" 2>&1 \
        || { tail -n 30 "$work/configure.log" >&2; exit 1; }
    make -j"$(nproc)" >"$work/make.log" 2>&1 || { tail -n 40 "$work/make.log" >&2; exit 1; }
    make install >"$work/install.log" 2>&1 || { tail -n 40 "$work/install.log" >&2; exit 1; }
)
"$PYBIN" -c 'import ssl, sqlite3, ctypes, lzma, bz2, zlib, readline, uuid, venv, ensurepip' \
    || { log "the build in $PREFIX lacks a module (see above)"; exit 1; }
"$PYBIN" -m venv "$work/venv" && "$work/venv/bin/python" -m pip --version >&2 \
    || { log "a venv of the build in $PREFIX gets no pip"; exit 1; }
"$PYBIN" -c 'import sys; print(sys.version)' > "$STAMP"
wall=$(( $(date +%s) - start ))
cpu=$(( ($(awk '{print $14 + $15 + $16 + $17}' /proc/$$/stat) - cpu_start) / $(getconf CLK_TCK) ))
log "Python $("$PYBIN" -c 'import platform; print(platform.python_version())') built in $wall s ($cpu CPU s): $PYBIN"
echo "$PYBIN"
