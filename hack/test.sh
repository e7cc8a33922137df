#!/usr/bin/env bash
# The suites of `make test` after sanity and lint: the main pytest run and the ansible-core 2.16 compat job
# (hack/compat.sh), at the same time.
#
#   hack/test.sh                 # both, then the compat job's output; exit 1 if either failed
#   TEST_WORKERS=2 COMPAT_WORKERS=1 hack/test.sh
#
# Why at the same time: on the 2-core machine CI runs on, the suite is CPU-bound, but not every second (waits on
# controllers, helm --wait, timeouts a drill waits out). Run one after the other, the two took 38 min 38 s and
# 10 min 24 s; the compat job's two workers also left cores idle in its last minutes. Here the compat job runs
# with COMPAT_WORKERS pytest workers (1 by default) beside the main run's TEST_WORKERS (2): three clusters share
# the cores. README.md ("CI time") has the measured figures.
#
# Each job has its own run folders: the main run $KUEUEOPS_RUN_DIR-gw0, -gw1; the compat job
# $KUEUEOPS_RUN_DIR-compat-gw0 (tests/conftest.py). .ci/run stops whatever a killed run leaves in any of them.
# The compat job's output goes to $KUEUEOPS_RUN_DIR-compat.log and is printed after the main run's.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
VPY=${VPY:-$ROOT/.venv/bin/python}
RUN_DIR=${KUEUEOPS_RUN_DIR:-$ROOT/.run}
WORKERS=${TEST_WORKERS:-2}
COMPAT_LOG=$RUN_DIR-compat.log

# The compat venv is built first (pip, from PyPI; reused when its requirements are unchanged), so that a
# network failure shows before anything starts.
hack/compat.sh --venv-only || exit 1

KUEUEOPS_RUN_DIR=$RUN_DIR-compat TEST_WORKERS=${COMPAT_WORKERS:-1} hack/compat.sh > "$COMPAT_LOG" 2>&1 &
compat_pid=$!
# Stop the compat job (and its clusters: its pytest stops them on SIGTERM) when this script is interrupted.
trap 'kill "$compat_pid" 2>/dev/null; wait "$compat_pid" 2>/dev/null' INT TERM

main_start=$(date +%s)
"$VPY" -m pytest tests/unit tests/integration tests/reliability -q -p no:cacheprovider -n "$WORKERS" \
    --dist loadfile --durations=40 --durations-min=20
main_rc=$?
echo "test.sh: main run exit $main_rc in $(( $(date +%s) - main_start )) s; waiting for the compat job"

wait "$compat_pid"
compat_rc=$?
trap - INT TERM
echo "================================ compat job ($COMPAT_LOG) ================================"
cat "$COMPAT_LOG"
echo "test.sh: main run exit $main_rc, compat job exit $compat_rc, $(( $(date +%s) - main_start )) s in all"
[ "$main_rc" = 0 ] && [ "$compat_rc" = 0 ]
