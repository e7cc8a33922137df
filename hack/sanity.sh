#!/usr/bin/env bash
# Sanity and lint for the kueueops.aks collection, offline-friendly.
#
#   hack/sanity.sh            # the lints below, with ansible-test sanity (no ignore files) on .venv's 2.19 inside
#                             # galaxy-importer's import of the tarball; the docs site; then the sanity of every
#                             # other release of the matrix (hack/matrix.sh: 2.16, 2.20, 2.21, 2.22)
#   hack/sanity.sh sanity     # only ansible-test sanity, in $VENV (default .venv)
#   hack/sanity.sh matrix     # only the other releases' sanity, each in its own venv (.venv-sanity-<release>: that
#                             # ansible-core alone, on Python 3.13 from hack/python.sh, 2.16 on the machine's 3.11;
#                             # built once, hack/venv.sh)
#   hack/sanity.sh lint       # only the lint of tests/ and hack/ (flake8, bash -n), ansible-lint
#                             # --profile production, antsibull-changelog and antsibull-docs lint, and
#                             # galaxy-importer on the built tarball, running ansible-test sanity locally
#                             # (hack/galaxy_check.sh)
#   hack/sanity.sh docs       # only the docs site (hack/docs.sh, Sphinx warnings as errors, offline) and its browser
#                             # check (tests/docsite: Debian's headless Chromium, hack/chromium.sh)
#   hack/sanity.sh sanity [ANSIBLE-TEST ARGS]   # e.g. --test pep8, or target paths
#   VENV=... hack/sanity.sh home                # only prepare the offline HOME for that venv's ansible-test; print it
#
# What ansible-test sees is the *built* collection: we run
# `ansible-galaxy collection build`, install the tarball into a temporary
# .../ansible_collections/kueueops/aks, `git init && git add -A` there
# (ansible-test lists files from git) and run sanity in that tree. So
# galaxy.yml's build_ignore decides what sanity judges: what we ship.
#
# THE OFFLINE TRICK. `ansible-test sanity --local` still runs most tests in
# managed virtualenvs under ~/.ansible/test/venv, and it populates each one by
#   1. bootstrapping pip with a script downloaded from
#      https://ci-files.testing.ansible.com/ansible-test/get-pip-<ver>.py
#      unless ~/.ansible/test/cache/get_pip_<ver_with_underscores>.py exists;
#   2. running that pip with an environment reduced to PATH/HOME/LC_ALL, so
#      PIP_CERT, PIP_INDEX_URL, PIP_FIND_LINKS... from our shell are lost.
# Only HOME survives, so we run ansible-test with HOME set to a private,
# reusable directory ($KUEUEOPS_SANITY_HOME, default
# ~/.cache/kueueops-sanity-home) in which we
#   a. write .config/pip/pip.conf from the caller's effective pip
#      configuration (`pip config list`: files and PIP_* variables), so the
#      managed venvs reach the same index with the same CA bundle;
#   b. download the exact pip wheel ansible-test pins (get_venv_packages(),
#      24.2 for ansible-core 2.19) with our own pip, and write
#      .ansible/test/cache/get_pip_<ver>.py: a 10-line stand-in for get-pip.py
#      that runs pip from that wheel to install it with --no-index.
# The only network then needed is the package index for the pinned sanity
# requirements (PyPI or your mirror); the venvs are cached in that HOME, so
# later runs are offline. The user's real ~/.ansible and pip config are untouched.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${VENV:-$ROOT/.venv}
PY=$VENV/bin/python
[ -x "$PY" ] || { echo "sanity.sh: $PY not found; run 'make venv' first" >&2; exit 2; }
export PATH="$VENV/bin:$PATH"
PYVER=${SANITY_PYTHON:-$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')}
WHAT=${1:-all}
[ $# -gt 0 ] && shift

# The private HOME for $VENV's ansible-test (steps a to c of THE OFFLINE TRICK above), in $home. hack/galaxy_check.sh
# gets it with `VENV=<galaxy-importer's venv> hack/sanity.sh home` for the ansible-test galaxy-importer runs.
prepare_home() {
    local cache pipver wheeldir
    home=${KUEUEOPS_SANITY_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/kueueops-sanity-home}
    cache=$home/.ansible/test/cache
    mkdir -p "$cache" "$home/.config/pip"

    # (a) pip configuration for the managed virtualenvs
    "$VENV/bin/pip" config list | "$PY" -c '
import re, sys
sections = {}
for line in sys.stdin:
    m = re.match(r"^(.+?)\.([A-Za-z0-9_-]+)=(.*)$", line.strip())
    if not m:
        continue
    scope, key, value = m.groups()
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\x27\x22":
        value = value[1:-1]
    scope = "global" if scope in (":env:", "site", "user") else scope
    sections.setdefault(scope, {})[key] = value
with open(sys.argv[1], "w") as out:
    for scope, items in sections.items():
        out.write("[%s]\n" % scope)
        for key, value in items.items():
            out.write("%s = %s\n" % (key, value))
' "$home/.config/pip/pip.conf"

    # (b) pip bootstrap without ci-files.testing.ansible.com
    # ansible-test 2.16 also pins setuptools and wheel there (get_venv_packages): every pinned wheel is fetched.
    local pins pin
    pins=$("$PY" -c 'from ansible_test._internal.python_requirements import get_venv_packages as g
print(" ".join("%s==%s" % kv for kv in g(type("P", (), {"version": "'"$PYVER"'"})()).items()))')
    pipver=$(tr ' ' '\n' <<< "$pins" | sed -n 's/^pip==//p')
    wheeldir=$cache/pip-wheels
    for pin in $pins; do
        if ! ls "$wheeldir/${pin%%==*}-${pin#*==}"-*.whl >/dev/null 2>&1; then
            "$VENV/bin/pip" download -q --no-deps --only-binary=:all: --dest "$wheeldir" "$pin"
        fi
    done
    cat > "$cache/get_pip_${pipver//./_}.py" <<PYEOF
"""Stand-in for get-pip.py written by kueueops.aks hack/sanity.sh: installs pip from a local wheel."""
import glob, sys
wheel = glob.glob("$wheeldir/pip-$pipver-*.whl")[0]
sys.path.insert(0, wheel)
from pip._internal.cli.main import main
args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
sys.exit(main(["install", "--no-index", "--find-links", "$wheeldir", "--upgrade", "--force-reinstall"] + args))
PYEOF

    # (c) ansible-test's pins that name a source archive on GitHub (ansible-core 2.22.0rc1: dill, at a commit no release
    # on PyPI has) cannot be fetched here, where only the package registries are reachable: such a pin becomes the package's
    # name, so pip takes its newest release from the index, and says so; every other pin stays as ansible-test has it.
    local reqdir pinned
    reqdir=$("$PY" -c 'import ansible_test, os; print(os.path.join(os.path.dirname(ansible_test.__file__), "_data", "requirements"))')
    for pinned in $(grep -lE '^[A-Za-z0-9_.-]+ *@ *https://github\.com/' "$reqdir"/*.txt 2>/dev/null); do
        echo "sanity.sh: $(basename "$pinned"): $(grep -hE '^[A-Za-z0-9_.-]+ *@ *https://github\.com/' "$pinned" \
              | sed -E 's/ *@ */ pinned to /' | tr '\n' ' ')-> the newest release on the package index"
        sed -i -E 's/^([A-Za-z0-9_.-]+) *@ *https:\/\/github\.com\/.*$/\1/' "$pinned"
    done

    # (d) the locale ansible-test asks for, en_US.UTF-8: without it, it warns and falls back to C.UTF-8 (which
    # galaxy_check.sh counts as a warning of the import). Compiled once, as root, from the machine's locale sources
    # (Debian's locales package) into the system's locale archive, as locale-gen does: ansible-test passes its
    # subprocesses no LOCPATH, so a private copy would not reach them.
    if ! locale -a 2>/dev/null | grep -qix 'en_US.utf-\?8' && [ "$(id -u)" = 0 ] && [ -d /usr/share/i18n/locales ]; then
        localedef -i en_US -f UTF-8 en_US.UTF-8 || echo "sanity.sh: localedef en_US.UTF-8 failed" >&2
    fi
}

run_sanity() {
    local home work build coll
    prepare_home

    # build, install, git, test
    work=$(mktemp -d "${TMPDIR:-/tmp}/kueueops-sanity.XXXXXX")
    trap 'rm -rf "$work"' RETURN
    build=$work/build
    ansible-galaxy collection build "$ROOT" --output-path "$build" --force >/dev/null
    ANSIBLE_COLLECTIONS_PATH="$work/collections" \
        ansible-galaxy collection install "$build"/kueueops-aks-*.tar.gz -p "$work/collections" --force >/dev/null
    coll=$work/collections/ansible_collections/kueueops/aks
    (cd "$coll" && git init -q && git add -A)
    echo "sanity.sh: ansible-test sanity --python $PYVER --local in $coll"
    (cd "$coll" && HOME="$home" ansible-test sanity --python "$PYVER" --local --color no "$@")
}

run_source_lint() {
    # tests/ and hack/ are not shipped (galaxy.yml build_ignore), so ansible-test never sees them: flake8 with
    # ansible-test's pep8 settings (pycodestyle, max line 160, its ignore list) plus pyflakes (unused imports,
    # undefined names), and bash -n on the shell scripts.
    echo "sanity.sh: flake8 on tests/ and hack/ (ansible-test's pep8 settings + pyflakes), bash -n on hack/*.sh"
    (cd "$ROOT" && flake8 --max-line-length 160 --extend-ignore E402,W503,W504,E741,E203,E701,E704 \
        --exclude .venv,.venv-compat,.venv-2.*,.venv-sanity-*,.run,tests/output,__pycache__ tests hack)
    local script
    for script in "$ROOT"/hack/*.sh; do bash -n "$script"; done
}

run_lint() {
    run_source_lint
    echo "sanity.sh: ansible-lint --profile production in $ROOT"
    # The collection resolves from the working tree through .venv/collections (make venv
    # links it there), so FQCNs such as kueueops.aks.kueue_helm are checked, not guessed.
    mkdir -p "$ROOT/.venv/collections/ansible_collections/kueueops"
    # Replaced only when wrong: `ln -sfn` unlinks first, and the tests may be starting ansible-playbook meanwhile.
    [ "$(readlink "$ROOT/.venv/collections/ansible_collections/kueueops/aks")" = "$ROOT" ] \
        || ln -sfn "$ROOT" "$ROOT/.venv/collections/ansible_collections/kueueops/aks"
    (cd "$ROOT" && ANSIBLE_COLLECTIONS_PATH="$ROOT/.venv/collections" ansible-lint --profile production)
    echo "sanity.sh: antsibull-changelog lint (every fragment well-formed)"
    (cd "$ROOT" && antsibull-changelog lint)
    echo "sanity.sh: antsibull-docs lint-collection-docs --plugin-docs (docs/docsite, module and role docs)"
    (cd "$ROOT/.venv/collections/ansible_collections/kueueops/aks" \
        && ANSIBLE_COLLECTIONS_PATH="$ROOT/.venv/collections" antsibull-docs lint-collection-docs --plugin-docs .)
    # Galaxy's import checks (a README per role, ansible-doc of every plugin and role, galaxy.yml, the changelog, a
    # 1.0.0+ version) and ansible-test sanity, run locally, on the built tarball; its own ansible-lint is off,
    # ansible-lint ran above. Figures: docs/dev/ci-time.md.
    echo "sanity.sh: galaxy-importer with ansible-test sanity on the built tarball (hack/galaxy_check.sh)"
    "$ROOT/hack/galaxy_check.sh"
}

run_docs() {
    "$ROOT/hack/docs.sh"
    "$ROOT/hack/chromium.sh" >/dev/null
    (cd "$ROOT" && "$PY" -m pytest -q -p no:cacheprovider tests/docsite)
}

# CPU seconds of the children this shell has waited for (and theirs): /proc's cutime + cstime.
children_cpu() { awk -v hz="$(getconf CLK_TCK)" '{printf "%d", ($16 + $17) / hz}' /proc/$$/stat; }

# "LABEL: N s, N CPU s" after running the command (its output as is).
timed() {
    local label=$1 start cpu rc=0
    shift
    start=$(date +%s)
    cpu=$(children_cpu)
    "$@" || rc=$?
    echo "sanity.sh: $label: exit $rc, $(( $(date +%s) - start )) s, $(( $(children_cpu) - cpu )) CPU s"
    return $rc
}

run_matrix() {
    # shellcheck source=hack/matrix.sh
    source "$ROOT/hack/matrix.sh"
    local release venv rc=0
    for release in "${MATRIX_SANITY[@]}"; do
        venv=$ROOT/.venv-sanity-$release
        matrix_venv "$venv" "$release" || { rc=1; continue; }
        echo "sanity.sh: ansible-core $("$venv/bin/python" -c 'from ansible.release import __version__ as v; print(v)')" \
             "on Python $("$venv/bin/python" -c 'import platform; print(platform.python_version())')"
        timed "ansible-test sanity on ansible-core $release" \
            env VENV="$venv" SANITY_PYTHON= "$ROOT/hack/sanity.sh" sanity "$@" || rc=1
    done
    return $rc
}

case "$WHAT" in
    all)
        # Each part in its own process (set -e holds there), the next one run whatever the previous gave.
        rc=0
        # ansible-test sanity on .venv's ansible-core runs in the lint part, inside galaxy-importer's import of the
        # tarball (hack/galaxy_check.sh), as Galaxy runs it; not a second time here.
        timed "lints and galaxy-importer with ansible-test sanity on ansible-core $("$PY" -c \
            'from ansible.release import __version__ as v; print(v)')" "$ROOT/hack/sanity.sh" lint || rc=1
        timed "docs site and browser check" "$ROOT/hack/sanity.sh" docs || rc=1
        "$ROOT/hack/sanity.sh" matrix || rc=1
        exit $rc ;;
    sanity) run_sanity "$@" ;;
    lint) run_lint ;;
    docs) run_docs ;;
    home) prepare_home >&2; echo "$home" ;;
    matrix) run_matrix "$@" ;;
    *) echo "usage: $0 [all|sanity|lint|docs|matrix]" >&2; exit 2 ;;
esac
