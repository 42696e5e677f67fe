#!/usr/bin/env bash
# KernelBench-format (Python ModelNew) solutions on the GPU:
# tests/tools/python_format_test.sh with DEVICE cuda, against
# testdata/solutions-python/expected.json's "cuda" and "unruled_cuda".
# Skips (exit 77) without a GPU or without a CUDA-enabled kbcheck-worker.
# Usage: python_format_gpu_test.sh KBCHECK TORCH_CUDA(true|false)
set -uo pipefail
KBCHECK="$1"
source "$(dirname "$0")/require_gpu.sh" "$2"
ROOT="${KB_SOURCE_ROOT:?KB_SOURCE_ROOT must name the source tree}"
exec bash "$ROOT/tests/tools/python_format_test.sh" "$KBCHECK" "$ROOT" cuda
