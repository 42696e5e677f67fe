#!/usr/bin/env bash
# Issue 20, item 3 on the GPU machine: the hand-written KernelBench reference
# solutions (testdata/solutions-kernelbench/levelN/<stem>/) against their
# tasks, imported fresh from the KernelBench problem files.
#   1. import   exactly the tasks that have a solution, in ONE kbsynth import
#               call (-j capture workers): the problem files are linked into
#               $OUT/kb-src/levelN/ (nothing copied into the repository), so the
#               ids are kernelbench/levelN/<stem>; --compiled cuda only when
#               KB_COMPILED=1 (an AOTInductor baseline costs ~75 s a task)
#   2. per task kbcheck TASK SOLUTION --json $OUT/check-<id>.json (build + verify)
#               kbprof  TASK SOLUTION --json $OUT/prof-<id>.json (--no-compile
#               unless KB_COMPILED=1)
#      one failing task does not stop the others
#   3. a table: id, kbcheck status, kbprof status, speed-up vs eager (and vs
#      torch.compile when timed), from the JSON reports
#   4. kbreward report over the check/prof reports -> $OUT/report.{md,html}
#      (scheme milestone with KB_COMPILED=1, else correctness: untimed
#      rewards, but pass rate, > eager, eager geomean and fast_p)
#   5. the same solutions through the agent loop (KB_ROLLOUT=0 skips it):
#      kbrollout eval --replay (write_file, compile, verify, profile, finish;
#      the replay folder is a flat copy, DIR/<stem>/, as --replay names
#      solutions; the tasks copied to $OUT/eval-tasks) -> $OUT/eval/results.jsonl -> kbreward report ->
#      $OUT/eval-report.{md,html}: the paper's table from the RL path itself;
#      $OUT/eval-failures.txt: each rollout that did not end ok, with every
#      stage's status and summary
# Environment:
#   KB_BUILD        build directory with tools/ (default $ROOT/build-gpu)
#   KB_KERNELBENCH  KernelBench checkout with level1..3/ (default $ROOT/../shared/kernelbench)
#   OUT             where reports and logs go (default $ROOT/gpu-out/kernelbench-solutions)
#   KB_TASKS        where the task bundles go (default $OUT/kb-tasks); with
#                   KB_SKIP_EXISTING=1 bundles already captured there are kept
#   KB_COMPILED     1: build and time the torch.compile baselines too
#   KB_IMPORT_JOBS  capture workers (default: kbsynth's own choice)
#   KB_ONLY         space-separated ids or stems to restrict the run to (default: all)
#   KB_BASELINE_CACHE  kbprof's baseline cache (default $OUT/.baselines)
#   KB_ROLLOUT      0: skip step 5 (kbrollout eval with the replay policy)
#   KB_EVAL_JOBS    step 5's rollouts at once (default 4: builds overlap, each
#                   verify and profile has the GPU to itself)
#   KB_EVAL_RESUME  1: keep step 5's finished rollouts from an earlier run with
#                   the same OUT and do only the rest (kbrollout's resume)
#   KB_DIRECT       0: skip steps 2-4 (kbcheck and kbprof per task, their
#                   report): step 5 does the same work through the agent loop
# Exit status: 0 when every task imported and both kbcheck and kbprof ended ok.
# Usage: bash scripts/gpu/validate-kernelbench-solutions.sh
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
B="${KB_BUILD:-$ROOT/build-gpu}"
case "$B" in /*) ;; *) B="$ROOT/$B" ;; esac
KB="${KB_KERNELBENCH:-$ROOT/../shared/kernelbench}"
OUT="${OUT:-$ROOT/gpu-out/kernelbench-solutions}"
T="${KB_TASKS:-$OUT/kb-tasks}"
SOLS="$ROOT/testdata/solutions-kernelbench"
title="KernelBench reference solutions (testdata/solutions-kernelbench)"
export PATH="$ROOT/.carry/bin:$PATH"
export KB_BASELINE_CACHE="${KB_BASELINE_CACHE:-$OUT/.baselines}"
mkdir -p "$OUT" "$T"
OUT="$(cd "$OUT" && pwd)"
T="$(cd "$T" && pwd)"

for tool in kbsynth/kbsynth kbcheck/kbcheck kbprof/kbprof kbreward/kbreward; do
  [ -x "$B/tools/$tool" ] || { echo "validate-kernelbench-solutions: $B/tools/$tool is not built" >&2; exit 2; }
done
[ -d "$KB/level1" ] || { echo "validate-kernelbench-solutions: no KernelBench at $KB (set KB_KERNELBENCH)" >&2; exit 2; }

# The tasks: every testdata/solutions-kernelbench/levelN/<stem>/forward.cpp.
ids=()
for f in "$SOLS"/level*/*/forward.cpp; do
  [ -f "$f" ] || continue
  d="$(dirname "$f")"
  id="kernelbench/$(basename "$(dirname "$d")")/$(basename "$d")"
  if [ -n "${KB_ONLY:-}" ]; then
    keep=0
    for o in $KB_ONLY; do [ "$o" = "$id" ] || [ "$o" = "$(basename "$d")" ] && keep=1; done
    [ $keep = 1 ] || continue
  fi
  ids+=("$id")
