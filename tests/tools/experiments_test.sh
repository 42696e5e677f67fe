#!/usr/bin/env bash
# experiments/ (issue 19) through make, on the CPU, end to end:
#   1. make -j2 -C experiments/rl-loop into a temporary OUT: every target is
#      there, report.json parses and counts every rollout, the GRPO step and
#      the curves page are written; make -q then says all is up to date and
#      make -n would run no tool.
#   2. a late target removed (report.json): make -n plans only that report,
#      make remakes only it; every other target keeps its inode and mtime.
#   3. the trained policy removed: train and curves are remade; synthesis,
#      rollouts and reports are not. That remake (training, two steps) is
#      stopped by SIGINT after its first step: the next make continues from
#      kbtrain's checkpoint (--resume) and does not redo the first step.
#   4. an interrupted run: with trajectories.jsonl removed, make is stopped by
#      SIGINT (its whole process group, as Ctrl-C does) once kbrollout has
#      written its first rollout: no trajectories.jsonl appears, the partial
#      file stays; the next make resumes it (its rollouts are the first lines
#      of the result, kbrollout counts them resumed), completes the loop and
#      leaves synthesis untouched.
#   5. a tool that is not built stops make with exit 2 and one line.
#   6. experiments/eval against a scripted policy server (POLICY, MODEL):
#      the four reports, report.json parses, make -q up to date.
# Skips (77) only when a tool it runs is not built.
# Usage: experiments_test.sh SOURCE_ROOT BUILD_ROOT
set -uo pipefail
SRC=$1 BUILD=$2
FAKE="$BUILD/tests/agent/kb-fake-llm"
for t in "$BUILD/tools/kbsynth/kbsynth" "$BUILD/tools/kbrollout/kbrollout" "$BUILD/tools/kbtrain/kbtrain" \
         "$BUILD/tools/kbreward/kbreward" "$FAKE"; do
  [ -x "$t" ] || { echo "SKIP: $t is not built"; exit 77; }
done
command -v make > /dev/null || { echo "FAIL: make is not installed"; exit 1; }
command -v jq > /dev/null || { echo "FAIL: jq is not installed"; exit 1; }

T=$(mktemp -d)
OUT="$T/rl"
server_pid=""
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
fails=0
ok()  { echo "ok   - $*"; }
bad() { echo "FAIL - $*"; fails=$((fails + 1)); }
fatal() { echo "FAIL - $*"; exit 1; }
check() {  # check DESCRIPTION COMMAND...: the command must succeed (its stdout is dropped)
  local what="$1"; shift
  if "$@" > /dev/null; then ok "$what"; else bad "$what"; fi
}

# Small enough for two cores: 2 composed tasks, 2 samples each.
VARS=(BUILD="$BUILD" OUT="$OUT" SEED=1 N=2 SAMPLES=2)
rl_make() { make -C "$SRC/experiments/rl-loop" "${VARS[@]}" "$@"; }
TARGETS=(composed/manifest.jsonl filtered/manifest.jsonl synth-stats.json trajectories.jsonl
         policy/train_summary.json policy/model.safetensors curves.html
         report.txt report.json report.md report.html)
# The inode and mtime of each target: a step that ran again renames a new file in.
snap() { (cd "$OUT" && find "${TARGETS[@]}" -maxdepth 0 -printf '%p %i %T@\n' 2>/dev/null); }
line_of() { grep "^$1 " "$2"; }
same()    { [ -n "$(line_of "$1" "$T/before")" ] && [ "$(line_of "$1" "$T/before")" = "$(line_of "$1" "$T/after")" ]; }
changed() { [ -n "$(line_of "$1" "$T/after")" ] && [ "$(line_of "$1" "$T/before")" != "$(line_of "$1" "$T/after")" ]; }
# Steps finish within the same second on a fast file system: wait so that a
# redone step's file cannot carry the same mtime by chance.
tick() { sleep 1.1; }

# ---- 1. the whole loop ------------------------------------------------------
rl_make -j2 > "$T/run1.log" 2>&1
rc=$?
[ $rc -eq 0 ] || { tail -40 "$T/run1.log"; fatal "make -j2 -C experiments/rl-loop exited $rc"; }
ok "make -j2 -C experiments/rl-loop"
for f in "${TARGETS[@]}" policy/metrics.jsonl; do check "target $f" test -s "$OUT/$f"; done
check "no partial output left" test -z "$(find "$OUT" -maxdepth 1 -name '*.part*')"
check "report.json parses" jq -e . "$OUT/report.json"
tasks=$(find "$OUT/filtered/tasks" -name task.json | wc -l)
check "the filter kept synthesised tasks ($tasks)" test "$tasks" -ge 1
check "trajectories: SAMPLES=2 per kept task" test "$(wc -l < "$OUT/trajectories.jsonl")" -eq $((tasks * 2))
check "report.json: kbreward's report over every rollout" \
  jq -e --argjson n $((tasks * 2)) --argjson t "$tasks" \
  '.tool == "kbreward" and .inputs.records == $n and .inputs.tasks == $t' "$OUT/report.json"
