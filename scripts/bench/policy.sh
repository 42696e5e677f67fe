#!/usr/bin/env bash
# Decode throughput of the local policy next to transformers' generate, one
# run, on the GPU machine (after scripts/gpu/validate-policy.sh build):
#   bash scripts/bench/policy.sh [PRESET] [BATCH] [DTYPE]
# PRESET: qwen2.5-0.5b (default), qwen2.5-1.5b, qwen2.5-7b, small (random
# weights of that config's shape); BATCH default 16; DTYPE default bfloat16.
# PROMPT_LEN / NEW_TOKENS / REPEAT in the environment (128 / 128 / 3).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${KB_GPU_BUILD:-$ROOT/build-gpu}"
KBPOLICY="${KBPOLICY:-$BUILD/tools/kbpolicy/kbpolicy}"
[ -x "$KBPOLICY" ] || { echo "no $KBPOLICY: build first (scripts/gpu/validate-policy.sh build)"; exit 2; }
exec python3 "$ROOT/scripts/gpu/policy_reference.py" bench --kbpolicy "$KBPOLICY" \
  --preset "${1:-qwen2.5-0.5b}" --batch "${2:-16}" --dtype "${3:-bfloat16}" \
  --prompt-len "${PROMPT_LEN:-128}" --new-tokens "${NEW_TOKENS:-128}" --repeat "${REPEAT:-3}" \
  --device "${DEVICE:-cuda}" --work "$BUILD/policy-bench"
