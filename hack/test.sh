#!/usr/bin/env bash
# Everything `make test` (and so CI) runs, four jobs at the same time (the ansible-core matrix: hack/matrix.sh):
#   1. sanity, lint and docs (hack/sanity.sh: ansible-lint production, flake8, antsibull lints, galaxy-importer on
#      the built tarball with ansible-test sanity on 2.19 inside it, the docs site and its browser check, then
#      ansible-test sanity on 2.16, then 2.20, 2.21 and 2.22 on Python 3.13);
#   2. the ansible-core 2.16 compat job (hack/compat.sh, its venv built or reused first), COMPAT_WORKERS workers;
#   3. the ansible-core 2.21 job (COMPAT_CORE=2.21 hack/compat.sh, Python 3.13) on the newest Kubernetes
#      (KUBE_VERSION_NEWEST, 1.37.x; issue 45): the unit tests and the playbook files of COMPAT_TESTS_221,
#      CORE221_WORKERS workers; those files are left out of the main run (its single corpus cases run in both);
#   4. the main pytest run on 2.19: unit, integration and reliability tests, TEST_WORKERS workers.
# Jobs 2 to 4 need the control plane's binaries: this script builds them (hack/toolchain.sh, a no-op once cached)
# while sanity and the venvs go on, and jobs 2 and 3 wait for that build on its lock after their venvs.
#
#   hack/test.sh                 # all four; the main run's output, then the other three; exit 1 if any failed
#   TEST_WORKERS=2 COMPAT_WORKERS=1 CORE221_WORKERS=2 hack/test.sh
#
# Why at the same time: on the 2-core machine CI runs on, the suite is CPU-bound but not every second (waits on
# controllers, helm --wait, the timeouts a drill waits out, pip downloading). One after the other, they took about
# 3 min, 38 min 38 s and 10 min 24 s (51 min 51 s with the venv); sanity alone kept about one core busy. docs/dev/ci-time.md
# has the measured figures.
#
# Nothing is shared between the jobs: each pytest worker has its own run folder and cluster (the main run
# $KUEUEOPS_RUN_DIR-gw0, -gw1; the compat job $KUEUEOPS_RUN_DIR-compat-gw0, the 2.21 job
# $KUEUEOPS_RUN_DIR-core221-gw0: tests/conftest.py), each job its own venv (hack/python.sh's lock lets one of
# the two jobs that need Python 3.13 build it on a fresh machine while the other waits), what the tests
# write beside the checkout is named per process and left out of the lint and the tarball (.ansible-lint,
# galaxy.yml build_ignore), and sanity lints a tarball built from the checkout. .ci/run stops whatever a killed
# run leaves in any run folder. The sanity, compat and 2.21 outputs go to $KUEUEOPS_RUN_DIR-sanity.log,
# $KUEUEOPS_RUN_DIR-compat.log and $KUEUEOPS_RUN_DIR-core221.log and are printed after the main run's.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
VPY=${VPY:-$ROOT/.venv/bin/python}
RUN_DIR=${KUEUEOPS_RUN_DIR:-$ROOT/.run}
WORKERS=${TEST_WORKERS:-2}
SANITY_LOG=$RUN_DIR-sanity.log
COMPAT_LOG=$RUN_DIR-compat.log
CORE221_LOG=$RUN_DIR-core221.log
# shellcheck source=hack/matrix.sh
source "$ROOT/hack/matrix.sh"
# The files the 2.21 job runs are not run twice: the main run leaves them out (the unit tests, cheap, run in both);
# nor are the files without Ansible that the 2.16 job runs (ANSIBLE_FREE_TESTS).
MOVED=()
for file in "${COMPAT_TESTS_221[@]}" "${ANSIBLE_FREE_TESTS[@]}"; do
    # the unit tests and single cases (the server-error cases of the corpus) run in both
    case $file in tests/unit*|*::*) ;; *) MOVED+=(--ignore "$file") ;; esac
done
start=$(date +%s)
# The machine's CPU over the run (/proc/stat: user nice system, in clock ticks), to say how busy the cores were.
cpu_ticks() { awk '/^cpu /{print $2 + $3 + $4}' /proc/stat; }
cpu_start=$(cpu_ticks)

