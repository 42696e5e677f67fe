#!/usr/bin/env bash
# GPU acceptance of kbrollout (issue 8), on the GPU machine after
# `bash scripts/gpu/carry.sh` here and `bash scripts/gpu/build.sh build-gpu` there:
# 8 scripted rollouts at once (-j 8) on a CUDA task against one scripted
# policy server (kb-fake-llm, per-conversation script: each rollout gets the
# whole script): write a correct cuBLAS solution, compile, verify, profile,
# finish. Each must end with status ok and a milestone reward from real
# timings (kbprof), and the GPU pool's timeline must show the verify and
# profile jobs one at a time on the GPU. Prints the rewards and the timeline.
#
#   KB_BUILD=build-gpu bash scripts/gpu/validate-rollout.sh [TASK_DIR] [SOLUTION_DIR]
#
# Default task testdata/tasks/matmul_2048 with testdata/solutions-fast/cublas_gemm.
# The first profile of the task builds its compiled baseline (AOTInductor,
# about a minute) and fills the baseline cache; the others reuse it.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="${KB_BUILD:-$ROOT/build-gpu}"
TASK="${1:-$ROOT/testdata/tasks/matmul_2048}"
SOL="${2:-$ROOT/testdata/solutions-fast/cublas_gemm}"
OUTDIR="${OUT:-$BUILD/rollout-validate}"
WORK="$BUILD/rollout-validate-work"
if [ -x /usr/bin/g++ ]; then export CXX=/usr/bin/g++ CC=/usr/bin/gcc; fi
export KB_BASELINE_CACHE="$WORK/baseline-cache"
rm -rf "$WORK/out" && mkdir -p "$WORK" "$OUTDIR"
command -v jq >/dev/null || { echo "jq not found (scripts/gpu/carry.sh puts one in .carry/bin)"; exit 1; }

# The script every conversation replays.
content=$(jq -Rs . <"$SOL/forward.cpp")
cat >"$WORK/script.json" <<JSON
{"per_conversation": [
 {"tool_calls": [{"name": "write_file", "arguments": {"path": "solution/forward.cpp", "content": $content}}]},
 {"tool_calls": [{"name": "compile", "arguments": {}}]},
 {"tool_calls": [{"name": "verify", "arguments": {}}]},
 {"tool_calls": [{"name": "profile", "arguments": {}}]},
 {"tool_calls": [{"name": "finish", "arguments": {"summary": "cuBLAS SGEMM"}}]}
]}
JSON
rm -f "$WORK/port"
"$BUILD/tests/agent/kb-fake-llm" "$WORK/script.json" "$WORK/port" >"$WORK/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null' EXIT
for _ in $(seq 100); do [ -s "$WORK/port" ] && break; sleep 0.05; done
PORT=$(cat "$WORK/port")

# The compiled baseline and the baseline cache once, before the rollouts.
"$BUILD/tools/kbprof/kbprof" "$TASK" -q --json "$WORK/baselines.json" || true
jq -c '{status, eager: .timings.eager.median_ms, compile: .timings.compile.median_ms, compile_error: .timings.compile.error}' "$WORK/baselines.json"

start=$(date +%s.%N)
"$BUILD/tools/kbrollout/kbrollout" eval --tasks "$TASK" --samples 8 -j 8 --device cuda --gpus 0 \
  --policy "http://127.0.0.1:$PORT/v1" --model scripted --max-turns 10 --out "$WORK/out" 2>&1 | tail -5
rc=$?
echo "kbrollout exit $rc, wall $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
traj="$WORK/out/trajectories.jsonl"
[ -f "$traj" ] || traj=$(ls "$WORK"/out/*.jsonl 2>/dev/null | head -1)
jq -c '{id: .rollout_id, status, end: .end.reason, reward: .reward.value, excluded: .reward.excluded,
        speedup_vs_eager: .final.stages.profile.report.speedup_vs_eager,
        speedup_vs_compile: .final.stages.profile.report.speedup_vs_compile}' "$traj" | tee "$OUTDIR/rollouts.txt"
# The reward each should have: the milestone (docs/kbreward.md) recomputed here
# from the final profile's medians, b(t, t0) = (t0 - t) / t0 > 0.05.
n_right=$(jq -s '[.[] | .final.stages.profile.report.timings as $t
  | ($t.candidate.median_ms) as $c
  | (if (($t.eager.median_ms - $c) / $t.eager.median_ms > 0.05) then
       (if (($t.compile.median_ms - $c) / $t.compile.median_ms > 0.05) then 3 else 2 end) else 1 end) as $want
  | select(.reward.value == $want)] | length' "$traj")
echo "GPU timeline (start_s, end_s, slot, job, waited_s), sorted:"
jq -r '.gpu[] | [.start_s, .end_s, .slot, .job, .waited_s] | @tsv' \
  "$WORK/out/timeline.json" 2>/dev/null | sort -g | tee "$OUTDIR/timeline.txt" | head -40
cp "$WORK/out/timeline.json" "$OUTDIR/" 2>/dev/null
# Exclusive: no two GPU leases overlap.
overlaps=$(jq '[.gpu | sort_by(.start_s) | . as $l | range(1; length) | select($l[.].start_s < $l[. - 1].end_s)] | length' \
  "$WORK/out/timeline.json" 2>/dev/null || echo "?")
n_ok=$(jq -s '[.[] | select(.status == "ok" and .reward.value != null)] | length' "$traj")
echo "rollouts ok with a reward: $n_ok of 8; reward equal to the milestone recomputed from the timings: $n_right of 8; overlapping GPU leases: $overlaps"
[ "$n_ok" = 8 ] && [ "$n_right" = 8 ] && [ "$overlaps" = 0 ]
