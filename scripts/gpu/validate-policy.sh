#!/usr/bin/env bash
# GPU acceptance of the local policy (issue 9), run on the GPU machine from the
# repository root. Before: run scripts/gpu/carry.sh on the development
# machine and carry `.carry` (the GPU machine has no Debian packages).
#
#   bash scripts/gpu/validate-policy.sh [all | STAGE...]     STAGE: build test validate bench
#
#   build     meson build (-Dclang=disabled -Dtorch_cuda=true) of kbpolicy and
#             the policy tests in build-gpu/
#   test      the policy unit tests and the 'gpu' suite (fixtures on CUDA)
#   validate  scripts/gpu/policy_reference.py validate: tokenizer ids vs
#             tokenizers, fp32 logits vs transformers on a padded batch (1e-4),
#             64 greedy steps, our saved checkpoint loaded by transformers
#   bench     scripts/bench/policy.sh: prefill/decode tokens/s of kbpolicy and
#             transformers generate, batch 16, one run
# Logs go to $OUT (the device tool's output folder) or build-gpu/policy-gpu/.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
source "$ROOT/scripts/env.sh"
command -v meson >/dev/null || meson() { python3 -m mesonbuild.mesonmain "$@"; }
STAGES=("${@:-all}")
BUILD="${KB_GPU_BUILD:-$ROOT/build-gpu}"
LOGS="${OUT:-$BUILD/policy-gpu}"
mkdir -p "$LOGS"
export PKG_CONFIG_PATH="$ROOT/.carry/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
status=0

stage_build() {
  [ -d "$ROOT/.carry/lib/pkgconfig" ] || { echo "no .carry: run scripts/gpu/carry.sh on the dev machine and carry .carry"; return 2; }
  {
    date -u +"%Y-%m-%dT%H:%M:%SZ"; git -C "$ROOT" rev-parse HEAD 2>/dev/null || true
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    python3 -c "import torch, transformers, tokenizers, safetensors; print('torch', torch.__version__, '| transformers', transformers.__version__, '| tokenizers', tokenizers.__version__, '| safetensors', safetensors.__version__)"
  } 2>&1 | tee "$LOGS/environment.txt"
  if [ ! -f "$BUILD/build.ninja" ]; then
    meson setup "$BUILD" "$ROOT" -Dclang=disabled -Dtorch_cuda=true 2>&1 | tee "$LOGS/setup.log" | tail -5
  fi
  meson compile -C "$BUILD" kbpolicy policy_model_test policy_text_test 2>&1 | tee "$LOGS/build.log" | tail -3
  local rc=${PIPESTATUS[0]}
  [ "$rc" -eq 0 ] && [ -x "$BUILD/tools/kbpolicy/kbpolicy" ]
}

stage_test() {
  meson test -C "$BUILD" --no-rebuild --print-errorlogs policy_text policy_model policy_gpu 2>&1 | tee "$LOGS/test.log" | tail -8
  local rc=${PIPESTATUS[0]}
  # The figures the gpu tests print (logit differences on CUDA).
  "$BUILD/tests/policy/policy_model_test" --gtest_filter='Gpu*' 2>&1 | grep -E "diff|OK|FAIL|PASSED|SKIP" | tee -a "$LOGS/test.log"
  return "$rc"
}

stage_validate() {
  python3 "$ROOT/scripts/gpu/policy_reference.py" validate --kbpolicy "$BUILD/tools/kbpolicy/kbpolicy" \
    --work "$BUILD/policy-validate" --device cuda 2>&1 | tee "$LOGS/validate.log" | grep -vE "^\\$ |Loading weights|Writing model"
  local rc=${PIPESTATUS[0]}
  cp "$BUILD/policy-validate/summary.json" "$LOGS/validate-summary.json" 2>/dev/null || true
  return "$rc"
}

stage_bench() {
  bash "$ROOT/scripts/bench/policy.sh" 2>&1 | tee "$LOGS/bench.log" | grep -vE "^\\$ "
  return "${PIPESTATUS[0]}"
}

run_stage() {
  echo "=== $1"
  "stage_$1" || { echo "=== $1 FAILED"; status=1; }
}
[ "${STAGES[0]}" = all ] && STAGES=(build test validate bench)
for s in "${STAGES[@]}"; do
  case "$s" in
    build|test|validate|bench) run_stage "$s" ;;
    *) echo "usage: $0 [all | build test validate bench]"; exit 2 ;;
  esac
  [ "$s" = build ] && [ "$status" -ne 0 ] && break
done
echo "logs: $LOGS"
exit "$status"
