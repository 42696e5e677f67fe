#!/usr/bin/env bash
# KernelBench-format (Python ModelNew) solutions on the GPU:
# tests/tools/python_format_test.sh with DEVICE cuda, against
# testdata/solutions-python/expected.json's "cuda" and "unruled_cuda".
# Skips (exit 77) without a GPU or without a CUDA-enabled kbcheck-worker.
# Usage: python_format_gpu_test.sh KBCHECK TORCH_CUDA(true|false)
set -uo pipefail
KBCHECK="$1"
if [ ! -e /dev/nvidiactl ] || ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "no GPU: skipped"; exit 77
fi
if [ "$2" != true ]; then
  echo "kbcheck-worker was built without -Dtorch_cuda=true: skipped"; exit 77
fi
ROOT="${KB_SOURCE_ROOT:?KB_SOURCE_ROOT must name the source tree}"
exec bash "$ROOT/tests/tools/python_format_test.sh" "$KBCHECK" "$ROOT" cuda
