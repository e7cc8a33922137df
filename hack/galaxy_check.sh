#!/usr/bin/env bash
# Check the built collection tarball as Galaxy and Automation Hub import it (issue 43): galaxy-importer (PyPI package
# galaxy-importer) on the output of `ansible-galaxy collection build`, with ansible-test off (Galaxy runs it in a
# container; hack/sanity.sh runs ansible-test sanity on the same tarball) and ansible-lint on (offline), ansible-doc
# on every plugin and role. Prints the importer's errors and warnings; exits 1 when it reports an ERROR or fails.
#
#   hack/galaxy_check.sh                        # GALAXY_CHECK_LINT=false: without the importer's ansible-lint
#
# galaxy-importer runs in a venv of its own, built once into $KUEUEOPS_CACHE/venvs/galaxy-importer (default
# ~/.cache/kueueops) and rebuilt only when GALAXY_IMPORTER_VERSION changes; it never touches the checkout's .venv.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VERSION=${GALAXY_IMPORTER_VERSION:-0.4.44}
VENV=${KUEUEOPS_CACHE:-$HOME/.cache/kueueops}/venvs/galaxy-importer
PY=${PY:-python3}
LINT=${GALAXY_CHECK_LINT:-false}

installed() { "$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("galaxy-importer"))' 2>/dev/null; }
mkdir -p "$(dirname "$VENV")"
exec 9>"$VENV.lock"
flock 9    # two checkouts at once: one builds, the other waits and reuses it
if [ "$(installed)" != "$VERSION" ]; then
    echo "galaxy_check: building $VENV (galaxy-importer $VERSION)"
    rm -rf "$VENV"
    "$PY" -m venv "$VENV"
    "$VENV/bin/pip" install -q "galaxy-importer==$VERSION" || { rm -rf "$VENV"; exit 1; }
fi
flock -u 9

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$ROOT" && "$VENV/bin/ansible-galaxy" collection build --force --output-path "$work" >/dev/null)
tarball=$(ls "$work"/*.tar.gz)
cat > "$work/galaxy-importer.cfg" <<EOF
[galaxy-importer]
RUN_ANSIBLE_TEST = False
RUN_ANSIBLE_LINT = $LINT
OFFLINE_ANSIBLE_LINT = True
RUN_ANSIBLE_DOC = True
CHECK_CHANGELOG = True
ANSIBLE_LOCAL_TMP = $work/ansible-tmp
TMP_ROOT_DIR = $work
EOF
echo "galaxy_check: galaxy-importer $VERSION on $(basename "$tarball") (ansible-test off, ansible-lint $LINT)"
rc=0
(cd "$work" && PATH="$VENV/bin:$PATH" GALAXY_IMPORTER_CONFIG="$work/galaxy-importer.cfg" HOME="$work" \
    "$VENV/bin/python" -m galaxy_importer.main "$tarball") >"$work/import.log" 2>&1 || rc=$?
errors=$(grep -c 'ERROR' "$work/import.log" || true)
warnings=$(grep -c 'WARNING' "$work/import.log" || true)
grep -E 'ERROR|WARNING' "$work/import.log" || true
if [ "$rc" -ne 0 ] || [ "$errors" -ne 0 ]; then
    echo "galaxy_check: FAILED (exit $rc, $errors error line(s), $warnings warning line(s)); the importer's log:"
    cat "$work/import.log"
    exit 1
fi
echo "galaxy_check: passed ($warnings warning line(s))"