check "trajectories are on the synthesised tasks" \
  jq -e -s 'all(.[]; .task_id | startswith("synth/s1/"))' "$OUT/trajectories.jsonl"
check "train_summary: one GRPO step on every episode" \
  jq -e --argjson n $((tasks * 2)) '.stage == "grpo" and .steps == 1 and .data.episodes == $n' \
  "$OUT/policy/train_summary.json"
check "the trained policy is a checkpoint" test -s "$OUT/policy/config.json"
check "curves.html is a page" grep -q '<svg' "$OUT/curves.html"
check "report.md is Markdown" grep -q '^|' "$OUT/report.md"
check "report.html is a page" grep -qi '<html' "$OUT/report.html"
check "the text report is printed" grep -q 'fast_p over eager' "$T/run1.log"
check "make -q: all up to date" rl_make -q
rl_make -n > "$T/n1.log" 2>&1
check "make -n: no tool would run" bash -c "! grep -qE 'kbsynth|kbrollout|kbtrain|kbreward' '$T/n1.log'"

# ---- 2. a late target removed ------------------------------------------------
snap > "$T/before"; tick
rm "$OUT/report.json"
rl_make -n > "$T/n2.log" 2>&1
check "make -n plans only kbreward for report.json" \
  bash -c "grep -q 'kbreward report .* --format json' '$T/n2.log' && ! grep -qE 'kbsynth|kbrollout|kbtrain|--format (text|markdown|html)' '$T/n2.log'"
rl_make > "$T/run2.log" 2>&1 || { tail -20 "$T/run2.log"; bad "make after removing report.json"; }
snap > "$T/after"
check "report.json remade" changed report.json
check "report.json parses again" jq -e '.tool == "kbreward"' "$OUT/report.json"
for f in "${TARGETS[@]}"; do
  [ "$f" = report.json ] && continue
  check "$f not redone" same "$f"
done

# ---- 3. the train step's output removed; training interrupted and continued -
# policy/ removed: train and curves are remade; synthesis, rollouts and
# reports are not. The remake runs two optimizer steps (2 episodes each) and
# is stopped by SIGINT once the first is logged: kbtrain ends its step, writes
# policy.part/checkpoint and exits 130; the next make continues from that
# checkpoint. (One remake of policy/, interrupted and resumed, instead of a
# plain remake and then an interrupted one: a kbtrain run less.)
snap > "$T/before"; tick
rm -rf "$OUT/policy"
TVARS=(STEPS=2 TRAIN_ARGS=--batch-size=2)
set -m
rl_make "${TVARS[@]}" > "$T/train1.log" 2>&1 &
mpid=$!
set +m
for _ in $(seq 3000); do
  grep -q 'grpo step 1/2' "$T/train1.log" && break
  kill -0 "$mpid" 2>/dev/null || break
  sleep 0.1
done
grep -q 'grpo step 1/2' "$T/train1.log" || { kill -KILL -- -"$mpid" 2>/dev/null; tail -20 "$T/train1.log"; fatal "kbtrain logged no step"; }
kill -INT -- -"$mpid"
wait "$mpid"
rc=$?
check "training interrupted: make exits non-zero ($rc)" test $rc -ne 0
check "training interrupted: no policy/" test ! -e "$OUT/policy"
check "training interrupted: kbtrain left its checkpoint" test -f "$OUT/policy.part/checkpoint/state.json"
cp "$OUT/policy.part/metrics.jsonl" "$T/metrics.part"
m=$(wc -l < "$T/metrics.part")
check "training interrupted: $m of 2 steps logged" test "$m" -ge 1 -a "$m" -le 2
rl_make "${TVARS[@]}" > "$T/train2.log" 2>&1 || { tail -20 "$T/train2.log"; bad "make after the training interruption"; }
snap > "$T/after"
check "training resumed: from the checkpoint" grep -q 'resuming the interrupted policy.part' "$T/train2.log"
check "training resumed: step 1 not redone" bash -c "! grep -q 'grpo step 1/2' '$T/train2.log'"
check "training resumed: steps 1 and 2 logged once each" \
  jq -e -s 'map(.step) == [1, 2]' "$OUT/policy/metrics.jsonl"
check "training resumed: the logged steps kept" \
  bash -c "head -n $m '$OUT/policy/metrics.jsonl' | cmp -s - '$T/metrics.part'"
check "training resumed: train_summary says 2 steps" jq -e '.steps == 2 and .stopped == false' "$OUT/policy/train_summary.json"
check "training resumed: no partial output left" test -z "$(find "$OUT" -maxdepth 1 -name '*.part*')"
for f in policy/train_summary.json curves.html; do check "$f remade" changed "$f"; done
for f in composed/manifest.jsonl filtered/manifest.jsonl synth-stats.json trajectories.jsonl \
         report.txt report.json report.md report.html; do
  check "$f not redone" same "$f"
done
check "kbrollout did not run again" bash -c "! grep -q 'kbrollout run' '$T/train1.log' '$T/train2.log'"

