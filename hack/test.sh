#!/usr/bin/env bash
# Everything `make test` (and so CI) runs, three jobs at the same time:
#   1. sanity and lint (hack/sanity.sh: ansible-test sanity, ansible-lint production, flake8, antsibull lints);
#   2. the ansible-core 2.16 compat job (hack/compat.sh, its venv built or reused first), COMPAT_WORKERS workers,
#      then the tail run: the main run's files that wait the most, on TAIL_WORKERS worker (0: none, all in 3.);
#   3. the main pytest run: unit, integration and reliability tests (but the tail run's), TEST_WORKERS workers.
#
#   hack/test.sh                 # all three; the main run's output, then the others'; exit 1 if any failed
#   TEST_WORKERS=2 COMPAT_WORKERS=1 TAIL_WORKERS=1 hack/test.sh
#
# Why at the same time: on the 2-core machine CI runs on, the suite is CPU-bound but not every second (waits on
# controllers, helm --wait, the timeouts a drill waits out, pip downloading). One after the other, they took about
# 3 min, 38 min 38 s and 10 min 24 s (51 min 51 s with the venv); sanity alone kept about one core busy. README.md
# ("CI time") has the measured figures.
#
# Why a tail run: a main-run worker runs one file at a time, and most files wait on their cluster for part of it,
# so once the compat job ends (about 15 of 37 min) the two workers left the cores about a quarter idle. The tail
# run is a third stream from then on. Its files are chosen before the run from this machine's figures
# (tests/conftest.py tail_files: durations, CPU per file, the compat job's seconds, which this script records):
# those with the fewest CPU seconds for their wall time, about a third of the whole less the compat job.
#
# Nothing is shared between the jobs: each pytest worker has its own run folder and cluster (the main run
# $KUEUEOPS_RUN_DIR-gw0, -gw1; the compat job $KUEUEOPS_RUN_DIR-compat-gw0; the tail run
# $KUEUEOPS_RUN_DIR-tail-gw0: tests/conftest.py), what the tests write beside the checkout is named per process and
# left out of the lint and the tarball (.ansible-lint, galaxy.yml build_ignore), and sanity lints a tarball built
# from the checkout. .ci/run stops whatever a killed run leaves in any run folder. The sanity, compat and tail
# outputs go to $KUEUEOPS_RUN_DIR-sanity.log, -compat.log and -tail.log and are printed after the main run's.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
VPY=${VPY:-$ROOT/.venv/bin/python}
RUN_DIR=${KUEUEOPS_RUN_DIR:-$ROOT/.run}
WORKERS=${TEST_WORKERS:-2}
TAIL_WORKERS=${TAIL_WORKERS:-1}
SANITY_LOG=$RUN_DIR-sanity.log
COMPAT_LOG=$RUN_DIR-compat.log
TAIL_LOG=$RUN_DIR-tail.log
STATUS=$(mktemp -d "${TMPDIR:-/tmp}/kueueops-test.XXXXXX")
start=$(date +%s)
# The machine's CPU over the run (/proc/stat: user nice system, in clock ticks), to say how busy the cores were.
cpu_ticks() { awk '/^cpu /{print $2 + $3 + $4}' /proc/stat; }
cpu_start=$(cpu_ticks)

# --no-loadscope-reorder: whole files in the order tests/conftest.py gives them (slowest first), not pytest-xdist's
# default of the files with the most tests first (which started the two slowest files, of 2 and 3 tests, last).
PYTEST=(-q -p no:cacheprovider --dist loadfile --no-loadscope-reorder --durations=40 --durations-min=20)
FILES=(tests/integration/test_*.py tests/reliability/test_*.py)
TAIL=()
if [ "$WORKERS" -gt 0 ] && [ "$TAIL_WORKERS" -gt 0 ]; then
    mapfile -t TAIL < <("$VPY" -c 'import sys; from tests import conftest; print("\n".join(conftest.tail_files(sys.argv[1:])))' \
        "${FILES[@]}" | grep .)
