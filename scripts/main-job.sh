#!/usr/bin/env bash
# The main job, one connected run on bundled data (no set-up; scripts/demo.sh
# sets up and builds first, then calls this):
#   1. kbsynth import   testdata/tasks-src/kernelbench (KernelBench-format
#                       problems, levels 1-2) -> task bundles, in the capture pool
#   2. kbrollout eval   the replay policy (testdata/replay-cpu: torch-free
#                       solutions for three of the eight) through the whole
#                       agent loop: write_file, compile, verify, finish
#   3. kbreward report  the paper's table per level and overall, and the HTML page
#   4. one RL step      kbrollout run --replay with two samples of 1_ReLU_Scale
#                       (a right and a wrong variant) -> kbtrain grpo on the
#                       bundled tiny policy: rewards that differ, so the step learns
# The tasks are CPU-sized and nothing times them, so the rewards are
# correctness only (kbreward's `correctness` scheme), and every report says so.
# With a GPU (nvidia-smi lists one) and KernelBench's problem files at
# $KB_KERNELBENCH (default ../shared/kernelbench beside the checkout):
#   5. timed on the GPU  five KernelBench tasks (levels 1-3) imported with
#                       their sm_XX torch.compile baselines, the reference
#                       solutions (testdata/solutions-kernelbench) checked,
#                       timed against eager and torch.compile, and replayed
#                       through the agent loop; kbreward's milestone table
#                       (scripts/gpu/validate-kernelbench-solutions.sh with
#                       KB_COMPILED=1; KB_MAIN_GPU=0 skips it)
#
#   bash scripts/main-job.sh [OUT]     (default $KB_BUILD/main-job)
set -uo pipefail
source "$(dirname "$0")/env.sh"
OUT="${1:-$KB_BUILD/main-job}"
B="$KB_BUILD/tools"
for t in kbsynth/kbsynth kbrollout/kbrollout kbreward/kbreward kbtrain/kbtrain; do
  [ -x "$B/$t" ] || { echo "main-job: $B/$t is not built (meson compile -C $KB_BUILD)" >&2; exit 2; }
done
rm -rf "$OUT"
mkdir -p "$OUT"
step() { printf '\n=== %s\n' "$*"; }
t0=$(date +%s)

step "1. import: testdata/tasks-src/kernelbench -> $OUT/tasks (references captured on the CPU)"
"$B/kbsynth/kbsynth" import "$KB_ROOT/testdata/tasks-src/kernelbench" -o "$OUT/tasks" >/dev/null 2>"$OUT/import.log" \
  || { tail -5 "$OUT/import.log"; exit 1; }
grep -E "imported|level[0-9]:" "$OUT/import.log"

step "2. kbrollout eval: the replay policy (testdata/replay-cpu) through the agent loop, correctness only"
"$B/kbrollout/kbrollout" eval --tasks "$OUT/tasks" --replay "$KB_ROOT/testdata/replay-cpu" --out "$OUT/eval" \
  --scheme correctness --device cpu -j "$(nproc)" 2>"$OUT/eval.log" || { tail -5 "$OUT/eval.log"; exit 1; }
tail -1 "$OUT/eval.log"

step "3. kbreward report: the paper's table (pass rate, faster than eager / compile, geomean, fast_p) per level"
"$B/kbreward/kbreward" report "$OUT/eval/results.jsonl" --scheme correctness || exit 1
"$B/kbreward/kbreward" report "$OUT/eval/results.jsonl" --scheme correctness --format json -o "$OUT/report.json" || exit 1
"$B/kbreward/kbreward" report "$OUT/eval/results.jsonl" --scheme correctness -o "$OUT/report.html" || exit 1

step "4. one RL step: two replayed samples of 1_ReLU_Scale (right, wrong) -> kbtrain grpo on testdata/policy/qwen2-tiny"
"$B/kbrollout/kbrollout" run --tasks "$OUT/tasks/kernelbench/level1/1_ReLU_Scale" --replay "$KB_ROOT/testdata/replay-cpu" \
  --out "$OUT/rl/trajectories.jsonl" --samples 2 --seed 1 --scheme correctness --device cpu 2>"$OUT/rl.log" \
  || { tail -5 "$OUT/rl.log"; exit 1; }
jq -r '"  " + .rollout_id + ": " + .status + ", reward " + (.reward.value | tostring)' "$OUT/rl/trajectories.jsonl"
"$B/kbtrain/kbtrain" grpo "$OUT/rl/trajectories.jsonl" --model "$KB_ROOT/testdata/policy/qwen2-tiny" -o "$OUT/rl/policy" \
  --device cpu 2>&1 | grep "grpo step" || exit 1

KB="${KB_KERNELBENCH:-$KB_ROOT/../shared/kernelbench}"
gpu=0
if [ "${KB_MAIN_GPU:-1}" != 0 ] && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then gpu=1; fi
if [ $gpu = 1 ] && [ -d "$KB/level1" ]; then
  step "5. on the GPU: five KernelBench tasks with torch.compile baselines, the reference solutions timed and replayed"
  KB_BUILD="$KB_BUILD" KB_KERNELBENCH="$KB" OUT="$OUT/kernelbench" KB_COMPILED=1 \
    KB_ONLY="${KB_MAIN_GPU_TASKS:-40_LayerNorm 88_MinGPTNewGelu 14_Gemm_Divide_Sum_Scaling 76_Gemm_Add_ReLU 1_MLP}" \
    bash "$KB_ROOT/scripts/gpu/validate-kernelbench-solutions.sh" 2>"$OUT/kernelbench.log" | tail -20 \
    || { tail -5 "$OUT/kernelbench.log"; exit 1; }
elif [ $gpu = 1 ]; then
  step "5. skipped: a GPU, but no KernelBench at $KB (set KB_KERNELBENCH)"
else
  echo
  echo "(no GPU here: the rewards above are correctness only; with a GPU and KernelBench at $KB,"
  echo " step 5 times the reference solutions against eager and torch.compile)"
fi

echo
echo "main job done in $(( $(date +%s) - t0 )) s. The report: $OUT/report.html (also report.json);"
echo "trajectories: $OUT/eval/trajectories.jsonl; the trained step: $OUT/rl/policy (metrics.jsonl)."
[ $gpu = 1 ] && [ -d "$KB/level1" ] && echo "Timed on the GPU: $OUT/kernelbench/report.html and eval-report.html."
exit 0
