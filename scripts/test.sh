#!/usr/bin/env bash
# Sets up, builds and runs the whole test suite; ends with the line
# "N passed, N failed, N skipped" counted from meson's testlog.json.
# Extra arguments go to `meson test` (e.g. --suite analyze).
set -uo pipefail
source "$(dirname "$0")/env.sh"

bash "$KB_ROOT/scripts/setup.sh" || { echo "0 passed, 1 failed"; exit 1; }
# On a machine with a GPU the CUDA side is built (libtorch_cuda, CUPTI) and
# the gpu suite runs instead of skipping.
gpu_args=()
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q "^GPU "; then
  echo "test: GPU found: building with -Dtorch_cuda=true, the gpu suite runs"
  gpu_args=(-Dtorch_cuda=true)
  if [ -f "$KB_BUILD/build.ninja" ]; then meson configure "$KB_BUILD" -Dtorch_cuda=true >/dev/null; fi
fi
if ! kb_build "${gpu_args[@]}"; then
  echo "build failed"
  echo "0 passed, 1 failed"
  exit 1
fi
rm -f "$KB_BUILD/meson-logs/testlog.json"
meson test -C "$KB_BUILD" --print-errorlogs --num-processes "$(nproc)" "$@"
rc=$?
log="$KB_BUILD/meson-logs/testlog.json"
if [ ! -f "$log" ]; then
  echo "0 passed, 1 failed"
  exit 1
fi
passed=$(jq -s '[.[] | select(.result == "OK" or .result == "EXPECTEDFAIL")] | length' "$log")
skipped=$(jq -s '[.[] | select(.result == "SKIP")] | length' "$log")
failed=$(jq -s '[.[] | select(.result != "OK" and .result != "EXPECTEDFAIL" and .result != "SKIP")] | length' "$log")
echo "$passed passed, $failed failed, $skipped skipped"
if [ "$failed" -ne 0 ] || [ "$rc" -ne 0 ]; then exit 1; fi