done
[ ${#ids[@]} -gt 0 ] || { echo "validate-kernelbench-solutions: no solutions found" >&2; exit 2; }

# JSON field reader: jq when there is one (scripts/gpu/carry.sh puts it in
# .carry/bin), else python3. Prints "-" for a missing file or null.
field() {  # FILE KEY
  [ -s "$1" ] || { echo "-"; return; }
  if command -v jq >/dev/null 2>&1; then
    jq -r --arg k "$2" '.[$k] // "-" | if type == "number" then (. * 100 | round / 100 | tostring) else tostring end' \
      "$1" 2>/dev/null || echo "-"
  else
    python3 - "$1" "$2" <<'EOF' 2>/dev/null || echo "-"
import json, sys
v = json.load(open(sys.argv[1])).get(sys.argv[2])
print("-" if v is None else (f"{v:.2f}" if isinstance(v, (int, float)) and not isinstance(v, bool) else v))
EOF
  fi
}

rc=0
echo "== import $(date +%T): ${#ids[@]} tasks from $KB into $T"
src="$OUT/kb-src"
rm -rf "$src"
for id in "${ids[@]}"; do
  rel="${id#kernelbench/}"  # levelN/<stem>
  py="$KB/$rel.py"
  if [ ! -f "$py" ]; then
    echo "  $id: no problem file $py"
    rc=1
    continue
  fi
  mkdir -p "$src/$(dirname "$rel")"
  ln -s "$(cd "$(dirname "$py")" && pwd)/$(basename "$py")" "$src/$rel.py"
done
import_args=(import "$src" -o "$T" --report "$OUT/import-report.json")
[ -n "${KB_IMPORT_JOBS:-}" ] && import_args+=(-j "$KB_IMPORT_JOBS")
[ "${KB_COMPILED:-0}" = 1 ] && import_args+=(--compiled cuda)
[ "${KB_SKIP_EXISTING:-0}" = 1 ] && import_args+=(--skip-existing)
"$B/tools/kbsynth/kbsynth" "${import_args[@]}" >"$OUT/import.jsonl" 2>"$OUT/import.log" || rc=1
grep -E "imported|level[0-9]:|failed" "$OUT/import.log" | tail -8

prof_args=()
[ "${KB_COMPILED:-0}" = 1 ] || prof_args+=(--no-compile)
declare -a lines
direct=()
[ "${KB_DIRECT:-1}" = 1 ] && direct=("${ids[@]}")
for id in "${direct[@]}"; do
  name="${id//\//_}"  # kernelbench_level1_19_ReLU
  task="$T/$id"
  sol="$SOLS/${id#kernelbench/}"
  check="$OUT/check-$name.json" prof="$OUT/prof-$name.json"
  rm -f "$check" "$prof"
  echo "== $id $(date +%T)"
  if [ ! -f "$task/task.json" ]; then
    echo "  not imported (see $OUT/import.log)"
    lines+=("$(printf '%-68s %-16s %-16s %9s %9s' "$id" import_failed - - -)")
    rc=1
    continue
  fi
  # Level-1 inputs reach gigabytes: room for them in the worker and time for
  # five seeds (the defaults are 4 GiB and 60 s).
  "$B/tools/kbcheck/kbcheck" "$task" "$sol" --timeout 900 --memory-limit 0 --scratch-limit 4096 \
    --json "$check" >"$OUT/check-$name.log" 2>&1 || rc=1
  cs="$(field "$check" status)"
  if [ "$cs" = ok ]; then
    "$B/tools/kbprof/kbprof" "$task" "$sol" "${prof_args[@]}" --timeout 900 --json "$prof" \
      >"$OUT/prof-$name.log" 2>&1 || rc=1
    ps="$(field "$prof" status)"
  else
    ps="skipped"
  fi
  [ "$cs" = ok ] && [ "$ps" = ok ] || rc=1
  line="$(printf '%-68s %-16s %-16s %9s %9s' "$id" "$cs" "$ps" "$(field "$prof" speedup_vs_eager)" \
    "$(field "$prof" speedup_vs_compile)")"
  echo "$line"
  lines+=("$line")
done

if [ ${#direct[@]} -gt 0 ]; then
  echo
  echo "== results ($(date +%T))"
  printf '%-68s %-16s %-16s %9s %9s\n' task kbcheck kbprof x_eager x_compile
  printf '%s\n' "${lines[@]}"
fi

# This run's reports only (an earlier run's, e.g. of other KB_ONLY tasks, stay out).
reports=()
for id in "${direct[@]}"; do
  for kind in check prof; do
    f="$OUT/$kind-${id//\//_}.json"
    [ -s "$f" ] && reports+=("$f")
  done
done
if [ ${#reports[@]} -gt 0 ]; then
  R="$B/tools/kbreward/kbreward"
  # Without compile timings the milestone scheme excludes every task; the
  # correctness scheme still gives pass, > eager, the eager geomean and fast_p.
  scheme=()
  [ "${KB_COMPILED:-0}" = 1 ] || scheme=(--scheme correctness)
  "$R" report "${reports[@]}" "${scheme[@]}" --title "$title" || rc=1
  "$R" report "${reports[@]}" "${scheme[@]}" --title "$title" --format markdown -o "$OUT/report.md" || rc=1
  "$R" report "${reports[@]}" "${scheme[@]}" --title "$title" --format html -o "$OUT/report.html" || rc=1
  echo "report: $OUT/report.md, $OUT/report.html"
fi

if [ "${KB_ROLLOUT:-1}" = 1 ] && [ -x "$B/tools/kbrollout/kbrollout" ]; then
  echo
  echo "== kbrollout eval --replay $(date +%T): the solutions through the agent loop"
  # The tasks evaluated are exactly those with a solution: copies, since
  # KB_TASKS may hold a whole imported KernelBench (a task without a solution
  # would still count in the report).
  replay="$OUT/replay" tasks="$OUT/eval-tasks"
  # With KB_EVAL_RESUME=1 the rollouts already in $OUT/eval are kept and
  # kbrollout goes on with the rest (an eval longer than one device call);
  # the workspaces left are those of interrupted rollouts, run again.
  rm -rf "$replay" "$tasks" "$OUT/eval.work"
  [ "${KB_EVAL_RESUME:-0}" = 1 ] || rm -rf "$OUT/eval" "$OUT/eval.log"
  mkdir -p "$replay"
  for id in "${ids[@]}"; do
    [ -f "$T/$id/task.json" ] || continue
    cp -r "$SOLS/${id#kernelbench/}" "$replay/$(basename "$id")"
    mkdir -p "$tasks/$(dirname "$id")"
    cp -r "$T/$id" "$tasks/$id"
  done
  scheme_name=correctness
  [ "${KB_COMPILED:-0}" = 1 ] && scheme_name=milestone
  "$B/tools/kbrollout/kbrollout" eval --tasks "$tasks/kernelbench" --replay "$replay" --out "$OUT/eval" \
    --scheme "$scheme_name" --device cuda -j "${KB_EVAL_JOBS:-4}" --no-progress 2>>"$OUT/eval.log" || rc=1
  tail -3 "$OUT/eval.log"
  if [ -s "$OUT/eval/results.jsonl" ]; then
    R="$B/tools/kbreward/kbreward"
    "$R" report "$OUT/eval/results.jsonl" --scheme "$scheme_name" --title "$title (kbrollout eval --replay)" || rc=1
    "$R" report "$OUT/eval/results.jsonl" --scheme "$scheme_name" --format markdown -o "$OUT/eval-report.md" || rc=1
    "$R" report "$OUT/eval/results.jsonl" --scheme "$scheme_name" --format html -o "$OUT/eval-report.html" || rc=1
    echo "agent-loop report: $OUT/eval-report.md, $OUT/eval-report.html"
    # Why each rollout that did not end ok ended so: every stage's status and
    # summary from its last verdict (a small file to fetch, where the
    # trajectories are megabytes). After a resume the file holds a task's
    # earlier, redone rollout too: its last one counts, as in results.jsonl.
    jq -rs 'reduce .[] as $t ({}; .[$t.task_id] = $t) | .[] | select(.status != "ok") | "\(.task_id): \(.status)",
           (.final.stages // {} | to_entries[] | "  \(.key): \(.value.status // "-"): \(.value.summary // .value.message // "")")' \
      "$OUT/eval/trajectories.jsonl" >"$OUT/eval-failures.txt" 2>/dev/null
    [ -s "$OUT/eval-failures.txt" ] && { echo "rollouts that did not end ok ($OUT/eval-failures.txt):"; cat "$OUT/eval-failures.txt"; }
  else
    echo "  no results.jsonl (see $OUT/eval.log)"
    rc=1
  fi
fi
exit $rc
