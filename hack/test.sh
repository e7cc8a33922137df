#!/usr/bin/env bash
# Everything `make test` (and so CI) runs, three jobs at the same time:
#   1. sanity and lint (hack/sanity.sh: ansible-test sanity, ansible-lint production, flake8, antsibull lints);
#   2. the ansible-core 2.16 compat job (hack/compat.sh, its venv built or reused first), COMPAT_WORKERS workers;
#   3. the main pytest run: unit, integration and reliability tests, TEST_WORKERS workers.
#
#   hack/test.sh                 # all three; the main run's output, then the other two; exit 1 if any failed
#   TEST_WORKERS=2 COMPAT_WORKERS=1 hack/test.sh
#
# Why at the same time: on the 2-core machine CI runs on, the suite is CPU-bound but not every second (waits on
# controllers, helm --wait, the timeouts a drill waits out, pip downloading). One after the other, they took about
# 3 min, 38 min 38 s and 10 min 24 s (51 min 51 s with the venv); sanity alone kept about one core busy. docs/ci-time.md
# has the measured figures.
#
# Nothing is shared between the jobs: each pytest worker has its own run folder and cluster (the main run
# $KUEUEOPS_RUN_DIR-gw0, -gw1; the compat job $KUEUEOPS_RUN_DIR-compat-gw0: tests/conftest.py), what the tests
# write beside the checkout is named per process and left out of the lint and the tarball (.ansible-lint,
# galaxy.yml build_ignore), and sanity lints a tarball built from the checkout. .ci/run stops whatever a killed
# run leaves in any run folder. The sanity and compat outputs go to $KUEUEOPS_RUN_DIR-sanity.log and
# $KUEUEOPS_RUN_DIR-compat.log and are printed after the main run's.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
VPY=${VPY:-$ROOT/.venv/bin/python}
RUN_DIR=${KUEUEOPS_RUN_DIR:-$ROOT/.run}
WORKERS=${TEST_WORKERS:-2}
SANITY_LOG=$RUN_DIR-sanity.log
COMPAT_LOG=$RUN_DIR-compat.log
start=$(date +%s)
# The machine's CPU over the run (/proc/stat: user nice system, in clock ticks), to say how busy the cores were.
cpu_ticks() { awk '/^cpu /{print $2 + $3 + $4}' /proc/stat; }
cpu_start=$(cpu_ticks)

hack/sanity.sh > "$SANITY_LOG" 2>&1 &
sanity_pid=$!
KUEUEOPS_RUN_DIR=$RUN_DIR-compat TEST_WORKERS=${COMPAT_WORKERS:-1} hack/compat.sh > "$COMPAT_LOG" 2>&1 &
compat_pid=$!
# Stop the other two jobs (their pytest stops its clusters on SIGTERM) when this script is interrupted.
trap 'kill "$sanity_pid" "$compat_pid" 2>/dev/null; wait 2>/dev/null' INT TERM

# --no-loadscope-reorder: whole files in the order tests/conftest.py gives them (slowest first), not pytest-xdist's
# default of the files with the most tests first (which started the two slowest files, of 2 and 3 tests, last).
"$VPY" -m pytest tests/unit tests/integration tests/reliability -q -p no:cacheprovider -n "$WORKERS" \
    --dist loadfile --no-loadscope-reorder --durations=40 --durations-min=20
main_rc=$?
echo "test.sh: main run exit $main_rc at $(( $(date +%s) - start )) s; waiting for sanity and the compat job"

wait "$sanity_pid"
sanity_rc=$?
wait "$compat_pid"
compat_rc=$?
trap - INT TERM
echo "================================ sanity and lint ($SANITY_LOG) ================================"
cat "$SANITY_LOG"
echo "================================ compat job ($COMPAT_LOG) ================================"
cat "$COMPAT_LOG"
wall=$(( $(date +%s) - start ))
cpu=$(( ($(cpu_ticks) - cpu_start) / $(getconf CLK_TCK) ))
echo "test.sh: main run exit $main_rc, sanity exit $sanity_rc, compat job exit $compat_rc;" \
     "$wall s in all, $cpu CPU s on $(nproc) cores ($(( 100 * cpu / (wall * $(nproc) + 1) ))% busy)"
[ "$main_rc" = 0 ] && [ "$sanity_rc" = 0 ] && [ "$compat_rc" = 0 ]
