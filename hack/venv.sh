#!/usr/bin/env bash
# Build a Python venv, or copy the one an earlier run built, into DEST (issue 19: a fresh clone's `make test` paid
# about 1 min for .venv and 2.5 min for .venv-compat, every run, reinstalling the same wheels).
#
#   hack/venv.sh DEST PIP_ARGS...        # e.g. hack/venv.sh .venv -r requirements-test.txt
#
# The built venv is kept in $KUEUEOPS_CACHE/venvs/<name of DEST>-<hash> (default ~/.cache/kueueops, where the
# toolchain is), keyed on what decides its contents: the Python that runs it, PIP_ARGS and the text of every
# requirements*.txt of the checkout (and of a requirements file elsewhere that PIP_ARGS names: -r
# hack/docs-requirements.txt). A cache miss builds it there with pip (from PyPI, as before); a hit copies it
# (cp -a: about 2 s) and rewrites the paths a venv holds to itself (the scripts' shebangs, bin/activate*,
# pyvenv.cfg) to DEST. Other builds of the same name are removed when a new one lands, so a changed requirements
# file leaves one copy, not one per change. Two checkouts building the same key at once each build in a folder of
# their own; the first to finish is kept. DEST/.kueueops-venv-key records the key: an up-to-date DEST is left as is.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PY=${PY:-python3}
[ $# -ge 2 ] || { echo "usage: hack/venv.sh DEST PIP_ARGS..." >&2; exit 2; }
DEST=$1
shift
case $DEST in /*) ;; *) DEST=$PWD/$DEST ;; esac
CACHE=${KUEUEOPS_CACHE:-$HOME/.cache/kueueops}/venvs
NAME=$(basename "$DEST")
NAME=${NAME#.}
# A requirements file PIP_ARGS name outside the checkout's requirements*.txt (-r hack/docs-requirements.txt) is part of
# the key too (the checkout's own are already in it, so their keys stay as they were).
extra_requirements() {
    local arg next=
    for arg in "$@"; do
        if [ -n "$next" ]; then
            case $(cd "$(dirname "$arg")" && pwd)/$(basename "$arg") in "$ROOT"/requirements*.txt) ;; *) cat "$arg" ;; esac
            next=
        fi
        case $arg in -r|--requirement|-c|--constraint) next=1 ;; esac
    done
}
key=$( { "$PY" -c 'import sys; print(sys.version)'; printf '%s\n' "$@"; cat "$ROOT"/requirements*.txt; extra_requirements "$@"; } \
       | sha256sum | cut -c1-16)
cached=$CACHE/$NAME-$key
start=$(date +%s)
if [ "$(cat "$DEST/.kueueops-venv-key" 2>/dev/null)" = "$key" ] && [ -x "$DEST/bin/python" ]; then
    echo "venv: $DEST is up to date ($NAME-$key)"
    exit 0
fi

if [ ! -f "$cached/.kueueops-built-at" ]; then
    mkdir -p "$CACHE"
    build=$cached.build.$$
    trap 'rm -rf "$build"' EXIT
    echo "venv: building $NAME-$key with pip ($*), kept in $CACHE"
    "$PY" -m venv "$build"
    "$build/bin/pip" install -q "$@"
    echo "$build" > "$build/.kueueops-built-at"
    if mv -T "$build" "$cached" 2>/dev/null; then
        for old in "$CACHE/$NAME"-*; do
            case $old in "$cached"|*.build.*) ;; *) rm -rf "$old" ;; esac
        done
    fi
    trap - EXIT
    rm -rf "$build"
else
    echo "venv: reusing $cached"
fi

built_at=$(cat "$cached/.kueueops-built-at")
tmp=$DEST.tmp.$$
rm -rf "$tmp"
trap 'rm -rf "$tmp"' EXIT
cp -a "$cached" "$tmp"
rm -f "$tmp/.kueueops-built-at"
echo "$key" > "$tmp/.kueueops-venv-key"
# Every path the venv holds to itself (symlinks are left alone: bin/python points at the system Python).
grep -rlI --null -F "$built_at" "$tmp/bin" "$tmp/pyvenv.cfg" 2>/dev/null \
    | xargs -0 -r sed -i "s|$built_at|$DEST|g"
rm -rf "$DEST"
mv -T "$tmp" "$DEST"
trap - EXIT
echo "venv: $DEST ready in $(( $(date +%s) - start )) s"
