#!/usr/bin/env bash
# The soak (issue 38): `kbcheck verify --device cpu` over every CPU fault
# case of testdata/solutions-cpu/expected.json, round after round, N runs in
# all. Prints, not asserts: each status's count against the expected one,
# exit codes that disagree with the status, the time, and what was left
# behind (worker folders in TMPDIR, kbcheck-worker processes, shared memory
# segments, this shell's open descriptors). A benchmark, not a test.
#
#   bash scripts/bench/soak.sh [RUNS=1000]
#
# Environment: KBCHECK (default build/tools/kbcheck/kbcheck); SOAK_TIMEOUT,
# kbcheck's --timeout (default 10 s: the infinite-loop and sleeping cases end
# `timeout` sooner than at the default 60 s; every other case takes ~1 s).
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
RUNS="${1:-1000}"
KBCHECK="${KBCHECK:-$ROOT/build/tools/kbcheck/kbcheck}"
T="$ROOT/testdata"
EXPECTED="$T/solutions-cpu/expected.json"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
export TMPDIR="$WORK/tmp"; mkdir -p "$TMPDIR"
mapfile -t NAMES < <(jq -r '.solutions | keys[]' "$EXPECTED")
rc_of() {  # the exit code docs/cli.md gives a status
  case "$1" in ok) echo 0 ;; infra_error) echo 3 ;; *) echo 1 ;; esac
}
fds_before=$(ls /proc/$$/fd | wc -l)
shm_before=$(ls /dev/shm 2>/dev/null | wc -l)
declare -A got_count want_count
mismatch=0; bad_rc=0; done_runs=0
start=$(date +%s.%N)
while [ "$done_runs" -lt "$RUNS" ]; do
  for name in "${NAMES[@]}"; do
    [ "$done_runs" -ge "$RUNS" ] && break
    task=$(jq -r ".solutions[\"$name\"].task" "$EXPECTED")
    want=$(jq -r ".solutions[\"$name\"].status" "$EXPECTED")
    "$KBCHECK" verify "$T/tasks/$task" "$T/solutions-cpu/$name" --device cpu --timeout "${SOAK_TIMEOUT:-10}" -q --json "$WORK/r.json" 2>"$WORK/err"
    rc=$?
    got=$(jq -r '.status // "none"' "$WORK/r.json" 2>/dev/null || echo none)
    got_count[$got]=$(( ${got_count[$got]:-0} + 1 ))
    want_count[$want]=$(( ${want_count[$want]:-0} + 1 ))
    if [ "$got" != "$want" ]; then
      mismatch=$((mismatch + 1))
      echo "run $done_runs: $name: $got, expected $want: $(tail -1 "$WORK/err")"
    fi
    [ "$rc" = "$(rc_of "$got")" ] || { bad_rc=$((bad_rc + 1)); echo "run $done_runs: $name: exit $rc for $got"; }
    done_runs=$((done_runs + 1))
    [ $((done_runs % 100)) -eq 0 ] && echo "soak: $done_runs of $RUNS runs, $(awk -v a="$(date +%s.%N)" -v b="$start" 'BEGIN{printf "%.0f", a-b}') s" >&2
  done
done
secs=$(awk -v a="$(date +%s.%N)" -v b="$start" 'BEGIN{printf "%.0f", a-b}')
echo "soak: $done_runs kbcheck verify runs over ${#NAMES[@]} CPU cases in $secs s (--timeout ${SOAK_TIMEOUT:-10})"
for s in $(printf '%s\n' "${!want_count[@]}" "${!got_count[@]}" | sort -u); do
  printf '  %-14s %5d expected %5d got\n' "$s" "${want_count[$s]:-0}" "${got_count[$s]:-0}"
done
echo "  statuses unlike expected.json: $mismatch; exit codes unlike the status: $bad_rc"
echo "  left behind: $(find "$TMPDIR" -mindepth 1 -maxdepth 1 | wc -l) entries in TMPDIR," \
     "$(pgrep -c -f "$(dirname "$KBCHECK")/kbcheck-worker" || true) kbcheck-worker processes of this build," \
     "$(( $(ls /dev/shm 2>/dev/null | wc -l) - shm_before )) new /dev/shm entries," \
     "$(( $(ls /proc/$$/fd | wc -l) - fds_before )) more descriptors in this shell"
