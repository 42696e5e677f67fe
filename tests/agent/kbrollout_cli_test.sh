#!/usr/bin/env bash
# kbrollout's command line end to end: a scripted policy server on loopback,
# `kbrollout run` (with resume) and `kbrollout eval`, the outputs checked
# with jq, and `kbreward report` reading the eval results; then issue 18's
# cases: no policy server (infra_error, exit 3), scheme names (exit 2), two
# runs on one output (the second refused), a corrupt output refused on
# resume, and per-sample seeds.
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
"$KBROLLOUT" --version | grep -qE '^kbrollout [0-9]+\.[0-9]+' || fail "--version"  # "kbrollout VERSION" (docs/cli.md)

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

# --scheme correctness: the same correct CPU solution is rewarded without
# timings (1), the skeleton's failure gets -1: a GRPO group that differs.
start_server "$T/script.json"
"$KBROLLOUT" run --tasks "$SRC/testdata/tasks/linear_relu" --out "$T/corr.jsonl" --samples 2 -j 1 --scheme correctness \
  --policy "http://127.0.0.1:$PORT/v1" --model scripted --max-turns 10 --backoff-s 0.01 2> "$T/corr.err"
rc=$?
stop_server
[ $rc -eq 0 ] || fail "correctness run exited $rc: $(cat "$T/corr.err")"
jq -e -s 'sort_by(.rollout_id) | .[0].status == "ok" and .[0].reward.value == 1 and .[0].reward.correct == true
  and .[0].reward.excluded == null and .[0].reward.scheme.name == "correctness"
  and .[1].status != "ok" and .[1].reward.value == -1' "$T/corr.jsonl" > /dev/null \
  || fail "correctness rewards: $(jq -c '{id: .rollout_id, status, reward}' "$T/corr.jsonl")"

# eval: 200 turns by default; results.jsonl for kbreward.
cat > "$T/eval.json" <<'JSON'
[{"tool_calls": [{"name": "write_file", "arguments": {"path": "solution/forward.cpp", "content": "#include <kb/solution.h>\nKB_FORWARD(ctx) { int x = ; }\n"}}]},
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
"$KBREWARD" report --format json "$T/eval/results.jsonl" > "$T/report.json" 2> "$T/report.err" \
  || fail "kbreward report: $(cat "$T/report.err")"
jq -e '.overall.results == 1 and .overall.scored == 1 and .overall.excluded == 0 and .overall.correct == 0
  and .overall.mean_reward == -1 and .overall.status_counts.compile_error == 1
  and (.tasks | length) == 1 and .tasks[0].task_id == "testdata/linear_relu" and .tasks[0].status == "compile_error"
  and .tasks[0].reward == -1' "$T/report.json" > /dev/null || fail "report: $(cat "$T/report.json")"

# Parallel rollouts against one server: a per-conversation script gives each
# its own replay (what scripts/gpu/validate-rollout.sh uses on the GPU).
cat > "$T/par.json" <<JSON
{"per_conversation": [
 {"tool_calls": [{"name": "write_file", "arguments": {"path": "solution/forward.cpp", "content": $GOOD}}]},
 {"tool_calls": [{"name": "compile", "arguments": {}}]},
 {"tool_calls": [{"name": "finish", "arguments": {}}]}]}
JSON
start_server "$T/par.json"
"$KBROLLOUT" eval --tasks "$SRC/testdata/tasks/linear_relu" --samples 4 -j 4 --device cpu \
  --policy "http://127.0.0.1:$PORT/v1" --model scripted --out "$T/par" --no-progress 2> "$T/par.err"
rc=$?
stop_server
[ $rc -eq 0 ] || fail "parallel eval exited $rc: $(cat "$T/par.err")"
jq -e -s 'length == 4 and all(.[]; .status == "ok" and .end.reason == "finish" and .end.turns == 3)' \
  "$T/par/trajectories.jsonl" > /dev/null || fail "parallel rollouts: $(jq -c '{status, end}' "$T/par/trajectories.jsonl")"

# --- Infrastructure faults never become a reward (issue 18) -----------------
# Nothing listens on port 9: every rollout is an infra_error without a
# reward, and since none could be made, exit 3 with one line saying why.
"$KBROLLOUT" run --tasks "$SRC/testdata/tasks/linear_relu" --out "$T/infra.jsonl" --samples 2 \
  --policy http://127.0.0.1:9/v1 --model m --retries 1 --no-progress 2> "$T/infra.err"
rc=$?
[ $rc -eq 3 ] || fail "no policy server: exit $rc, want 3: $(cat "$T/infra.err")"
[ "$(wc -l < "$T/infra.err")" -eq 1 ] || fail "no policy server: not one line: $(cat "$T/infra.err")"
grep -q "^kbrollout: no rollout could be made: 2 infrastructure fault(s), e.g. testdata/linear_relu#0: policy: " \
  "$T/infra.err" || fail "no policy server message: $(cat "$T/infra.err")"
jq -e -s 'length == 2 and all(.[]; .status == "infra_error" and .reward.value == null
  and .reward.excluded == "infra_error" and .infra_error.stage == "policy" and .end.reason == "policy_error"
  and .final.stages == {})' "$T/infra.jsonl" > /dev/null || fail "infra records: $(jq -c '{status, reward, infra_error}' "$T/infra.jsonl")"

