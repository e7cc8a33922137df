# The ansible-core releases CI tests, and how: sourced by hack/compat.sh (the playbook jobs) and hack/sanity.sh (the
# sanity runs), which hack/test.sh runs at once. meta/runtime.yml, the README's supported
# matrix and docs/dev/testing.md state this same matrix (tests/unit/test_matrix.py compares them with it).
#
#   release  Python               venv                              what CI runs on it
#   2.16     3.11 (the machine's) .venv-compat, .venv-sanity-2.16     sanity; unit tests + the playbook files of COMPAT_TESTS[2.16]
#   2.19     3.11                 .venv (requirements-test.txt)     everything else: sanity, lint, the main pytest run
#   2.20     3.13 (hack/python.sh) .venv-sanity-2.20                ansible-test sanity
#   2.21     3.13                 .venv-2.21, .venv-sanity-2.21     sanity; unit tests + the playbook files of COMPAT_TESTS[2.21]
#   2.22     3.13                 .venv-sanity-2.22                 ansible-test sanity (the newest 2.22 on PyPI, beta or final)
# ansible-core 2.20 and later need a Python 3.12+ controller (2.22: 3.13+); Debian 12 has 3.11, so hack/python.sh builds
# 3.13 once into ~/.cache/kueueops. Each venv is built once per set of requirements by hack/venv.sh (cached in
# ~/.cache/kueueops/venvs) and copied into the checkout. The specifiers take the newest release of the line when a
# venv is built (a new requirements file or Python rebuilds it); `~=2.22.0rc1` lets pip take pre-releases of 2.22.

# shellcheck shell=bash
MATRIX_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# ansible-test sanity, in this order, after the one of .venv (2.19): 2.16 in a venv of its own (ansible-core alone, as
# the others), not .venv-compat, whose test requirements ansible-test's own venvs do not need.
MATRIX_SANITY=(2.16 2.20 2.21 2.22)

# pip's specifier of each release.
matrix_spec() {
    case $1 in
        2.16) echo "ansible-core~=2.16.0" ;;
        2.20) echo "ansible-core~=2.20.0" ;;
        2.21) echo "ansible-core~=2.21.0" ;;
        2.22) echo "ansible-core~=2.22.0rc1" ;;
        *) echo "matrix.sh: no ansible-core $1 in the matrix" >&2; return 2 ;;
    esac
}

# The Python interpreter a release's venv is built with (hack/python.sh builds or reuses 3.13).
matrix_python() {
    case $1 in
        2.16|2.19) echo "${PY:-python3}" ;;
        *) "$MATRIX_ROOT/hack/python.sh" 3.13 ;;
    esac
}

