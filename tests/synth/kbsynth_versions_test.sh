#!/usr/bin/env bash
# KernelBench versions and degenerate tasks, end to end on the CPU
# (docs/kbsynth.md "KernelBench versions" and "Degenerate tasks"):
#   scripts/kernelbench-extract.sh takes one version of a KernelBench git
#   repository (made here from testdata/kernelbench-versions, our own tiny
#   problems) with its manifest; kbsynth import puts the version in the ids,
#   flags the degenerate tasks in task.json and its summary; kbreward
#   --tasks keeps their candidates out of rewards, under the contracts named.
# Usage: kbsynth_versions_test.sh KBSYNTH KBREWARD WORKDIR
set -uo pipefail
KBSYNTH="$1"; KBREWARD="$2"; WORK="$3"
ROOT="${KB_SOURCE_ROOT:?}"
FIX="$ROOT/testdata/kernelbench-versions"
EXTRACT="$ROOT/scripts/kernelbench-extract.sh"
source "$(dirname "${BASH_SOURCE[0]}")/../support/expect.sh"

rm -rf "$WORK"; mkdir -p "$WORK"

# 1. A KernelBench-shaped repository: branch v0 holds the fixtures, the
# main branch later enlarges one problem's shapes (as KernelBench v0.1 did).
REPO="$WORK/KernelBench"
mkdir -p "$REPO/KernelBench"
cp -r "$FIX/level1" "$FIX/level2" "$REPO/KernelBench/"
g() { git -C "$REPO" -c user.name=test -c user.email=test@example.com "$@"; }
g init -q -b main && g add -A && g commit -q -m "problems" && g branch v0
sed -i 's/^dim = 64$/dim = 4096/' "$REPO/KernelBench/level1/1_ReLU.py"
g commit -q -am "enlarge the shapes"
V0_COMMIT=$(g rev-parse v0)

OUT="$WORK/kernelbench-v0"
"$EXTRACT" "$REPO" v0 "$OUT" 2>"$WORK/extract.err"
rc=$?
expect "extract exits 0 (rc=$rc)" test $rc -eq 0
M="$OUT/kernelbench-version.json"
expect "the manifest names version v0 and its commit" \
  test "$(jq -r '[.format, .version, .ref, .commit] | join(" ")' "$M")" = "kb-kernelbench-version v0 v0 $V0_COMMIT"
expect "the manifest counts the problems" test "$(jq -c .problems "$M")" = '{"level1":2,"level2":2}'
expect "the v0 shapes were extracted, not the later ones" grep -q '^dim = 64$' "$OUT/level1/1_ReLU.py"
expect "a second extraction into a full folder is refused (exit 2)" test "$(exit_code "$EXTRACT" "$REPO" v0 "$OUT")" = 2
expect "--force replaces it" test "$(exit_code "$EXTRACT" "$REPO" v0 "$OUT" --force)" = 0
expect "an unknown ref is exit 2" test "$(exit_code "$EXTRACT" "$REPO" v7 "$WORK/none")" = 2
expect "a version that is no id part is exit 2" \
  test "$(exit_code "$EXTRACT" "$REPO" v0 "$WORK/bad" --version "a/b")" = 2

# 2. Import: the version in every id, the degenerate tasks flagged.
TASKS="$WORK/tasks"
"$KBSYNTH" import "$OUT" -o "$TASKS" -j 1 >"$WORK/import.jsonl" 2>"$WORK/import.err"
rc=$?
expect "import exits 0 (rc=$rc)" test $rc -eq 0
R="$TASKS/import-report.json"
expect "4 of 4 imported" test "$(jq -c '[.summary.total, .summary.ok]' "$R")" = '[4,4]'
expect "ids carry the version" \
  test "$(jq -r '.id' "$WORK/import.jsonl" | sort | tr '\n' ' ')" = "kernelbench-v0/level1/1_ReLU kernelbench-v0/level1/2_Softmax_Wide kernelbench-v0/level2/1_Linear_Mean_Softmax kernelbench-v0/level2/2_Linear_GroupNorm_Mean "
expect "provenance names the version and the commit" \
  test "$(jq -r '.provenance | "\(.version) \(.commit)"' "$TASKS/kernelbench-v0/level1/1_ReLU/task.json")" = "v0 $V0_COMMIT"
T="$TASKS/kernelbench-v0"
expect "a fair task: degenerate is null" test "$(jq -c .degenerate "$T/level1/1_ReLU/task.json")" = null
expect "softmax of 8192: all zeros passes under the paper contract only" \
  test "$(jq -c '[.degenerate.contracts, .degenerate.checks.zeros_pass]' "$T/level1/2_Softmax_Wide/task.json")" = '[["paper"],["paper"]]'