# eval into a directory: the infra_error rollout is redone once the server
# is there, and results.jsonl holds its last record only.
"$KBROLLOUT" eval --tasks "$SRC/testdata/tasks/linear_relu" --policy http://127.0.0.1:9/v1 --model m \
  --retries 1 --out "$T/ev" --no-progress 2> "$T/err"
[ $? -eq 3 ] || fail "eval without a server should exit 3: $(cat "$T/err")"
jq -e '.status == "infra_error" and .reward == null' "$T/ev/results.jsonl" > /dev/null || fail "eval infra result"
cat > "$T/fin0.json" <<'JSON'
{"per_conversation": [{"tool_calls": [{"name": "finish", "arguments": {}}]}]}
JSON
start_server "$T/fin0.json"
"$KBROLLOUT" eval --tasks "$SRC/testdata/tasks/linear_relu" --policy "http://127.0.0.1:$PORT/v1" --model scripted \
  --out "$T/ev" --no-progress 2> "$T/err"
rc=$?
stop_server
[ $rc -eq 0 ] || fail "eval redo: exit $rc: $(cat "$T/err")"
[ "$(wc -l < "$T/ev/trajectories.jsonl")" -eq 2 ] || fail "eval redo: the infra record and the redone one"
[ "$(wc -l < "$T/ev/results.jsonl")" -eq 1 ] || fail "eval redo: results.jsonl keeps the last record only"
jq -e '.status == "runtime_error" and .reward == -1' "$T/ev/results.jsonl" > /dev/null \
  || fail "eval redo result: $(cat "$T/ev/results.jsonl")"

# --- Scheme names: lib/reward's spelling, anything else exit 2 ---------------
for bad in log_speedup bogus; do
  "$KBROLLOUT" run --tasks "$SRC/testdata/tasks/linear_relu" --out "$T/s.jsonl" --policy http://127.0.0.1:9/v1 \
    --model m --scheme "$bad" 2> "$T/err"
  rc=$?
  [ $rc -eq 2 ] || fail "--scheme $bad: exit $rc, want 2"
  grep -q "^kbrollout: --scheme: $bad not in {milestone,speedup,log-speedup,correctness}" "$T/err" || fail "--scheme $bad message: $(cat "$T/err")"
  [ "$(wc -l < "$T/err")" -eq 1 ] || fail "--scheme $bad: not one line"
done
[ ! -e "$T/s.jsonl" ] || fail "a refused run wrote its output"
"$KBROLLOUT" run --tasks "$SRC/testdata/tasks/linear_relu" --out "$T/s.jsonl" --policy http://127.0.0.1:9/v1 \
  --model m --reward log-speedup 2> "$T/err"
