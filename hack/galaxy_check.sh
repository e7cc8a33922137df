#!/usr/bin/env bash
# Check the built collection tarball as Galaxy and Automation Hub import it (issue 43): galaxy-importer (PyPI package
# galaxy-importer) on the output of `ansible-galaxy collection build`: its checks of galaxy.yml, the README of every
# role, the changelog, ansible-doc on every plugin and role, a 1.0.0 or later version (Automation Hub's rule), and
# ansible-test sanity on the extracted tarball, run locally. Prints the importer's errors and warnings; exits 1 when it
# reports an ERROR or a WARNING, or fails.
#
#   hack/galaxy_check.sh                        # GALAXY_CHECK_LINT=false: without the importer's ansible-lint
#   GALAXY_CHECK_ANSIBLE_TEST=false hack/galaxy_check.sh    # without ansible-test (the quick check of the metadata)
#
# ansible-test, locally: galaxy-importer's local runner (RUN_ANSIBLE_TEST without its OpenShift or local-image runners)
# always runs `ansible-test sanity --docker --color yes --failure-ok` in the extracted collection, and there is no
# container engine here. An `ansible-test` first on the importer's PATH (written below) runs ansible-test with --local
# instead of --docker: the checkout's (.venv's ansible-core, whose sanity make sanity runs; the importer's own without a
# .venv), with the private HOME hack/sanity.sh prepares (`hack/sanity.sh home`: ansible-test's sanity venvs reach the
# package index through it and are shared with make sanity's; the en_US.UTF-8 locale it asks for). So this is the
# ansible-test sanity of .venv's release on the tarball, and hack/sanity.sh does not run that one again. Its output reaches the importer's log line by line: an ERROR line (a sanity failure) or a WARNING fails
# this check, since --failure-ok makes the importer itself pass.
#
# galaxy-importer runs in a venv of its own, built once into $KUEUEOPS_CACHE/venvs/galaxy-importer (default
# ~/.cache/kueueops) and rebuilt only when GALAXY_IMPORTER_VERSION changes; it never touches the checkout's .venv.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VERSION=${GALAXY_IMPORTER_VERSION:-0.4.44}
VENV=${KUEUEOPS_CACHE:-$HOME/.cache/kueueops}/venvs/galaxy-importer
PY=${PY:-python3}
LINT=${GALAXY_CHECK_LINT:-false}
ANSIBLE_TEST=${GALAXY_CHECK_ANSIBLE_TEST:-true}

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
mkdir -p "$work/bin"
if [ "$ANSIBLE_TEST" = true ]; then
    # the checkout's ansible-core (.venv, the release CI tests everything with), else the importer's own
    test_venv=$ROOT/.venv
    [ -x "$test_venv/bin/ansible-test" ] || test_venv=$VENV
    sanity_home=$(VENV="$test_venv" "$ROOT/hack/sanity.sh" home)
    pyver=$("$test_venv/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    cat > "$work/bin/ansible-test" <<EOF
#!/usr/bin/env bash
# galaxy-importer's \`ansible-test sanity --docker ...\`, run locally (hack/galaxy_check.sh)
args=()
for arg in "\$@"; do
    case \$arg in --docker) args+=(--local --python $pyver) ;; *) args+=("\$arg") ;; esac
done
HOME="$sanity_home" PATH="$test_venv/bin:\$PATH" exec "$test_venv/bin/ansible-test" "\${args[@]}"
EOF
    chmod +x "$work/bin/ansible-test"
fi
cat > "$work/galaxy-importer.cfg" <<EOF
[galaxy-importer]
RUN_ANSIBLE_TEST = $([ "$ANSIBLE_TEST" = true ] && echo True || echo False)
REQUIRE_V1_OR_GREATER = True
RUN_ANSIBLE_LINT = $LINT
OFFLINE_ANSIBLE_LINT = True
RUN_ANSIBLE_DOC = True
CHECK_CHANGELOG = True
ANSIBLE_LOCAL_TMP = $work/ansible-tmp
TMP_ROOT_DIR = $work
EOF
echo "galaxy_check: galaxy-importer $VERSION on $(basename "$tarball") (ansible-test $([ "$ANSIBLE_TEST" = true ] && echo "locally" || echo off), ansible-lint $LINT)"
rc=0
(cd "$work" && PATH="$work/bin:$VENV/bin:$PATH" GALAXY_IMPORTER_CONFIG="$work/galaxy-importer.cfg" HOME="$work" \
    "$VENV/bin/python" -m galaxy_importer.main "$tarball") >"$work/import.log" 2>&1 || rc=$?
errors=$(grep -c 'ERROR' "$work/import.log" || true)
warnings=$(grep -c 'WARNING' "$work/import.log" || true)
grep -E 'ERROR|WARNING' "$work/import.log" || true
# ansible-test's own lines reach the log only when the importer ran it: each sanity test says "Running sanity test".
tests_run=$(grep -c 'Running sanity test' "$work/import.log" || true)
if [ "$ANSIBLE_TEST" = true ] && [ "$tests_run" -eq 0 ]; then
    echo "galaxy_check: the importer ran no ansible-test sanity test"
    rc=1
fi
if [ "$rc" -ne 0 ] || [ "$errors" -ne 0 ] || [ "$warnings" -ne 0 ]; then
    echo "galaxy_check: FAILED (exit $rc, $errors error line(s), $warnings warning line(s)); the importer's log:"
    cat "$work/import.log"
    exit 1
fi
echo "galaxy_check: passed, no error, no warning$([ "$ANSIBLE_TEST" = true ] && echo "; ansible-test ran $tests_run sanity tests")"
