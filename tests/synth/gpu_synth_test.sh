#!/usr/bin/env bash
# GPU suite: a small synthesis run through every filter on CUDA (the timing
# stage measures instead of skipping). Skips (exit 77) without a GPU. The
# 300-task acceptance run is scripts/gpu/validate-synth.sh.
# Usage: gpu_synth_test.sh KBSYNTH WORKDIR
set -uo pipefail
KBSYNTH="$1"; WORK="$2"
PY="${KB_PYTHON:-/opt/kb-venv/bin/python3}"
[ -x "$PY" ] || PY=python3
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "no GPU: skipped"; exit 77
fi
if ! "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  echo "torch sees no CUDA device: skipped"; exit 77
fi
ROOT="${KB_SOURCE_ROOT:?}"
rm -rf "$WORK"; mkdir -p "$WORK"
"$KBSYNTH" compose -n 24 --seed 1 -o "$WORK/run" >/dev/null || exit 1
"$KBSYNTH" filter "$WORK/run" --device cuda --reference "$ROOT/testdata/tasks-src" || exit 1
M="$WORK/run/manifest.jsonl"
fail=0
expect() {  # expect DESCRIPTION COMMAND...
  local what="$1"; shift
  if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fail=1; fi
}
count() { jq -s "[.[] | select($1)] | length" "$M"; }
timed=$(count '.filter.stages.timing.eager_ms != null')
skipped=$(count '.filter.stages.timing.status == "skipped"')
echo "timed $timed tasks, $skipped skipped"
expect "the timing stage measured tasks on CUDA ($timed)" test "$timed" -gt 0
expect "no task skipped the timing stage on CUDA" test "$skipped" -eq 0
# What was kept: every kept task passed all seven stages, its eager time is
# within the default window [1, 100] ms, its similarity to the references is
# at most 0.9, and torch.compile matched it; every other task was dropped at
# a named stage for a named reason. Nothing is left unfiltered.
kept=$(count '.status == "kept"')
dropped=$(count '.status == "dropped"')
expect "some tasks were kept ($kept)" test "$kept" -gt 0
expect "every task was kept or dropped (kept $kept + dropped $dropped, compose failures aside)" \
  test "$((kept + dropped))" -eq "$(count '.status != "compose_failed"')"
expect "every kept task passed all seven stages" test "$(count '.status == "kept" and ([.filter.stages[
    "parse", "eager", "deterministic", "nondegenerate", "decontam", "timing", "compile"] | .status] != [
    "pass", "pass", "pass", "pass", "pass", "pass", "pass"])')" -eq 0
expect "every kept task's eager time is within [1, 100] ms" \
  test "$(count '.status == "kept" and (.filter.stages.timing.eager_ms < 1 or .filter.stages.timing.eager_ms > 100)')" -eq 0
expect "every kept task is at most 0.9 similar to the references" \
  test "$(count '.status == "kept" and (.filter.stages.decontam.similarity > 0.9)')" -eq 0
expect "no kept task has a drop reason" test "$(count '.status == "kept" and .filter.reason != null')" -eq 0
expect "every dropped task names its stage and reason" \
  test "$(count '.status == "dropped" and (.filter.dropped_at == null or .filter.reason == null)')" -eq 0
expect "a dropped task failed the stage it was dropped at" \
  test "$(count '.status == "dropped" and .filter.dropped_at != "bundle" and
                 (.filter.stages[.filter.dropped_at].status // "") == "pass"')" -eq 0
expect "stats counts the same kept tasks" \
  test "$("$KBSYNTH" stats "$WORK/run" --json 2>/dev/null | jq '.status.kept // 0')" -eq "$kept"
exit $fail
