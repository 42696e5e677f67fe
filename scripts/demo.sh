#!/usr/bin/env bash
# The main job on bundled data: set up, build, then
#   1. statically check every bundled solution (the legitimate examples in
#      testdata/solutions and testdata/solutions-fast, the adversarial cases in
#      tests/analyze/cases and the hack-class solutions in
#      testdata/solutions-adversarial) and print a report;
#   2. the RL pipeline's stages on bundled data: synthesis (compose 6 fused
#      tasks, filter them), build + verify of a solution, and the loop of
#      scripts/rl-loop.sh (kbrollout with the local tiny policy, then a kbtrain
#      GRPO step, then the metrics page). Without a GPU these run on the CPU
#      (a CPU task, CPU filters, no timing); with one, the loop runs on CUDA
#      tasks and kbprof times the solution (DEMO_GPU=0 keeps it on the CPU).
set -uo pipefail
source "$(dirname "$0")/env.sh"

bash "$KB_ROOT/scripts/setup.sh" || exit 1
kb_build >/dev/null || { echo "build failed (run: meson compile -C $KB_BUILD)"; exit 1; }
KBCHECK="$KB_BUILD/tools/kbcheck/kbcheck"
OUT="$KB_BUILD/demo"
mkdir -p "$OUT"

printf '\n%-44s %-17s %6s %8s %9s %s\n' "solution" "status" "errors" "kernels" "launches" "library calls / first finding"
printf '%s\n' "$(printf '%.0s-' {1..120})"
for dir in "$KB_ROOT"/testdata/solutions/*/ "$KB_ROOT"/testdata/solutions-fast/*/ \
           "$KB_ROOT"/tests/analyze/cases/*/ "$KB_ROOT"/testdata/solutions-adversarial/*/; do
  name="${dir#"$KB_ROOT"/}"
  name="${name%/}"
  report="$OUT/$(echo "$name" | tr '/' '_').json"
  "$KBCHECK" static "$dir" --json "$report" -q
  jq -r --arg name "$name" '
    [$name, .status, (.counts.error | tostring), (.inventory.kernels | length | tostring),
     (.inventory.launches | length | tostring),
     (if (.findings | length) > 0
        then "[" + .findings[0].rule + "] " + .findings[0].file + (if .findings[0].line > 0 then ":" + (.findings[0].line | tostring) else "" end) + " " + (.findings[0].message | .[0:60])
        else ([.inventory.library_calls[] | .library + ":" + .function] | unique | join(", ")) end)]
    | "\(.[0] | .[0:44] | . + " " * (44 - length)) \(.[1] | . + " " * (17 - length)) \(.[2] | " " * (6 - length) + .) \(.[3] | " " * (8 - length) + .) \(.[4] | " " * (9 - length) + .) \(.[5])"' "$report"
done
echo
echo "Full diagnostics of one adversarial case (tests/analyze/cases/interpose):"
"$KBCHECK" static "$KB_ROOT/tests/analyze/cases/interpose"
echo
echo "JSON reports: $OUT/   (fields: docs/kbcheck.md)"

GPU=0
if [ "${DEMO_GPU:-1}" = 1 ] && nvidia-smi -L >/dev/null 2>&1; then GPU=1; fi
B="$KB_BUILD/tools"
step() { printf '\n=== %s\n' "$*"; }

step "synthesis: compose 6 tasks (rule composer, seed 1), filter them (on the CPU: tiny shapes, no timing or compile stage)"
rm -rf "$OUT/synth"
if [ $GPU = 1 ]; then
  "$B/kbsynth/kbsynth" compose -n 6 --seed 1 -o "$OUT/synth" >/dev/null
  "$B/kbsynth/kbsynth" filter "$OUT/synth" --device cuda --reference "$KB_ROOT/testdata/tasks-src" >/dev/null
else  # CPU-sized shapes
  "$B/kbsynth/kbsynth" compose -n 6 --seed 1 --profile tiny -o "$OUT/synth" >/dev/null
  "$B/kbsynth/kbsynth" filter "$OUT/synth" --device cpu --reference "$KB_ROOT/testdata/tasks-src" --stages parse,eager,deterministic,nondegenerate,decontam >/dev/null
fi
"$B/kbsynth/kbsynth" stats "$OUT/synth" | sed -n '1,20p'

step "build + verify: testdata/solutions-cpu/ok_linear_relu on testdata/tasks/linear_relu (CPU)"
"$B/kbcheck/kbcheck" "$KB_ROOT/testdata/tasks/linear_relu" "$KB_ROOT/testdata/solutions-cpu/ok_linear_relu" --device cpu
if [ $GPU = 1 ]; then
  step "profile: testdata/solutions-fast/cublas_gemm on testdata/tasks/matmul_2048"
  "$B/kbprof/kbprof" "$KB_ROOT/testdata/tasks/matmul_2048" "$KB_ROOT/testdata/solutions-fast/cublas_gemm"
fi

step "the RL loop, one iteration: kbrollout (local tiny policy) -> kbtrain grpo -> curves"
rm -rf "$OUT/rl"
if [ $GPU = 1 ]; then
  tasks="$KB_ROOT/testdata/tasks/matmul_2048"; device=cuda
else
  tasks="$KB_ROOT/testdata/tasks/linear_relu"; device=cpu
fi
KB_BUILD="$KB_BUILD" bash "$KB_ROOT/scripts/rl-loop.sh" --tasks "$tasks" --model "$KB_ROOT/testdata/policy/qwen2-tiny" \
  --run "$OUT/rl" --iterations 1 --samples 4 --algo grpo --device "$device" --max-turns 3 \
  --rollout-args "--max-tokens 64 --seed 1 --device $device" 2>&1 | tail -8
echo
echo "trajectories: $OUT/rl/iter-1/trajectories.jsonl; metrics: $OUT/rl/iter-1/policy/metrics.jsonl; curves: $OUT/rl/curves.html"
