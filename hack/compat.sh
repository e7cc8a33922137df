#!/usr/bin/env bash
# The playbook jobs on other ansible-core releases than .venv's 2.19 (the matrix: hack/matrix.sh):
#   2.16, the oldest that meta/runtime.yml accepts (requires_ansible '>=2.16.0'; AAP 2.4 and older execution
#        environments run it): .venv-compat, the machine's Python 3.11;
#   2.21, the newest release line (what `pip install ansible-core` gives on Python 3.12+): .venv-2.21, Python 3.13
#        (hack/python.sh builds it once into ~/.cache/kueueops).
#
#   hack/compat.sh                     # 2.16: build or reuse .venv-compat, then run its tests
#   COMPAT_CORE=2.21 hack/compat.sh    # 2.21 (make core221): build or reuse .venv-2.21, then run its tests
#   hack/compat.sh --venv-only         # only build or reuse the venv
#   hack/compat.sh -- -k site          # extra pytest arguments after --
#
# The venv holds the release's newest ansible-core (matrix_spec; COMPAT_ANSIBLE_CORE=SPEC overrides it), the
# collection's runtime requirements (requirements.txt, so the newest kubernetes client) and what the tests import
# (pytest, pytest-timeout, pytest-xdist (make test's workers), cryptography for the harness' PKI, bcrypt for its TLS
# registry's htpasswd, hypothesis for the fuzz tests). hack/venv.sh builds it once per set of those requirements
# (and Python) in ~/.cache/kueueops/venvs and copies it into the checkout after. The collection is linked at
# <venv>/collections/ansible_collections/kueueops/aks, as `make venv` does for .venv. pytest runs with the venv's
# python, so tests/integration/ansible.py runs its ansible-playbook with that collections path.
#
# What it runs: the unit tests and the playbook test files of COMPAT_TESTS_216 or COMPAT_TESTS_221 (hack/matrix.sh
# says which file covers which playbook and module) on the local control plane (started and stopped by the `cluster`
# fixture unless already running) and the ARM emulator. On 2.21 every module of plugins/modules must have run at
# least once (the test callback writes the modules the tasks ran to $KUEUEOPS_MODULES_RAN), or the job fails.
# ansible-test sanity and ansible-lint are NOT run here: hack/sanity.sh runs them. The control plane runs
# matrix_kube_version's Kubernetes: 1.34.x for 2.16, the newest (1.37.x) for 2.21.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
# shellcheck source=hack/matrix.sh
source "$ROOT/hack/matrix.sh"
CORE=${COMPAT_CORE:-2.16}
case $CORE in
    2.16) VENV=${COMPAT_VENV:-$ROOT/.venv-compat}; TESTS=("${COMPAT_TESTS_216[@]}") ;;
    2.21) VENV=${COMPAT_VENV:-$ROOT/.venv-2.21}; TESTS=("${COMPAT_TESTS_221[@]}") ;;
    *) echo "compat: no playbook job for ansible-core $CORE (hack/matrix.sh)" >&2; exit 2 ;;
esac
# The test tools, with the bounds requirements-test.txt gives them.
TEST_TOOLS=("pytest>=8" "pytest-timeout>=2.3" "pytest-xdist>=3.6" "cryptography>=42" "hypothesis>=6.100" "bcrypt>=4.1")

start=$(date +%s)
# Built once per set of requirements in ~/.cache/kueueops/venvs, copied here after (hack/venv.sh).
SPEC=${COMPAT_ANSIBLE_CORE:-} matrix_venv "$VENV" "$CORE" -r requirements.txt "${TEST_TOOLS[@]}"
mkdir -p "$VENV/collections/ansible_collections/kueueops"
# The link is cheap to check and a moved checkout breaks it.
ln -sfn "$ROOT" "$VENV/collections/ansible_collections/kueueops/aks"
# Not `| head -1`: with pipefail, head closing the pipe early fails ansible-playbook (BrokenPipeError).
version=$("$VENV/bin/ansible-playbook" --version)
echo "compat: ${version%%$'\n'*}"
"$VENV/bin/python" - "$CORE" "$VENV" <<'EOF'
import sys
from ansible.release import __version__
if not __version__.startswith(sys.argv[1] + "."):
    sys.exit("compat: %s has ansible-core %s, not %s.x" % (sys.argv[2], __version__, sys.argv[1]))
EOF
echo "compat: Python $("$VENV/bin/python" -c 'import platform; print(platform.python_version())')," \
     "kubernetes $("$VENV/bin/python" -c 'import kubernetes; print(kubernetes.__version__)')" \
     "(the newest requirements.txt allows; .venv keeps the 36 line, requirements-test.txt)"
echo "compat: venv ready in $(( $(date +%s) - start )) s"
if [ "${1:-}" = "--venv-only" ]; then
    exit 0
fi
[ "${1:-}" = "--" ] && shift

export ANSIBLE_COLLECTIONS_PATH="$VENV/collections"
# The control plane's binaries, built or reused (a no-op once cached; on a fresh machine make test's jobs wait here
# for the one build, hack/toolchain.sh's lock, while their venvs and sanity went on beside it).
hack/toolchain.sh >&2
# The job's Kubernetes (hack/matrix.sh: the 2.21 job runs on the newest), read by hack/toolchain.sh --env.
KUBE_VERSION=${KUBE_VERSION:-$(matrix_kube_version "$CORE")}
export KUBE_VERSION
echo "compat: Kubernetes $KUBE_VERSION"
# The modules the tasks of this run ran, one a line (tests/integration/callback_plugins/test_json.py).
export KUEUEOPS_MODULES_RAN=${KUEUEOPS_RUN_DIR:-$ROOT/.run}-modules-ran.txt
rm -f "$KUEUEOPS_MODULES_RAN"
rc=0
"$VENV/bin/python" -m pytest "${TESTS[@]}" -q -rs -p no:cacheprovider -n "${TEST_WORKERS:-2}" --dist loadfile \
    --no-loadscope-reorder "$@" || rc=$?
end=$(date +%s)
if [ "$CORE" = 2.21 ] && [ $# = 0 ]; then
    missing=$(for module in plugins/modules/*.py; do
                  name=$(basename "$module" .py)
                  grep -qx "$name" "$KUEUEOPS_MODULES_RAN" 2>/dev/null || echo "$name"
              done)
    if [ -n "$missing" ]; then
        echo "compat: these modules never ran on ansible-core $CORE:" $missing >&2
        rc=1
    else
        echo "compat: every module of plugins/modules ran on ansible-core $CORE (tasks per module:" \
             "$(sort "$KUEUEOPS_MODULES_RAN" | uniq -c | sort -rn | awk '{printf "%s%s %d", (NR > 1 ? ", " : ""), $2, $1}'))"
    fi
fi
echo "compat: ansible-core $("$VENV/bin/python" -c 'from ansible.release import __version__; print(__version__)')," \
     "exit $rc, $(( end - start )) s in all"
exit $rc
