#!/usr/bin/env bash
# First look at kbprof on the GPU machine (after scripts/gpu/build.sh): one
# legitimate solution and one hack, tables and JSON excerpts, then the gpu
# suite (kbcheck on CUDA solutions and the adversarial suite). Output under
# $OUT when set.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="${KB_BUILD:-$ROOT/build-gpu}"
OUTDIR="${OUT:-$BUILD/smoke}"
mkdir -p "$OUTDIR"
if [ -x /usr/bin/g++ ]; then export CXX=/usr/bin/g++ CC=/usr/bin/gcc; fi
export KB_BASELINE_CACHE="$BUILD/baseline-cache"
P="$BUILD/tools/kbprof/kbprof"
T="$ROOT/testdata/tasks"
S="$ROOT/testdata"
run() {  # run NAME TASK SOL ARGS...
  local name=$1 task=$2 sol=$3; shift 3
  echo "=== kbprof $name"
  /usr/bin/time -f "wall %e s" "$P" "$T/$task" "$S/$sol" --json "$OUTDIR/$name.json" "$@" 2>&1 | tail -40
  jq -c '{status, message, evidence, rounds, stop, seconds, worker_seconds, reference_seconds,
          provenance: .provenance.activities, sampled: (.sampled_seeds|length), bw: .bandwidth_gbps,
          worker_end: .worker.end, out: (.worker.output | .[0:600])}' "$OUTDIR/$name.json"
}
run gemm_nocompile linear_relu solutions-build/gemm_bias_relu --no-compile
run cublas_2048 matmul_2048 solutions-fast/cublas_gemm --no-compile
run second_stream matmul_2048 solutions-adversarial/second_stream --no-compile
run cublas_wrong scale_and_rowsum solutions-adversarial/cublas_wrong_class --no-compile
if [ "${SMOKE_SUITE:-1}" = 1 ]; then
  echo "=== gpu suite"
  timeout "${SUITE_TIMEOUT:-400}" meson test -C "$BUILD" --suite gpu --print-errorlogs >"$OUTDIR/suite.log" 2>&1
  echo "suite exit $?"
  grep -E "^ *[0-9]+/[0-9]+ " "$OUTDIR/suite.log"
  cp "$BUILD/meson-logs/testlog.txt" "$OUTDIR/" 2>/dev/null
  grep -E "^(solution|[a-z_0-9]+ +(ok|incorrect|hack|runtime|timeout|static|infra|crash|none|kbprof))" "$BUILD/meson-logs/testlog.txt" | head -60
fi