rc=$?
[ $rc -eq 2 ] && grep -q "^kbrollout: --reward was renamed --scheme" "$T/err" || fail "--reward: exit $rc: $(cat "$T/err")"
"$KBROLLOUT" run --tasks "$SRC/testdata/tasks/linear_relu" --out "$T/s.jsonl" --policy http://127.0.0.1:9/v1 \
  --model m --device gpu 2> "$T/err"
[ $? -eq 2 ] || fail "--device gpu should exit 2"
"$KBROLLOUT" run --tasks "$SRC/testdata/tasks/linear_relu" --out "$T/s.jsonl" --policy http://127.0.0.1:9/v1 \
  --model m --policy-device tpu 2> "$T/err"
[ $? -eq 2 ] || fail "--policy-device tpu should exit 2"
echo x > "$T/afile"  # a path under a regular file cannot be made, even by root
"$KBROLLOUT" run --tasks "$SRC/testdata/tasks/linear_relu" --out "$T/afile/t.jsonl" \
  --policy http://127.0.0.1:9/v1 --model m 2> "$T/err"
rc=$?
[ $rc -eq 2 ] && grep -q "^kbrollout: cannot open $T/afile/t.jsonl for writing" "$T/err" \
  || fail "unwritable --out: exit $rc: $(cat "$T/err")"
"$KBROLLOUT" eval --tasks "$SRC/testdata/tasks/linear_relu" --out "$T/afile/ev" \
  --policy http://127.0.0.1:9/v1 --model m 2> "$T/err"
rc=$?
[ $rc -eq 2 ] && [ "$(wc -l < "$T/err")" -eq 1 ] || fail "eval into an unwritable --out: exit $rc: $(cat "$T/err")"
"$KBROLLOUT" run --tasks "$SRC/testdata/tasks/linear_relu" --out "$T/w.jsonl" --work-dir "$T/afile/w" \
  --policy http://127.0.0.1:9/v1 --model m 2> "$T/err"
rc=$?
[ $rc -eq 2 ] && grep -q "^kbrollout: --work-dir $T/afile/w: " "$T/err" \
  || fail "unwritable --work-dir: exit $rc: $(cat "$T/err")"
# A valid scheme is used and recorded.
cat > "$T/fin.json" <<'JSON'
{"per_conversation": [{"tool_calls": [{"name": "finish", "arguments": {}}]}]}
JSON
start_server "$T/fin.json"
"$KBROLLOUT" run --tasks "$SRC/testdata/tasks/linear_relu" --out "$T/s.jsonl" --policy "http://127.0.0.1:$PORT/v1" \
  --model scripted --scheme log-speedup --no-progress 2> "$T/err"
rc=$?
[ $rc -eq 0 ] || fail "--scheme log-speedup: exit $rc: $(cat "$T/err")"
jq -e '.reward.scheme.name == "log-speedup"' "$T/s.jsonl" > /dev/null || fail "scheme not recorded"

# --- Seeds: sample k gets the seed derived from (S, task, k) -----------------
"$KBROLLOUT" run --tasks "$SRC/testdata/tasks/linear_relu" --out "$T/seeds.jsonl" --samples 4 --seed 1 \
  --policy "http://127.0.0.1:$PORT/v1" --model scripted --no-progress 2> "$T/err" || fail "seeds run: $(cat "$T/err")"
jq -e -s 'length == 4 and (map(.sampling.seed) | unique | length) == 4 and all(.[]; .sampling.run_seed == 1
  and .sampling.same_seed == false and (.sampling.seed | type) == "number")' "$T/seeds.jsonl" > /dev/null \
  || fail "seeds differ: $(jq -c .sampling "$T/seeds.jsonl")"
