#!/usr/bin/env bash
# GPU suite: the CPU test's acceptance on CUDA. Imports the samples, builds
# the CUDA compiled baseline (compiled/sm_XY.pt2) and checks that the C++
# reference and compiled baseline reproduce Python for three seeds.
# Skips (exit 77) where there is no GPU. Needs kbsynth built with
# -Dtorch_cuda=true. Timing is scripts/gpu/validate-tasks.sh's job.
# Usage: gpu_test.sh KBSYNTH WORKDIR
set -uo pipefail
KBSYNTH="$1"; WORK="$2"
# The H200 machine's CXX wrapper (/opt/gcc/bin/g++) makes AOTInductor
# packages that segfault when loaded; the system compiler works.
if [ -x /usr/bin/g++ ]; then export CXX=/usr/bin/g++ CC=/usr/bin/gcc; fi
PY="${KB_PYTHON:-/opt/kb-venv/bin/python3}"
[ -x "$PY" ] || PY=python3
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "no GPU: skipped"; exit 77
fi
if ! "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  echo "torch sees no CUDA device: skipped"; exit 77
fi
SRC="${KB_SOURCE_ROOT:?}/testdata/tasks-src"
rm -rf "$WORK"; mkdir -p "$WORK"
"$KBSYNTH" import "$SRC/kernelbench" -o "$WORK/tasks" --compiled cuda >"$WORK/import.jsonl" || exit 1
jq -c '{id, status, reason, compiled}' "$WORK/import.jsonl"
"$KBSYNTH" check "$WORK"/tasks/kernelbench/level*/* --device cuda --seeds 0,1,2 >"$WORK/check.jsonl"
rc=$?
jq -c '{id, inputs_max_abs_diff, reference_max_abs_diff, compiled_max_abs_diff, compiled_arch, status, message}' "$WORK/check.jsonl"
exit $rc