# Each job runs in a process group of its own (setsid), so that stopping it stops what it started too (ansible-lint,
# ansible-test, pytest's workers), not only its shell.
setsid hack/sanity.sh > "$SANITY_LOG" 2>&1 &
sanity_pid=$!
KUEUEOPS_RUN_DIR=$RUN_DIR-compat TEST_WORKERS=${COMPAT_WORKERS:-1} setsid hack/compat.sh > "$COMPAT_LOG" 2>&1 &
compat_pid=$!
KUEUEOPS_RUN_DIR=$RUN_DIR-core221 TEST_WORKERS=${CORE221_WORKERS:-2} COMPAT_CORE=2.21 setsid hack/compat.sh \
    > "$CORE221_LOG" 2>&1 &
core221_pid=$!
# Stop jobs (the pids of their process groups), when this script is interrupted or when the toolchain they wait for
# failed: SIGTERM to each group (pytest ends on it as on Ctrl-C: tests/conftest.py), SIGKILL to what is left after
# 60 s, then any cluster a run folder of this run still holds is stopped (as .ci/run does for the whole run): an
# xdist worker's teardown may not finish before its controller ends, so this last step is what stops the clusters.
stop_jobs() {
    local groups=() pid _
    for pid in "$@"; do groups+=(-"$pid"); done
    kill -TERM -- "${groups[@]}" 2>/dev/null
    for _ in $(seq 60); do
        kill -0 -- "${groups[@]}" 2>/dev/null || break
        sleep 1
    done
    kill -KILL -- "${groups[@]}" 2>/dev/null
    wait 2>/dev/null
    KUEUEOPS_RUN_DIR=$RUN_DIR make -s clusters-down >/dev/null 2>&1
    return 0
}
# Ctrl-C reaches this script alone (each job is a session of its own) and a CI timeout's SIGTERM too: every job is
# stopped as above, the main run's included.
main_pid=
interrupted() {
    echo "test.sh: interrupted; stopping every job"
    # shellcheck disable=SC2086 # no main run yet: no pid
    stop_jobs "$sanity_pid" "$compat_pid" "$core221_pid" $main_pid
    exit 130
}
trap interrupted INT TERM

# The toolchain is built (or reused: a no-op once cached) here, not before this script: on a fresh machine the sanity
# job, the compat job's venv and the Python 3.13 build of the 2.21 job run beside its Go builds, which leave about a
# quarter of the 2 cores idle; the compat and 2.21 jobs wait for it on its lock before starting their clusters.
if ! hack/toolchain.sh; then
    echo "test.sh: hack/toolchain.sh failed; stopping the other jobs"
    stop_jobs "$sanity_pid" "$compat_pid" "$core221_pid"
    exit 1
fi
echo "test.sh: toolchain ready at $(( $(date +%s) - start )) s"
# --no-loadscope-reorder: whole files in the order tests/conftest.py gives them (slowest first), not pytest-xdist's
# default of the files with the most tests first (which started the two slowest files, of 2 and 3 tests, last).
# In its own session as the other jobs, waited for (a trap runs during `wait`, not during a command in the foreground).
setsid "$VPY" -m pytest tests/unit tests/integration tests/reliability -q -rs -p no:cacheprovider -n "$WORKERS" \
    --dist loadfile --no-loadscope-reorder --durations=40 --durations-min=20 "${MOVED[@]}" &
main_pid=$!
wait "$main_pid"
main_rc=$?
echo "test.sh: main run exit $main_rc at $(( $(date +%s) - start )) s; waiting for sanity, the compat and 2.21 jobs"

wait "$sanity_pid"
sanity_rc=$?
wait "$compat_pid"
compat_rc=$?
wait "$core221_pid"
core221_rc=$?
trap - INT TERM
echo "================================ sanity and lint ($SANITY_LOG) ================================"
cat "$SANITY_LOG"
echo "================================ compat job ($COMPAT_LOG) ================================"
cat "$COMPAT_LOG"
echo "================================ ansible-core 2.21 job ($CORE221_LOG) ================================"
cat "$CORE221_LOG"
wall=$(( $(date +%s) - start ))
cpu=$(( ($(cpu_ticks) - cpu_start) / $(getconf CLK_TCK) ))
echo "test.sh: main run exit $main_rc, sanity exit $sanity_rc, compat job exit $compat_rc," \
     "2.21 job exit $core221_rc; $wall s in all, $cpu CPU s on $(nproc) cores ($(( 100 * cpu / (wall * $(nproc) + 1) ))% busy)"
[ "$main_rc" = 0 ] && [ "$sanity_rc" = 0 ] && [ "$compat_rc" = 0 ] && [ "$core221_rc" = 0 ]
