#!/usr/bin/env bash
# kbrollout's command line end to end: a scripted policy server on loopback,
# `kbrollout run` (with resume) and `kbrollout eval`, the outputs checked
# with jq, and `kbreward report` reading the eval results.
# Usage: kbrollout_cli_test.sh KBROLLOUT KB_FAKE_LLM KBREWARD SOURCE_ROOT
set -uo pipefail
KBROLLOUT=$1 FAKE=$2 KBREWARD=$3 SRC=$4
T=$(mktemp -d)
server_pid=""
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

start_server() {  # SCRIPT
  rm -f "$T/port"
  "$FAKE" "$1" "$T/port" > "$T/server.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.05; done
  [ -s "$T/port" ] || fail "server did not start"
  PORT=$(cat "$T/port")
}
stop_server() { kill "$server_pid"; wait "$server_pid" 2>/dev/null; server_pid=""; }

# Usage errors exit 2 with a one-line reason.
"$KBROLLOUT" run --tasks "$T/none" --out "$T/x.jsonl" --policy http://127.0.0.1:9/v1 --model m 2> "$T/err"
[ $? -eq 2 ] || fail "missing task dir should exit 2"
grep -q "no such task directory" "$T/err" || fail "missing task dir message: $(cat "$T/err")"
env -u OPENAI_BASE_URL -u KB_POLICY_URL "$KBROLLOUT" run --tasks "$SRC/testdata/agent/tasks" --out "$T/x.jsonl" --model m 2> "$T/err"
[ $? -eq 2 ] || fail "missing endpoint should exit 2"
"$KBROLLOUT" --help | grep -q "kbrollout eval" || fail "--help"

# run: a correct solution written, compiled, finished (verified ok; no reward
# until kbprof exists); two samples, the second finishing on the skeleton.
GOOD=$(jq -Rs . < "$SRC/testdata/solutions-cpu/ok_linear_relu/forward.cpp")
cat > "$T/script.json" <<JSON
[
 {"tool_calls": [{"name": "write_file", "arguments": {"path": "solution/forward.cpp", "content": $GOOD}}]},
 {"tool_calls": [{"name": "compile", "arguments": {}}]},
 {"tool_calls": [{"name": "finish", "arguments": {"summary": "done"}}]},
 {"tool_calls": [{"name": "finish", "arguments": {}}]}
]
JSON
start_server "$T/script.json"
"$KBROLLOUT" run --tasks "$SRC/testdata/tasks/linear_relu" --out "$T/traj.jsonl" --samples 2 -j 1 \
  --policy "http://127.0.0.1:$PORT/v1" --model scripted --max-turns 10 --backoff-s 0.01 2> "$T/run.err"
rc=$?
stop_server
[ $rc -eq 0 ] || fail "run exited $rc: $(cat "$T/run.err")"
[ "$(wc -l < "$T/traj.jsonl")" -eq 2 ] || fail "expected 2 trajectories"
jq -e -s 'map(.rollout_id) | sort == ["testdata/linear_relu#0", "testdata/linear_relu#1"]' "$T/traj.jsonl" > /dev/null || fail "rollout ids"
jq -e -s '.[0] | .end.reason == "finish" and .end.turns == 3 and .mode == "train"
  and .limits.max_turns == 10 and .turns[1].observations[0].detail.status == "ok"
  and .final.stages.compile.status == "ok" and .final.stages.verify.status == "ok" and .status == "ok"
  and .reward.value == null and .reward.excluded == "profile_not_available"' "$T/traj.jsonl" > /dev/null \
  || fail "first trajectory fields"
grep -q "2/2 done" "$T/run.err" || fail "progress line: $(cat "$T/run.err")"

# Resume: nothing redone, no request sent (the server is gone: a request would fail).
"$KBROLLOUT" run --tasks "$SRC/testdata/tasks/linear_relu" --out "$T/traj.jsonl" --samples 2 \
  --policy "http://127.0.0.1:$PORT/v1" --model scripted --retries 1 2> "$T/resume.err" || fail "resume: $(cat "$T/resume.err")"
grep -q "2/2 done (2 resumed)" "$T/resume.err" || fail "resume progress: $(cat "$T/resume.err")"
[ "$(wc -l < "$T/traj.jsonl")" -eq 2 ] || fail "resume added lines"

# eval: 200 turns by default; results.jsonl for kbreward.
cat > "$T/eval.json" <<'JSON'
[{"tool_calls": [{"name": "write_file", "arguments": {"path": "solution/forward.cpp", "content": "int x = ;\n"}}]},
 {"tool_calls": [{"name": "finish", "arguments": {}}]}]
JSON
start_server "$T/eval.json"
"$KBROLLOUT" eval --tasks "$SRC/testdata/tasks/linear_relu" --policy "http://127.0.0.1:$PORT/v1" --model scripted \
  --out "$T/eval" --no-progress 2> "$T/eval.err"
rc=$?
stop_server
[ $rc -eq 0 ] || fail "eval exited $rc: $(cat "$T/eval.err")"
jq -e '.mode == "eval" and .limits.max_turns == 200 and .status == "compile_error" and .reward.value == -1' \
  "$T/eval/trajectories.jsonl" > /dev/null || fail "eval trajectory"
jq -e '.tool == "kbrollout" and .task_id == "testdata/linear_relu" and .status == "compile_error"
  and .reward == -1 and .end_reason == "finish"' "$T/eval/results.jsonl" > /dev/null || fail "results.jsonl"
[ -f "$T/eval/timeline.json" ] || fail "timeline.json"
"$KBREWARD" report "$T/eval/results.jsonl" > "$T/report.txt" 2>&1 || fail "kbreward report: $(cat "$T/report.txt")"
grep -q "1" "$T/report.txt" || fail "report"

# Parallel rollouts against one server: a per-conversation script gives each
# its own replay (what scripts/gpu-rollout-validate.sh uses on the GPU).
cat > "$T/par.json" <<JSON
{"per_conversation": [
 {"tool_calls": [{"name": "write_file", "arguments": {"path": "solution/forward.cpp", "content": $GOOD}}]},
 {"tool_calls": [{"name": "compile", "arguments": {}}]},
 {"tool_calls": [{"name": "finish", "arguments": {}}]}]}
JSON
start_server "$T/par.json"
"$KBROLLOUT" eval --tasks "$SRC/testdata/tasks/linear_relu" --samples 4 -j 4 --task-device cpu \
  --policy "http://127.0.0.1:$PORT/v1" --model scripted --out "$T/par" --no-progress 2> "$T/par.err"
rc=$?
stop_server
[ $rc -eq 0 ] || fail "parallel eval exited $rc: $(cat "$T/par.err")"
jq -e -s 'length == 4 and all(.[]; .status == "ok" and .end.reason == "finish" and .end.turns == 3)' \
  "$T/par/trajectories.jsonl" > /dev/null || fail "parallel rollouts: $(jq -c '{status, end}' "$T/par/trajectories.jsonl")"
echo "ok"
