#!/usr/bin/env bash
# The main job on bundled data: set up, build, then
#   1. statically check every bundled solution (the legitimate examples in
#      testdata/solutions and testdata/solutions-fast, the adversarial cases in
#      tests/analyze/cases and the hack-class solutions in
#      testdata/solutions-adversarial) and print a report;
#   2. scripts/main-job.sh, one connected run: import the bundled
#      KernelBench-format problems -> the replay policy through kbrollout eval
#      -> kbreward's table and HTML page -> one GRPO step on replayed samples
#      whose rewards differ (CPU tasks: correctness only, labelled so);
#   3. with a GPU (DEMO_GPU=0 skips it): kbprof times a solution against eager
#      and torch.compile.
# The RL loop from synthesis to training is experiments/rl-loop (make).
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

step "the main job (scripts/main-job.sh): import -> replay policy through kbrollout eval -> kbreward -> one GRPO step"
bash "$KB_ROOT/scripts/main-job.sh" "$OUT/main-job" || exit 1

step "build + verify: testdata/solutions-cpu/ok_linear_relu on testdata/tasks/linear_relu (CPU)"
"$B/kbcheck/kbcheck" "$KB_ROOT/testdata/tasks/linear_relu" "$KB_ROOT/testdata/solutions-cpu/ok_linear_relu" --device cpu
if [ $GPU = 1 ]; then
  step "profile: testdata/solutions-fast/cublas_gemm on testdata/tasks/matmul_2048"
  "$B/kbprof/kbprof" "$KB_ROOT/testdata/tasks/matmul_2048" "$KB_ROOT/testdata/solutions-fast/cublas_gemm"
fi
