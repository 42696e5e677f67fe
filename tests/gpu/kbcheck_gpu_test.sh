#!/usr/bin/env bash
# gpu suite: `kbcheck verify --device cuda` on every CUDA solution listed in
# testdata/solutions-gpu/expected.json (a correct cuBLAS GEMM + epilogue, a
# naive kernel, two outputs with a scalar input, a wrong kernel, a kernel that
# faults with an illegal address, one that never terminates, one that writes
# into its input, one that forks), one after the other, each with its
# expected status. Then the build benchmark on this machine.
# Skips (exit 77) without a GPU or without a CUDA-enabled kbcheck-worker.
# Usage: kbcheck_gpu_test.sh KBCHECK TORCH_CUDA(true|false) WORKDIR
set -uo pipefail
KBCHECK="$1"; TORCH_CUDA="$2"; WORK="$3"
source "$(dirname "$0")/require_gpu.sh" "$TORCH_CUDA"
command -v jq >/dev/null || { echo "jq not found"; exit 1; }
SRC="${KB_SOURCE_ROOT:?}/testdata"
rm -rf "$WORK"; mkdir -p "$WORK"
nvidia-smi -L
fail=0
printf '%-16s %-14s %-14s %7s  %s\n' solution expected got wall_s message
for name in $(jq -r '.solutions | keys[]' "$SRC/solutions-gpu/expected.json"); do
  e=$(jq -c ".solutions[\"$name\"]" "$SRC/solutions-gpu/expected.json")
  dir=$(jq -r .dir <<<"$e"); task=$(jq -r .task <<<"$e")
  want=$(jq -r .status <<<"$e"); frag=$(jq -r '.message // ""' <<<"$e")
  start=$(date +%s%N)
  "$KBCHECK" verify --device cuda "$SRC/tasks/$task" "$SRC/$dir" --timeout 20 \
    --cache-dir "$WORK/cache" --json "$WORK/$name.json" -q 2>"$WORK/$name.err"
  rc=$?
  wall=$(awk -v a="$start" -v b="$(date +%s%N)" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')
  got=$(jq -r '.status // "none"' "$WORK/$name.json" 2>/dev/null || echo none)
  msg=$(jq -r '.message // ""' "$WORK/$name.json" 2>/dev/null | head -c 160)
  printf '%-16s %-14s %-14s %7s  %s\n' "$name" "$want" "$got" "$wall" "$msg"
  if [ "$got" != "$want" ]; then
    echo "  FAIL: expected $want (exit $rc); stderr: $(head -c 400 "$WORK/$name.err")"
    jq -c '.stages.verify.report.worker | {end, blocked_syscall, confinement, output}' "$WORK/$name.json" 2>/dev/null | head -c 2000
    echo
    fail=1
  elif [ -n "$frag" ] && ! grep -qF -- "$frag" <<<"$msg"; then
    echo "  FAIL: message lacks '$frag'"; fail=1
  fi
done
jq -c '{gpu: .stages.verify.report.gpu, driver: .stages.verify.report.driver,
        torch: .stages.verify.report.torch_version,
        confinement: .stages.verify.report.worker.confinement,
        startup_s: .stages.verify.report.worker.startup_seconds,
        worker_wall_s: .stages.verify.report.worker.wall_seconds,
        reference_s: .stages.verify.report.reference_seconds}' "$WORK/ok_naive.json" 2>/dev/null
# Build timings on this machine (printed, not asserted).
if [ -x "${KB_SOURCE_ROOT}/scripts/bench/build.sh" ]; then
  KBCHECK="$KBCHECK" bash "${KB_SOURCE_ROOT}/scripts/bench/build.sh" 3 || true
fi
exit $fail
