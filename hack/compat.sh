#!/usr/bin/env bash
# Compatibility job: prove the collection works on the oldest ansible-core that
# meta/runtime.yml accepts (requires_ansible '>=2.16.0'; AAP 2.4 and older
# execution environments run 2.16), not only on the ansible-core of .venv.
#
#   hack/compat.sh              # build or reuse .venv-compat, then run the compat tests
#   hack/compat.sh --venv-only  # only build or reuse .venv-compat
#   hack/compat.sh -- -k site   # extra pytest arguments after --
#
# .venv-compat holds ansible-core~=2.16.0 (the newest 2.16.x), the collection's
# runtime requirements (requirements.txt) and what the tests import (pytest,
# pytest-timeout, pytest-xdist (two workers, as make test), cryptography for the harness' PKI, bcrypt for its TLS registry's htpasswd, hypothesis for the fuzz
# tests). hack/venv.sh builds it once per set of those requirements (and Python)
# in ~/.cache/kueueops/venvs and copies it to .venv-compat after. The collection is linked at
# .venv-compat/collections/ansible_collections/kueueops/aks, as `make venv` does
# for .venv. pytest runs with .venv-compat's python, so tests/integration/ansible.py
# runs .venv-compat/bin/ansible-playbook with that collections path.
#
# What it runs: the unit tests, and on the local control plane (started and
# stopped by the `cluster` fixture unless already running) the site.yml job
# (install, queue configuration, smoke test, second run changed=0), status.yml's
# report, uninstall.yml's refusal of a cluster running both Helm and the managed
# extension, uninstall.yml with backup followed by restore.yml, and the managed
# extension path against the ARM emulator (test_extension_path.py: site.yml on the
# extension, kueue_info, uninstall/restore with reinstall, migrate.yml both ways). ansible-test
# sanity and ansible-lint are NOT run here: they run in .venv (hack/sanity.sh).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
PY=${PY:-python3}
VENV=${COMPAT_VENV:-$ROOT/.venv-compat}
CORE_SPEC=${COMPAT_ANSIBLE_CORE:-ansible-core~=2.16.0}
# The test tools, with the bounds requirements-test.txt gives them.
TEST_TOOLS=("pytest>=8" "pytest-timeout>=2.3" "pytest-xdist>=3.6" "cryptography>=42" "hypothesis>=6.100" "bcrypt>=4.1")
TESTS=(
    tests/unit
    tests/integration/test_site.py
    tests/integration/test_compat.py
    tests/integration/test_uninstall_restore.py::test_helm_and_managed_extension_both_present_is_refused_before_anything
    tests/integration/test_uninstall_restore.py::test_uninstall_then_restore_round_trip
    tests/integration/test_extension_path.py
)

start=$(date +%s)
# Built once per set of requirements in ~/.cache/kueueops/venvs, copied here after (hack/venv.sh).
PY=$PY hack/venv.sh "$VENV" "$CORE_SPEC" -r requirements.txt "${TEST_TOOLS[@]}"
mkdir -p "$VENV/collections/ansible_collections/kueueops"
# The link is cheap to check and a moved checkout breaks it.
ln -sfn "$ROOT" "$VENV/collections/ansible_collections/kueueops/aks"
# Not `| head -1`: with pipefail, head closing the pipe early fails ansible-playbook (BrokenPipeError).
version=$("$VENV/bin/ansible-playbook" --version)
echo "compat: ${version%%$'\n'*}"
"$VENV/bin/python" - <<'EOF'
import sys
from ansible.release import __version__
if not __version__.startswith("2.16."):
    sys.exit("compat: .venv-compat has ansible-core %s, not 2.16.x" % __version__)
EOF
echo "compat: kubernetes $("$VENV/bin/python" -c "import kubernetes; print(kubernetes.__version__)") (the newest requirements.txt allows; .venv keeps the 36 line, requirements-test.txt)"
echo "compat: venv ready in $(( $(date +%s) - start )) s"
if [ "${1:-}" = "--venv-only" ]; then
    exit 0
fi
[ "${1:-}" = "--" ] && shift

export ANSIBLE_COLLECTIONS_PATH="$VENV/collections"
rc=0
"$VENV/bin/python" -m pytest "${TESTS[@]}" -q -p no:cacheprovider -n "${TEST_WORKERS:-2}" --dist loadfile \
    --no-loadscope-reorder "$@" || rc=$?
end=$(date +%s)
echo "compat: ansible-core $("$VENV/bin/python" -c 'from ansible.release import __version__; print(__version__)')," \
     "exit $rc, $(( end - start )) s in all"
exit $rc
