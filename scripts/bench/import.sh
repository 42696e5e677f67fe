#!/usr/bin/env bash
# Import benchmark (printed, not asserted; issue 20's target: all 250
# KernelBench tasks of levels 1-3 with references and sm_90 torch.compile
# baselines in <= 20 minutes on the 16-core H200 machine): one `kbsynth
# import` of KernelBench's level folders, timed wall to wall, then
#   - the funnel per level (ok / failed, failures by reason) and the compiled
#     baselines built, from the import report;
#   - every failure with its reason and message;
#   - the wall time, the tasks per minute, and the ratio to the target;
#   - the machine's load every 10 s in $OUT/load.log (load average, busy
#     cores, GPU use and memory) and its means.
# The problem files are read where they are (never copied into the tree).
# Environment:
#   KB_BUILD        build directory with tools/kbsynth (default $ROOT/build)
#   KB_KERNELBENCH  KernelBench with level1..3/ (default $ROOT/../shared/kernelbench)
#   KB_LEVELS       which levels (default "level1 level2 level3")
#   KB_COMPILED     the baselines' device: cuda (default when nvidia-smi lists
#                   a GPU), cpu, or none
#   KB_IMPORT_ARGS  more kbsynth import flags (e.g. "-j 8 --baseline-jobs 4")
#   KB_TIME_LIMIT   seconds after which kbsynth is asked to stop (SIGTERM: it
#                   ends cleanly and writes its report); run again with the
#                   same OUT and KB_IMPORT_ARGS=--skip-existing to go on, and
#                   add up the walls
#   OUT             where the bundles and logs go (default: a temporary folder,
#                   removed; set it to keep them or to resume with
#                   KB_IMPORT_ARGS=--skip-existing)
# Usage: bash scripts/bench/import.sh
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
B="${KB_BUILD:-$ROOT/build}"
KBSYNTH="$B/tools/kbsynth/kbsynth"
KB="${KB_KERNELBENCH:-$ROOT/../shared/kernelbench}"
LEVELS="${KB_LEVELS:-level1 level2 level3}"
if [ -z "${KB_COMPILED:-}" ]; then
  if nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then KB_COMPILED=cuda; else KB_COMPILED=none; fi
fi
TARGET_S=1200
[ -x "$KBSYNTH" ] || { echo "bench/import: $KBSYNTH is not built" >&2; exit 2; }
src=()
for l in $LEVELS; do
  [ -d "$KB/$l" ] || { echo "bench/import: no $KB/$l (set KB_KERNELBENCH)" >&2; exit 2; }
  src+=("$KB/$l")
done
kept=1
if [ -n "${OUT:-}" ]; then mkdir -p "$OUT"; else kept=0; OUT="$(mktemp -d)"; trap 'rm -rf "$OUT"' EXIT; fi
R="$OUT/tasks/import-report.json"
n=$(find "${src[@]}" -maxdepth 1 -name '*.py' | wc -l)
echo "bench/import: $n problem files ($LEVELS) from $KB, compiled baselines: $KB_COMPILED, $(nproc) cores"
s=$(date +%s.%N)
# shellcheck disable=SC2086
# stderr lines stamped with the seconds since the start (where capture ends
# and the baselines begin).
limit=()
[ -n "${KB_TIME_LIMIT:-}" ] && limit=(timeout -s TERM -k 60 "$KB_TIME_LIMIT")
# Every 10 s: the load average and busy cores (/proc/stat), the GPU's use and
# memory -- whether the import is bound by the CPU or the GPU.
(
  prev=($(head -1 /proc/stat))
  while sleep 10; do
    cur=($(head -1 /proc/stat))
    idle=$(( (cur[4] + cur[5]) - (prev[4] + prev[5]) ))
    total=0
    for i in 1 2 3 4 5 6 7 8; do total=$(( total + cur[i] - prev[i] )); done
    gpu=$(nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader 2>/dev/null | head -1)
    printf '%s load %s busy_cores %s gpu %s\n' "$(( $(date +%s) - ${s%.*} ))" "$(cut -d' ' -f1 /proc/loadavg)" \
      "$(awk -v t="$total" -v i="$idle" -v n="$(nproc)" 'BEGIN { printf "%.1f", (t > 0 ? (t - i) / t * n : 0) }')" "${gpu:--}"
    prev=("${cur[@]}")
  done >"$OUT/load.log"
) &
sampler=$!
"${limit[@]}" "$KBSYNTH" import "${src[@]}" -o "$OUT/tasks" --compiled "$KB_COMPILED" ${KB_IMPORT_ARGS:-} \
  >"$OUT/import.jsonl" 2> >(while IFS= read -r l; do printf '%s %s\n' "$(( $(date +%s) - ${s%.*} ))" "$l"; done >"$OUT/import.log")