# The same command into a new file gives the same seeds: a run repeats.
"$KBROLLOUT" run --tasks "$SRC/testdata/tasks/linear_relu" --out "$T/seeds2.jsonl" --samples 4 --seed 1 \
  --policy "http://127.0.0.1:$PORT/v1" --model scripted --no-progress 2> "$T/err" || fail "seeds run 2"
[ "$(jq -c '[.sample, .sampling.seed]' "$T/seeds.jsonl" | sort)" = "$(jq -c '[.sample, .sampling.seed]' "$T/seeds2.jsonl" | sort)" ] \
  || fail "seeds not reproducible"
"$KBROLLOUT" run --tasks "$SRC/testdata/tasks/linear_relu" --out "$T/same.jsonl" --samples 3 --seed 1 --same-seed \
  --policy "http://127.0.0.1:$PORT/v1" --model scripted --no-progress 2> "$T/err" || fail "same-seed run: $(cat "$T/err")"
jq -e -s 'length == 3 and all(.[]; .sampling.seed == 1 and .sampling.same_seed == true)' "$T/same.jsonl" > /dev/null \
  || fail "--same-seed: $(jq -c .sampling "$T/same.jsonl")"
"$KBROLLOUT" run --tasks "$SRC/testdata/tasks/linear_relu" --out "$T/same2.jsonl" --same-seed \
  --policy "http://127.0.0.1:$PORT/v1" --model scripted 2> "$T/err"
[ $? -eq 2 ] || fail "--same-seed without --seed should exit 2"
stop_server

# --- Two runs on one output: the second is refused, the file stays whole ----
cat > "$T/slow.json" <<'JSON'
{"per_conversation": [{"delay_s": 3, "tool_calls": [{"name": "finish", "arguments": {}}]}]}
JSON
start_server "$T/slow.json"
"$KBROLLOUT" run --tasks "$SRC/testdata/tasks/linear_relu" --out "$T/both.jsonl" --samples 2 -j 2 \
  --policy "http://127.0.0.1:$PORT/v1" --model scripted --no-progress 2> "$T/first.err" &
first=$!
for _ in $(seq 100); do [ -e "$T/both.jsonl" ] && break; sleep 0.05; done
sleep 0.3
"$KBROLLOUT" run --tasks "$SRC/testdata/tasks/linear_relu" --out "$T/both.jsonl" --samples 2 -j 2 \
  --policy "http://127.0.0.1:$PORT/v1" --model scripted --no-progress 2> "$T/second.err"
rc=$?
wait $first
rc1=$?
stop_server
[ $rc -eq 2 ] || fail "second writer: exit $rc, want 2: $(cat "$T/second.err")"
[ "$(wc -l < "$T/second.err")" -eq 1 ] && grep -q "is locked by another kbrollout" "$T/second.err" \
  || fail "second writer message: $(cat "$T/second.err")"
[ $rc1 -eq 0 ] || fail "first writer: exit $rc1: $(cat "$T/first.err")"
jq -e -s 'length == 2 and (map(.rollout_id) | sort) == ["testdata/linear_relu#0", "testdata/linear_relu#1"]' \
  "$T/both.jsonl" > /dev/null || fail "the first writer's file: $(cut -c1-80 "$T/both.jsonl")"

# --- Resume refuses a corrupt output, naming the line ------------------------
{ head -1 "$T/both.jsonl"; head -c 100 "$T/both.jsonl" | tr -d '\n'; echo; } > "$T/corrupt.jsonl"
"$KBROLLOUT" run --tasks "$SRC/testdata/tasks/linear_relu" --out "$T/corrupt.jsonl" --samples 2 \
  --policy http://127.0.0.1:9/v1 --model m 2> "$T/err"
rc=$?
[ $rc -eq 2 ] || fail "corrupt output: exit $rc, want 2"
grep -q "^kbrollout: $T/corrupt.jsonl:2: not JSON" "$T/err" || fail "corrupt output message: $(cat "$T/err")"
[ "$(wc -l < "$T/err")" -eq 1 ] || fail "corrupt output: not one line"
echo "ok"