# The test files each playbook job runs with its venv's Python (tests/integration/ansible.py then runs that venv's
# ansible-playbook). The 2.21 files are left out of the main run (hack/test.sh), not run twice; the 2.16 files run
# in both (the 2.16 job is the oldest release's check, the main run keeps its own coverage of 2.19). On 2.16 the managed
# extension runs site.yml, kueue_info and uninstall/restore with reinstall; its upgrade hop by hop (upgrade.yml) and
# migrate.yml, the two longest tests of test_extension_path.py, run on 2.21 (as upgrade.yml on Helm does), not twice.
# Test files that run no Ansible at all (the harness's own tests): which ansible-core is installed beside them changes
# nothing, so they run in the 2.16 job, which has one worker and ends first, instead of the main run, which ends last
# (session 33: the main run 38 min 46 s, the 2.16 job 21 min); hack/test.sh leaves them out of the main run.
# (test_arm_emulator.py runs no Ansible either, but needs the extension types client of requirements-test.txt, which
# only .venv has.)
ANSIBLE_FREE_TESTS=(
    tests/integration/test_harness.py
)
COMPAT_TESTS_216=(
    tests/unit
    tests/integration/test_site.py
    tests/integration/test_compat.py
    tests/integration/test_uninstall_restore.py::test_helm_and_managed_extension_both_present_is_refused_before_anything
    tests/integration/test_uninstall_restore.py::test_uninstall_then_restore_round_trip
    tests/integration/test_extension_path.py::test_each_path_refuses_the_other_paths_options_before_anything_is_sent
    tests/integration/test_extension_path.py::test_site_installs_verifies_configures_the_extension_without_leaking_secrets
    tests/integration/test_extension_path.py::test_kueue_info_tells_the_extensions_release_from_an_unmanaged_one_without_arm
    tests/integration/test_extension_path.py::test_uninstall_then_restore_with_reinstall_on_the_extension
    "${ANSIBLE_FREE_TESTS[@]}"
)
# Every module runs at least once here (hack/compat.sh checks it): kueue_helm, kueue_verify, kueue_queues,
# kueue_capacity_info, kueue_info (site.yml, test_site.py); configure_queues.yml and status.yml, the job roles through
# roles:/include_role/import_role (test_compat.py); status.yml with drift, kueue_drift_info (test_drift.py);
# uninstall.yml with backup and restore.yml: kueue_backup, kueue_gitops, kueue_jobs_info (test_uninstall_restore.py);
# upgrade.yml on Helm 0.15 -> 0.17 -> 0.19: kueue_upgrade_plan, kueue_storage_migration (test_upgrade.py); site.yml
# on the managed extension against the ARM emulator, kueue_extension, uninstall/restore and migrate.yml
# (test_extension_path.py); kueue_multikueue_worker (test_kueue_multikueue_worker.py); a fleet of two clusters, one
# run with forks, each its own install method, upgrade.yml serial 1 and the wrong-cluster guards (test_fleet.py: it
# left the main run, which ended about 7 min after this job, for CI time, session 33).
#
# The 2.21 job runs on the newest Kubernetes of hack/versions.env (KUBE_VERSION_NEWEST, issue 45: 1.37.x), everything
# else on KUBE_VERSION (1.34.x, the managed extension's minimum on AKS). So these run on the newest control plane: the
# playbooks users run (above), the CRD storage migration drill (test_upgrade.py), and, for what changes between
# Kubernetes minors, the fast path's property test against server-side apply and managedFields (test_fast_path.py),
# the MultiKueue wiring with its TokenRequest tokens (test_multikueue.py) and the API server's refusals that
# server_errors translates (the corpus cases of SERVER_ERROR_CASES, which the main run keeps on 1.34 too).
SERVER_ERROR_CASES=(
    queues-type-integer-as-word queues-type-string-as-number queues-type-mapping-as-list queues-type-list-as-string
    queues-type-quantity-as-list queues-undeclared-field queues-enum-unsupported-value queues-pattern-mismatch
    queues-too-many-items queues-too-few-items queues-too-long queues-cel-borrowing-limit-without-cohort
    queues-cel-flavor-fungibility-preference queues-cel-reclaim-never-borrow-within-cohort
    queues-cel-topology-flavor-without-node-labels queues-cel-taint-effect queues-cel-toleration-without-key
    queues-cel-toleration-value-with-exists queues-cel-toleration-seconds queues-cel-topology-hostname-not-lowest
    queues-cel-topology-levels-unique queues-cel-immutable-field queues-webhook-lending-limit-without-cohort
    queues-webhook-lending-limit-above-quota queues-webhook-resources-out-of-order
    queues-webhook-admission-check-on-unknown-flavor queues-webhook-duplicate-flavor
    queues-negative-fair-sharing-weight queues-cel-multikueue-cluster-source
)
COMPAT_TESTS_221=(
    tests/unit
    tests/integration/test_site.py
    tests/integration/test_compat.py
    tests/integration/test_drift.py
    tests/integration/test_uninstall_restore.py
    tests/integration/test_upgrade.py
    tests/integration/test_extension_path.py
    tests/integration/test_kueue_multikueue_worker.py
    tests/integration/test_fast_path.py
    tests/integration/test_multikueue.py
    tests/integration/test_fleet.py
)
for case in "${SERVER_ERROR_CASES[@]}"; do
    COMPAT_TESTS_221+=("tests/reliability/test_bad_input_modules.py::test_bad_input_fails_safely[$case]")
done
unset case

# The Kubernetes a playbook job's control plane runs (a KUBE_VERSION already set wins): 2.21 the newest.
matrix_kube_version() {
    local key=KUBE_VERSION
    [ "$1" = 2.21 ] && key=KUBE_VERSION_NEWEST
    sed -n "s/^$key=//p" "$MATRIX_ROOT/hack/versions.env"
}

# Build or reuse DEST with RELEASE's ansible-core (SPEC=... instead) and PIP_ARGS, on its Python: matrix_venv DEST RELEASE PIP_ARGS...
matrix_venv() {
    local dest=$1 release=$2 py spec
    shift 2
    py=$(matrix_python "$release") || return 1
    spec=${SPEC:-$(matrix_spec "$release")} || return 1
    PY=$py "$MATRIX_ROOT/hack/venv.sh" "$dest" "$spec" "$@"
}