# ---- 4. interrupted during the rollouts, then resumed -------------------------
snap > "$T/before"; tick
rm "$OUT/trajectories.jsonl"
set -m   # make in its own process group, signals not ignored: as from a terminal
rl_make > "$T/run4.log" 2>&1 &
mpid=$!
set +m
for _ in $(seq 3000); do
  [ -s "$OUT/trajectories.jsonl.part" ] && break
  kill -0 "$mpid" 2>/dev/null || break
  sleep 0.1
done
[ -s "$OUT/trajectories.jsonl.part" ] || { kill -KILL -- -"$mpid" 2>/dev/null; tail -20 "$T/run4.log"; fatal "kbrollout wrote no rollout"; }
kill -INT -- -"$mpid"
wait "$mpid"
rc=$?
check "interrupted make exits non-zero ($rc)" test $rc -ne 0
check "interrupted: no trajectories.jsonl" test ! -e "$OUT/trajectories.jsonl"
check "interrupted: the partial trajectories kept" test -s "$OUT/trajectories.jsonl.part"
cp "$OUT/trajectories.jsonl.part" "$T/partial.jsonl"
k=$(wc -l < "$T/partial.jsonl")
total=$((tasks * 2))
check "interrupted mid-step: $k of $total rollouts written" test "$k" -ge 1 -a "$k" -lt "$total"
snap > "$T/after"
for f in composed/manifest.jsonl filtered/manifest.jsonl synth-stats.json policy/train_summary.json \
         curves.html report.json; do
  check "interrupted: $f untouched" same "$f"
done
rl_make > "$T/run5.log" 2>&1
rc=$?
[ $rc -eq 0 ] || { tail -30 "$T/run5.log"; bad "make after the interruption exited $rc"; }
snap > "$T/after"
check "resumed: the partial rollouts reused" grep -q 'resuming the interrupted trajectories.jsonl.part' "$T/run5.log"
check "resumed: kbrollout counted $k resumed" grep -q "($k resumed)" "$T/run5.log"
check "resumed: $total trajectories" test "$(wc -l < "$OUT/trajectories.jsonl")" -eq "$total"
check "resumed: the finished rollouts are the first lines, unchanged" \
  bash -c "head -n $k '$OUT/trajectories.jsonl' | cmp -s - '$T/partial.jsonl'"
check "resumed: each rollout once" \
  jq -e -s 'map(.rollout_id) | length == (unique | length)' "$OUT/trajectories.jsonl"
check "resumed: no partial output left" test -z "$(find "$OUT" -maxdepth 1 -name '*.part*')"
for f in composed/manifest.jsonl filtered/manifest.jsonl synth-stats.json; do check "$f not redone" same "$f"; done
for f in trajectories.jsonl policy/train_summary.json curves.html report.json; do check "$f remade" changed "$f"; done
check "resumed: report.json parses and counts every rollout" \
  jq -e --argjson n "$total" '.inputs.records == $n' "$OUT/report.json"
check "make -q: all up to date after the resume" rl_make -q

# ---- 5. a tool that is not built -------------------------------------------
make -C "$SRC/experiments/rl-loop" BUILD="$T/no-build" OUT="$T/nb" > "$T/nb.log" 2>&1
rc=$?
check "missing tools: make exits 2 ($rc)" test $rc -eq 2
check "missing tools: the line names the tool" grep -q "no-build/tools/kbsynth/kbsynth is not built" "$T/nb.log"

# ---- 6. experiments/eval against a scripted policy server --------------------
cat > "$T/eval.json" <<'JSON'
[{"tool_calls": [{"name": "write_file", "arguments": {"path": "solution/forward.cpp", "content": "#include <kb/solution.h>\nKB_FORWARD(ctx) { int x = ; }\n"}}]},
 {"tool_calls": [{"name": "finish", "arguments": {}}]}]
JSON
"$FAKE" "$T/eval.json" "$T/port" > "$T/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.05; done
[ -s "$T/port" ] || fatal "scripted server did not start"
EVARS=(BUILD="$BUILD" OUT="$T/eval" TASKS="$SRC/testdata/tasks/linear_relu"
       POLICY="http://127.0.0.1:$(cat "$T/port")/v1" MODEL=scripted)
make -C "$SRC/experiments/eval" "${EVARS[@]}" > "$T/eval.log" 2>&1
rc=$?
kill "$server_pid"; wait "$server_pid" 2>/dev/null; server_pid=""
[ $rc -eq 0 ] || { tail -30 "$T/eval.log"; bad "make -C experiments/eval exited $rc"; }
for f in rollouts/trajectories.jsonl rollouts/results.jsonl report.txt report.json report.md report.html; do
  check "eval target $f" test -s "$T/eval/$f"
done
check "eval: the protocol's rollout (200 turns) with the scripted model" \
  jq -e '.mode == "eval" and .limits.max_turns == 200 and .status == "compile_error"' "$T/eval/rollouts/trajectories.jsonl"
check "eval: report.json parses, one scored task at reward -1" \
  jq -e '.tool == "kbreward" and .inputs.records == 1 and .overall.mean_reward == -1 and .title == "eval scripted"' "$T/eval/report.json"
check "eval: make -q up to date" make -C "$SRC/experiments/eval" "${EVARS[@]}" -q

echo "$fails failed"
[ $fails -eq 0 ]