rc=$?
kill "$sampler" 2>/dev/null
sleep 1  # the stamping loop drains
e=$(date +%s.%N)
[ -f "$R" ] || { echo "bench/import: no report (exit $rc)"; tail -5 "$OUT/import.log"; exit 1; }
wall=$(awk -v a="$s" -v b="$e" 'BEGIN { printf "%.1f", b - a }')
echo "funnel per level (ok / failed, by reason):"
jq -r '.summary.by_level | to_entries[] |
  "  \(.key): \(.value.ok) ok, \(.value.failed) failed \(.value.by_reason | to_entries | map("\(.key)=\(.value)") | join(" "))"' "$R"
jq -r '"  all: \(.summary.ok) of \(.summary.total) ok, \(.summary.failed) failed, \(.summary.interrupted) not done"' "$R"
jq -r 'if .summary.compiled then "  compiled (\(.summary.compiled.device)): \(.summary.compiled.ok) built or cached, \(.summary.compiled.failed) failed, \(.summary.compiled.not_done // 0) not built (stopped)" else empty end' "$R"
# The baselines build as captures end: the first starts with the first
# capture, and what is left after the last capture is the tail.
b0=$(awk '/kbsynth: baselines for/ { print $1; exit }' "$OUT/import.log")
c=$(awk '/kbsynth: capture ended after/ { print $1; exit }' "$OUT/import.log")
[ -s "$OUT/load.log" ] && awk '{ l += $3; b += $5; n++ } END { if (n) printf "machine: mean load %.1f, mean busy cores %.1f of %d (%s, every 10 s)\n", l / n, b / n, cores, f }' \
  cores="$(nproc)" f="$OUT/load.log" "$OUT/load.log"
[ -n "$c" ] && echo "phases: capture ${c} s wall; baselines from ${b0:--} s to the end, $(awk -v w="$wall" -v c="$c" 'BEGIN { printf "%.0f", w - c }') s of them after capture ended"
jq -r '[.tasks[] | select(.status == "ok" and .seconds != null) | .seconds] | "capture: \(length) tasks, \(add // 0 | floor) s of worker time, \(if length > 0 then (add / length * 10 | floor) / 10 else 0 end) s mean"' "$R"
jq -r '[.tasks[] | .compiled? | select(. != null and .status == "ok")] |
  "baselines: \(length) built, \(map(.seconds) | add // 0 | floor) s of process time (" +
  ([.[] | .phases // {} | to_entries[]] | group_by(.key) | map("\(.[0].key) \(map(.value) | add | floor) s") | join(", ")) + ")"' "$R"
echo "failures:"
jq -r '.tasks[] | select(.status != "ok") | "  \(.id // .dir): \(.reason // .status): \(.message // "" | .[0:160])"' "$R"
jq -r '.tasks[] | select(.compiled.status? == "failed") | "  \(.id) baseline: \(.compiled.reason // "?"): \(.compiled.message // "" | .[0:160])"' "$R"
total=$(jq .summary.total "$R")
awk -v w="$wall" -v n="$total" -v t="$TARGET_S" 'BEGIN {
  printf "wall %.1f s for %d tasks (%.1f tasks/min); target %d s: %.2fx of it\n", w, n, (w > 0 ? n * 60 / w : 0), t, w / t }'
if [ $kept = 1 ]; then echo "(kbsynth exit $rc; log $OUT/import.log)"; else echo "(kbsynth exit $rc; set OUT to keep the bundles and the log)"; fi