expect "softmax over one element: input-independent under both" \
  test "$(jq -c '[.degenerate.contracts, .degenerate.max_abs_diff_seeds]' "$T/level2/1_Linear_Mean_Softmax/task.json")" = '[["strict","paper"],0]'
expect "mean of a GroupNorm: all zeros passes under both" \
  test "$(jq -c '.degenerate.checks.zeros_pass' "$T/level2/2_Linear_GroupNorm_Mean/task.json")" = '["strict","paper"]'
expect "the report's summary lists the 3 degenerate tasks" test "$(jq '.summary.degenerate | length' "$R")" = 3
expect "stderr lists them" grep -q "kbsynth: 3 degenerate" "$WORK/import.err"
expect "the result line carries the flag" \
  test "$(jq -r 'select(.id | endswith("1_Linear_Mean_Softmax")) | .degenerate.contracts | join(",")' "$WORK/import.jsonl")" = "strict,paper"
expect "kbsynth info shows the flag" \
  test "$("$KBSYNTH" info "$T/level2/1_Linear_Mean_Softmax" "$T/level1/1_ReLU" | jq -s -c 'map(.degenerate.contracts)')" = '[["strict","paper"],null]'
expect "a --kernelbench-version that contradicts the manifest is exit 2" \
  test "$(exit_code "$KBSYNTH" import "$OUT" -o "$WORK/t2" --kernelbench-version v0.1)" = 2
expect "--kernelbench-version for a single file is exit 2" \
  test "$(exit_code "$KBSYNTH" import "$FIX/level1/1_ReLU.py" -o "$WORK/t3" --kernelbench-version v0)" = 2
"$KBSYNTH" import "$OUT" -o "$TASKS" -j 1 --skip-existing >"$WORK/again.jsonl" 2>"$WORK/again.err"
expect "a resumed import (--skip-existing) still lists the degenerate tasks" \
  test "$(jq '.summary.degenerate | length' "$R")" = 3

# 3. kbreward --tasks: no reward on a degenerate task under its contracts.
ok_rec() {  # task, hash, contract: a correct candidate 2x faster than both baselines
  printf '{"task_id": "kernelbench-v0/%s", "solution_hash": "%s", "status": "ok", "precision": {"contract": {"name": "%s"}}, "timings": {"eager": {"median_ms": 2}, "compile": {"median_ms": 2}, "candidate": {"median_ms": 1}}}\n' "$1" "$2" "$3"
}
{
  ok_rec level1/1_ReLU h1 strict
  ok_rec level1/2_Softmax_Wide h2 strict
  ok_rec level1/2_Softmax_Wide h3 paper
  ok_rec level2/1_Linear_Mean_Softmax h4 strict
  printf '{"task_id": "kernelbench-v0/level2/2_Linear_GroupNorm_Mean", "solution_hash": "h5", "status": "incorrect"}\n'
} >"$WORK/results.jsonl"
"$KBREWARD" score "$WORK/results.jsonl" --tasks "$TASKS" >"$WORK/scores.jsonl" 2>"$WORK/score.err"
rc=$?
expect "kbreward score exits 0 (rc=$rc)" test $rc -eq 0
expect "rewards: fair 3; paper-only task 3 under strict, none under paper; none on the others" \
  test "$(jq -r '"\(.reward // "null"):\(.excluded // "-")"' "$WORK/scores.jsonl" | tr '\n' ' ')" = "3:- 3:- null:degenerate_task null:degenerate_task null:degenerate_task "
expect "score records carry the flag" \
  test "$(jq -s -c '[.[] | .degenerate_task.contracts]' "$WORK/scores.jsonl")" = '[null,["paper"],["paper"],["strict","paper"],["strict","paper"]]'
"$KBREWARD" report "$WORK/scores.jsonl" --json "$WORK/report.json" 2>"$WORK/report.err"
# One result per task, the last candidate: 2_Softmax_Wide's is the paper one.
expect "kbreward report of the scores excludes the same tasks without --tasks" \
  test "$(jq -c '[.overall.results, .overall.excluded]' "$WORK/report.json")" = '[4,3]'
expect "--tasks that is no folder is exit 2" \
  test "$(exit_code "$KBREWARD" score "$WORK/results.jsonl" --tasks "$WORK/none")" = 2

echo "$fails failure(s)"
test "$fails" -eq 0
