#!/usr/bin/env bash
# One agent iteration on a changed candidate, as kbrollout does it: static
# check (when this machine has the Clang checker), then kbprof = build
# (cold: the candidate changed) + verify (the task's correctness seeds) +
# profile with cached baselines. Prints each stage's wall time, the total,
# and the ratio to the paper's workspace (about 45 s per iteration: compile
# 20-22 s, verify 4.4-4.7 s, profile 19-21 s, measured on an H200).
#
#   bash scripts/bench/iteration.sh TASK SOLUTION_DIR [ITERATIONS=3]
#
# Environment: KBPROF, KBCHECK (default: build/tools/...); KB_BENCH_ARGS: more
# kbprof flags for every run (e.g. --no-compile for a task without a compiled baseline);
# KB_BENCH_KEEP: a directory that gets every iteration's kbprof report (prof-N.json).
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
TASK="$1"; SOL="$2"; N="${3:-3}"
KBPROF="${KBPROF:-$ROOT/build/tools/kbprof/kbprof}"
KBCHECK="${KBCHECK:-$ROOT/build/tools/kbcheck/kbcheck}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
now() { date +%s.%N; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a - b }'; }
add() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a + b }'; }
have_static=0
"$KBCHECK" static --help >/dev/null 2>&1 && have_static=1

# Baselines into the cache first (not part of an iteration).
"$KBPROF" "$TASK" ${KB_BENCH_ARGS:-} -q --json "$WORK/baseline.json" || { echo "baseline run failed"; jq -c '{status,message}' "$WORK/baseline.json"; exit 1; }
echo "baselines: eager $(jq .timings.eager.median_ms "$WORK/baseline.json") ms, compile $(jq .timings.compile.median_ms "$WORK/baseline.json") ms ($(jq -r .gpu "$WORK/baseline.json"))"

t=$(now); nvidia-smi --query-gpu=compute_cap --format=csv,noheader >/dev/null 2>&1
echo "(nvidia-smi query for the architecture, which kbprof makes unless --arch is given: $(sub "$(now)" "$t") s)"
printf '%-4s %9s %9s %9s %9s %9s %9s  %s\n' iter static_s build_s worker_s ref_s kbprof_s total_s status
totals=()
for i in $(seq 1 "$N"); do
  cand="$WORK/cand-$i"
  cp -r "$SOL" "$cand"
  echo "// iteration $i $(date +%s%N)" >>"$cand/forward.cpp"
  t0=$(now)
  static_s=0
  if [ $have_static = 1 ]; then
    "$KBCHECK" static "$TASK" "$cand" -q >/dev/null 2>&1
    static_s=$(sub "$(now)" "$t0")
  fi
  t1=$(now)
  "$KBPROF" "$TASK" "$cand" ${KB_BENCH_ARGS:-} -q --json "$WORK/prof-$i.json"
  prof_s=$(sub "$(now)" "$t1")
  [ -n "${KB_BENCH_KEEP:-}" ] && mkdir -p "$KB_BENCH_KEEP" && cp "$WORK/prof-$i.json" "$KB_BENCH_KEEP/"
  total=$(add "$static_s" "$prof_s")
  totals+=("$total")
  printf '%-4s %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f  %s (%.2fx vs compile)\n' "$i" "$static_s" \
    "$(jq '.build.seconds' "$WORK/prof-$i.json")" "$(jq .worker_seconds "$WORK/prof-$i.json")" \
    "$(jq .reference_seconds "$WORK/prof-$i.json")" "$prof_s" "$total" "$(jq -r .status "$WORK/prof-$i.json")" \
    "$(jq '.speedup_vs_compile // 0' "$WORK/prof-$i.json")"
  jq -r '"     candidate worker (started beside the build): waited for the library " + (.worker.phases.waited_seconds // 0 | tostring | .[0:5])
    + " s, outside main " + (.worker.phases.outside_main_seconds // 0 | tostring | .[0:5])
    + " s, start-up " + (.worker.phases.startup_seconds // 0 | tostring | .[0:5])
    + " s (inputs " + (.worker.phases.prefetch_seconds // 0 | tostring | .[0:5])
    + " s), seeds " + (.worker.phases.seeds_seconds // 0 | tostring | .[0:5])
    + " s, timing " + (.worker.phases.timing_seconds // 0 | tostring | .[0:5])
    + " s (" + (.rounds | tostring) + " rounds, " + .stop + "); reference: ready in "
    + (.reference_phases.prepare_seconds // 0 | tostring | .[0:5]) + " s beside it, check "
    + (.reference_phases.check_seconds // 0 | tostring | .[0:5]) + " s; timed calls " + (.timed_calls | tostring)
    + ", inputs " + (.input_method // "?") + ", checked " + (.checked_calls | length | tostring) + " of " + (.timed_calls | tostring)
    + ", kbprof clock: null calls up to " + (.parent_clock.null_max_ms // 0 | tostring | .[0:6]) + " ms, "
    + (.parent_clock.bounded_calls // 0 | tostring) + " calls bounded, message: " + .message
    + "\n     kbprof: before the workers " + (.prepare_seconds // 0 | tostring | .[0:5]) + " s, after the verdict "
    + (.after_seconds // 0 | tostring | .[0:5]) + " s; start-up parts " + ((.worker.phases.startup // {}) | tostring)
    + "\n     timed loop parts " + ((.worker.phases.timing // {}) | tostring)
    + "\n     reference check parts " + ((.reference_phases // {}) | tostring)' "$WORK/prof-$i.json"
done
med=$(printf '%s\n' "${totals[@]}" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}')
echo "median iteration: $med s on this machine ($(jq -r .gpu "$WORK/baseline.json"), $(nproc) cores); the paper's workspace: ~45 s (its figure, on an H200); ratio $(awk -v m="$med" 'BEGIN { printf "%.1f", 45 / m }')x"
[ $have_static = 1 ] || echo "(no Clang checker on this machine: static check not included; scripts/bench/static.sh measures it on the development machine)"