fi
MAIN=(tests/unit)
for file in "${FILES[@]}"; do
    [[ " ${TAIL[*]} " == *" $file "* ]] || MAIN+=("$file")
done
echo "test.sh: the main run: tests/unit and $(( ${#MAIN[@]} - 1 )) files on $WORKERS workers;" \
     "the tail run, after the compat job: ${#TAIL[@]} files on $TAIL_WORKERS worker (${TAIL[*]:-none})"

hack/sanity.sh > "$SANITY_LOG" 2>&1 &
sanity_pid=$!
compat_then_tail() {
    local child='' began
    trap '[ -n "$child" ] && kill "$child" 2>/dev/null; wait; exit 143' INT TERM
    began=$(date +%s)
    KUEUEOPS_RUN_DIR=$RUN_DIR-compat TEST_WORKERS=${COMPAT_WORKERS:-1} hack/compat.sh > "$COMPAT_LOG" 2>&1 &
    child=$!
    wait "$child"
    echo $? > "$STATUS/compat"
    if [ "$(cat "$STATUS/compat")" = 0 ]; then
        "$VPY" -c 'import sys; from tests import conftest; conftest.record_job("compat", float(sys.argv[1]))' \
            "$(( $(date +%s) - began ))"
    fi
    [ ${#TAIL[@]} -gt 0 ] || return 0
    echo "test.sh: the tail run starts at $(( $(date +%s) - start )) s" > "$TAIL_LOG"
    KUEUEOPS_RUN_DIR=$RUN_DIR-tail "$VPY" -m pytest "${TAIL[@]}" "${PYTEST[@]}" -n "$TAIL_WORKERS" >> "$TAIL_LOG" 2>&1 &
    child=$!
    wait "$child"
    echo $? > "$STATUS/tail"
    echo "test.sh: the tail run ended at $(( $(date +%s) - start )) s" >> "$TAIL_LOG"
}
compat_then_tail &
jobs_pid=$!
# Stop the other jobs (their pytest stops its clusters on SIGTERM) when this script is interrupted.
trap 'kill "$sanity_pid" "$jobs_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$STATUS"' INT TERM

"$VPY" -m pytest "${MAIN[@]}" "${PYTEST[@]}" -n "$WORKERS"
main_rc=$?
echo "test.sh: main run exit $main_rc at $(( $(date +%s) - start )) s; waiting for sanity, the compat job and the tail run"

wait "$sanity_pid"
sanity_rc=$?
wait "$jobs_pid"
trap - INT TERM
compat_rc=$(cat "$STATUS/compat" 2>/dev/null || echo 1)
tail_rc=0
[ ${#TAIL[@]} -gt 0 ] && tail_rc=$(cat "$STATUS/tail" 2>/dev/null || echo 1)
rm -rf "$STATUS"
echo "================================ sanity and lint ($SANITY_LOG) ================================"
cat "$SANITY_LOG"
echo "================================ compat job ($COMPAT_LOG) ================================"
cat "$COMPAT_LOG"
if [ ${#TAIL[@]} -gt 0 ]; then
    echo "================================ tail run ($TAIL_LOG) ================================"
    cat "$TAIL_LOG"
fi
wall=$(( $(date +%s) - start ))
cpu=$(( ($(cpu_ticks) - cpu_start) / $(getconf CLK_TCK) ))
echo "test.sh: main run exit $main_rc, sanity exit $sanity_rc, compat job exit $compat_rc, tail run exit $tail_rc;" \
     "$wall s in all, $cpu CPU s on $(nproc) cores ($(( 100 * cpu / (wall * $(nproc) + 1) ))% busy)"
[ "$main_rc" = 0 ] && [ "$sanity_rc" = 0 ] && [ "$compat_rc" = 0 ] && [ "$tail_rc" = 0 ]
