#!/usr/bin/env bash
# The README's main job (scripts/main-job.sh) on the CPU, checked: the eight
# bundled KernelBench-format problems imported, the replay policy's three
# solutions verified through the agent loop and the five without one failed,
# kbreward's table per level under the correctness scheme (and the HTML
# page), and a GRPO step whose group rewards differ, so it learns (advantage
# spread and gradient not zero: issue 18's "the training step learns nothing").
# Usage: main_job_test.sh WORKDIR
set -uo pipefail
WORK="$1"
ROOT="${KB_SOURCE_ROOT:?}"
fails=0
expect() {  # expect DESCRIPTION COMMAND...
  local what="$1"; shift
  if "$@"; then echo "ok   - $what"; else echo "FAIL - $what"; fails=$((fails + 1)); fi
}
rm -rf "$WORK"
bash "$ROOT/scripts/main-job.sh" "$WORK" >"$WORK.log" 2>&1
rc=$?
expect "main-job.sh exits 0 (rc=$rc; log $WORK.log)" test $rc -eq 0
R="$WORK/report.json"
expect "import: 8 of 8" test "$(jq '.summary.ok' "$WORK/tasks/import-report.json" 2>/dev/null)" = 8
expect "report: correctness scheme" test "$(jq -r '.scheme.name' "$R" 2>/dev/null)" = correctness
expect "report: level 1 passes 2 of 6, level 2 1 of 2, all 3 of 8" \
  test "$(jq -c '[.groups[] | [.group, .correct, .results]] + [[.overall.group, .overall.correct, .overall.results]]' "$R" 2>/dev/null)" \
  = '[["level 1",2,6],["level 2",1,2],["all",3,8]]'
expect "eval: the replayed solutions went through write_file, compile, verify, finish" \
  test "$(jq -s -c '[.[] | select(.task_id | endswith("1_ReLU_Scale")) | [.turns[].response.tool_calls[]?.name] | unique] | .[0]' \
          "$WORK/eval/trajectories.jsonl" 2>/dev/null)" = '["compile","finish","verify","write_file"]'
expect "report: the HTML page" grep -q "correctness only (untimed)" "$WORK/report.html"
M="$WORK/rl/policy/metrics.jsonl"
expect "rl: two samples, rewards 1 and -1" \
  test "$(jq -s -c 'sort_by(.rollout_id) | map(.reward.value)' "$WORK/rl/trajectories.jsonl" 2>/dev/null)" = "[1,-1]"
expect "rl: the GRPO step learns (advantage spread and gradient not zero)" \
  jq -e -s 'map(select(.step == 1)) | .[-1] | .adv_std > 0.1 and .grad_norm > 0 and .loss != 0' "$M"
echo "$fails failed"
[ "$fails" -eq 0 ]
