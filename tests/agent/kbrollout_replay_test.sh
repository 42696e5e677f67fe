#!/usr/bin/env bash
# kbrollout --replay end to end on CPU tasks: the flag's checks (exclusive
# with --policy / --model / --local-model, DIR must be a folder of
# solutions: exit 2, one line), then `kbrollout eval --replay` over two
# tasks, one with a correct solution and one without (it gives up), read by
# `kbreward report`, and `kbrollout run --replay` with variants v0/v1 picked
# by the sample.
# Usage: kbrollout_replay_test.sh KBROLLOUT KBREWARD SOURCE_ROOT
set -uo pipefail
KBROLLOUT=$1 KBREWARD=$2 SRC=$3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

mkdir -p "$T/tasks" "$T/sol/linear_relu"
cp -r "$SRC/testdata/tasks/linear_relu" "$SRC/testdata/tasks/scale_and_rowsum" "$T/tasks/"
cp "$SRC/testdata/solutions-cpu/ok_linear_relu/forward.cpp" "$T/sol/linear_relu/"
echo "solutions for the replay test" > "$T/sol/README.md"

# Usage errors: exit 2, one line, before any work.
usage() {  # WANT_GREP ARGS...
  local want=$1; shift
  "$KBROLLOUT" eval --tasks "$T/tasks" --out "$T/refused" "$@" 2> "$T/err"
  local rc=$?
  [ $rc -eq 2 ] || fail "$*: exit $rc, want 2: $(cat "$T/err")"
  [ "$(wc -l < "$T/err")" -eq 1 ] || fail "$*: not one line: $(cat "$T/err")"
  grep -q "$want" "$T/err" || fail "$*: message: $(cat "$T/err")"
}
usage "^kbrollout: --policy excludes --replay" --replay "$T/sol" --policy http://127.0.0.1:9/v1
usage "^kbrollout: --model excludes --replay" --replay "$T/sol" --model m
usage "excludes --replay" --replay "$T/sol" --local-model "$T/sol"
usage "^kbrollout: --replay: no such file or folder: $T/missing" --replay "$T/missing"
usage "^kbrollout: --replay: $T/sol/README.md is not a folder" --replay "$T/sol/README.md"
mkdir -p "$T/badsol/linear_relu" && echo x > "$T/badsol/linear_relu/notes.txt"
usage "^kbrollout: --replay: $T/badsol/linear_relu holds neither forward.cpp nor v0/forward.cpp" --replay "$T/badsol"
[ ! -e "$T/refused/trajectories.jsonl" ] || fail "a refused run wrote trajectories"

# eval: linear_relu replayed (ok, verified on the CPU), scale_and_rowsum has
# no solution (one finish, the skeleton fails at run time: -1).
"$KBROLLOUT" eval --tasks "$T/tasks" --replay "$T/sol" --out "$T/ev" --device cpu --no-progress 2> "$T/ev.err"
rc=$?
[ $rc -eq 0 ] || fail "eval --replay: exit $rc: $(cat "$T/ev.err")"
grep -q "^kbrollout: --replay $T/sol: a solution for 1 of 2 task(s); the others finish at once" "$T/ev.err" \
  || fail "eval --replay stderr: $(cat "$T/ev.err")"
jq -e -s 'length == 2 and all(.[]; .policy.kind == "replay" and .policy.model == "replay:sol" and .mode == "eval")' \
  "$T/ev/trajectories.jsonl" > /dev/null || fail "policy recorded: $(jq -c .policy "$T/ev/trajectories.jsonl")"
jq -e -s '.[] | select(.task_id == "testdata/linear_relu")
  | [.turns[].response.tool_calls[].name] == ["write_file", "compile", "verify", "finish"]
  and .turns[2].observations[0].detail.status == "ok" and .final.stages.verify.status == "ok"
  and .status == "ok" and .reward.correct == true' "$T/ev/trajectories.jsonl" > /dev/null \
  || fail "linear_relu replay: $(jq -c 'select(.task_id == "testdata/linear_relu") | {status, reward}' "$T/ev/trajectories.jsonl")"
jq -e -s '.[] | select(.task_id == "testdata/scale_and_rowsum")
  | [.turns[].response.tool_calls[].name] == ["finish"] and .status == "runtime_error" and .reward.value == -1' \
  "$T/ev/trajectories.jsonl" > /dev/null || fail "no-solution task"
jq -e -s 'length == 2 and (map({(.task_id): .status}) | add) == {"testdata/linear_relu": "ok",
  "testdata/scale_and_rowsum": "runtime_error"}' "$T/ev/results.jsonl" > /dev/null \
  || fail "results.jsonl: $(cat "$T/ev/results.jsonl")"
"$KBREWARD" report --format json "$T/ev/results.jsonl" > "$T/report.json" 2> "$T/report.err" \
  || fail "kbreward report: $(cat "$T/report.err")"
jq -e '.overall.results == 2 and .overall.status_counts.ok == 1 and .overall.status_counts.runtime_error == 1' \
  "$T/report.json" > /dev/null || fail "report: $(jq -c .overall "$T/report.json")"

# run: variants by sample (v0 correct, v1 wrong), two at once; scored with
# the correctness scheme, so the CPU task's correct replay gets 1.
mkdir -p "$T/var/linear_relu/v0" "$T/var/linear_relu/v1"
cp "$SRC/testdata/solutions-cpu/ok_linear_relu/forward.cpp" "$T/var/linear_relu/v0/"
cp "$SRC/testdata/solutions-cpu/wrong_result/forward.cpp" "$T/var/linear_relu/v1/"
"$KBROLLOUT" run --tasks "$SRC/testdata/tasks/linear_relu" --replay "$T/var" --samples 2 -j 2 --device cpu \
  --scheme correctness -o "$T/run.jsonl" --no-progress 2> "$T/run.err"
rc=$?
[ $rc -eq 0 ] || fail "run --replay: exit $rc: $(cat "$T/run.err")"
jq -e -s '(map({(.sample | tostring): [.status, .reward.value]}) | add) == {"0": ["ok", 1], "1": ["incorrect", -1]}' \
  "$T/run.jsonl" > /dev/null || fail "variants: $(jq -c '{sample, status, r: .reward.value}' "$T/run.jsonl")"
echo "ok"
