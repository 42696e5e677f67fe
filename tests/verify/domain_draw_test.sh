#!/usr/bin/env bash
# Inputs beyond the generator (docs/threat-model.md): testdata/tasks/few_values
# draws x from {0, 1, 2} only. A solution that looks y up at those three
# values is right on every draw of get_inputs and must end `incorrect` on a
# domain draw, which the report names; an honest one ends `ok` on all of
# them; with "inputs_exhaustive": true the task has generator draws only.
# Usage: domain_draw_test.sh KBCHECK WORKDIR
set -uo pipefail
KBCHECK="$1"; WORK="$2"
ROOT="${KB_SOURCE_ROOT:?}"
TASK="$ROOT/testdata/tasks/few_values"
SOLS="$ROOT/tests/verify/domain_draw"
rm -rf "$WORK"; mkdir -p "$WORK"
CACHE="$WORK/cache"
fails=0
check() {  # check NAME CONDITION...
  local name="$1"; shift
  if "$@"; then echo "ok   $name"; else echo "FAIL $name"; fails=$((fails + 1)); fi
}
run() {  # run EXPECTED_RC OUT -- ARGS... ; writes stdout to OUT, stderr to OUT.err
  local want="$1" out="$2"; shift 3
  "$KBCHECK" "$@" >"$out" 2>"$out.err"
  local rc=$?
  if [ "$rc" != "$want" ]; then
    echo "  exit $rc, expected $want: $KBCHECK $*"; head -c 600 "$out.err"; head -c 600 "$out"; return 1
  fi
}
jqt() { jq -e "$2" "$1" >/dev/null || { echo "  $(jq -c '{status, message, seeds: [.stages.verify.report.seeds[]? | {seed, draw, status}]}' "$1")"; return 1; }; }

check "lookup table: incorrect" run 1 "$WORK/lookup.json" -- "$TASK" "$SOLS/lookup_table" --device cpu --cache-dir "$CACHE" --json -
check "the failure names the domain draw" jqt "$WORK/lookup.json" '.status == "incorrect"
  and (.message | test("domain draw of seed 0 \\(inputs rescaled/broadened beyond get_inputs\\)"))'
check "right on get_inputs' draws, wrong on the domain's" jqt "$WORK/lookup.json" '.stages.verify.report.seeds as $s
  | ($s | length) == 6
  and ([$s[] | select(.draw == "generator") | .status] == ["ok", "ok", "ok"])
  and ([$s[] | select(.draw == "domain") | .status] == ["incorrect", "incorrect", "incorrect"])
  and ([$s[] | .generator_seed] == [0, 1, 2, 0, 1, 2])'

check "honest: ok" run 0 "$WORK/honest.json" -- "$TASK" "$SOLS/honest" --device cpu --cache-dir "$CACHE" --json -
check "ok on every draw" jqt "$WORK/honest.json" '.status == "ok" and (.stages.verify.report.seeds as $s
  | ($s | length) == 6 and ([$s[] | select(.draw == "domain")] | length) == 3 and all($s[]; .status == "ok"))'

# A task that declares its generator exhaustive has generator draws only.
cp -r "$TASK" "$WORK/exhaustive"
jq '.inputs_exhaustive = true' "$TASK/task.json" >"$WORK/exhaustive/task.json"
check "exhaustive: the lookup table passes" run 0 "$WORK/exhaustive.json" -- verify "$WORK/exhaustive" "$SOLS/lookup_table" --device cpu --cache-dir "$CACHE" --json -
check "exhaustive: generator draws only" jqt "$WORK/exhaustive.json" '.status == "ok"
  and ([.stages.verify.report.seeds[].draw] == ["generator", "generator", "generator"])'

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
