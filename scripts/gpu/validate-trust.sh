#!/usr/bin/env bash
# Issue 17 on the GPU machine (docs/gpu-validation.md, "The reward survives a
# determined attacker"): the trust boundary's run-time half and its cost.
#   build        scripts/gpu/build.sh into $KB_BUILD (default build-gpu)
#   adversarial  the gpu suite's adversarial_gpu and kbcheck_gpu tests (every
#                entry of testdata/solutions-adversarial/expected.json, or those
#                ADV_ONLY names), their reports packed into adversarial-reports.tar.gz
#   suite        the whole gpu suite (meson test --suite gpu)
#   bench        scripts/bench/iteration.sh on testdata/tasks/matmul_2048 +
#                solutions-fast/cublas_gemm (the issue's 1.9 s reference)
#   import       imports KernelBench level2/12_Gemm_Multiply_LeakyReLU from
#                $KB_KERNELBENCH (default ../shared/kernelbench; on the device
#                machine a carried copy) with its sm_90 compiled baseline
#   kernelbench  bench-iteration.sh on that task with
#                solutions-bench/gemm_mul_leakyrelu (the issue's 3.1 s reference)
# Logs go to $OUT (default ./gpu-out), one file per step; the imported task to
# $KB_TASKS (default $OUT/kb-tasks) and baselines to $KB_BASELINE_CACHE (default
# $OUT/.baselines): point both at a directory that outlives $OUT to bench again
# without importing again. KB_BENCH_KEEP: keep each iteration's kbprof report.
# Usage: bash scripts/gpu/validate-trust.sh STEP...
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
B="${KB_BUILD:-$ROOT/build-gpu}"
OUT="${OUT:-$ROOT/gpu-out}"
KB="${KB_KERNELBENCH:-$ROOT/../shared/kernelbench}"
mkdir -p "$OUT"
export PATH="$ROOT/.carry/bin:$PATH"
export KB_BASELINE_CACHE="${KB_BASELINE_CACHE:-$OUT/.baselines}"
rc=0
for step in "$@"; do
  echo "== $step $(date +%T)"
  case "$step" in
    build)
      bash "$ROOT/scripts/gpu/build.sh" "$B" >"$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; } ;;
    adversarial)
      meson test -C "$B" --no-rebuild --print-errorlogs adversarial_gpu kbcheck_gpu >"$OUT/adversarial.log" 2>&1 || rc=1
      grep -E "^(ok|FAIL|MISMATCH|[a-z_0-9]+ +)" "$B/meson-logs/testlog.txt" | head -120 >"$OUT/adversarial-table.txt"
      cp "$B/meson-logs/testlog.txt" "$OUT/adversarial-testlog.txt"
      # Every entry's reports (kbcheck, kbprof), for the record.
      tar -czf "$OUT/adversarial-reports.tar.gz" --exclude=cache --exclude="baselines-*" -C "$B/tests/gpu" adversarial-gpu-work 2>/dev/null
      tail -5 "$OUT/adversarial.log" ;;
    suite)
      meson test -C "$B" --no-rebuild --print-errorlogs --suite gpu >"$OUT/suite.log" 2>&1 || rc=1
      cp "$B/meson-logs/testlog.txt" "$OUT/suite-testlog.txt"
      tail -12 "$OUT/suite.log" ;;
    bench)
      # matmul_2048 has no compiled baseline in the repository: eager only, as
      # the issue's 1.9 s reference was measured (gpu-validate-prof.sh).
      KB_BENCH_ARGS=--no-compile KBPROF="$B/tools/kbprof/kbprof" KBCHECK="$B/tools/kbcheck/kbcheck" \
        bash "$ROOT/scripts/bench/iteration.sh" "$ROOT/testdata/tasks/matmul_2048" \
        "$ROOT/testdata/solutions-fast/cublas_gemm" 5 >"$OUT/bench-matmul2048.log" 2>&1 || rc=1
      cat "$OUT/bench-matmul2048.log" ;;
    import)
      T="${KB_TASKS:-$OUT/kb-tasks}"
      "$B/tools/kbsynth/kbsynth" import "$KB/level2/12_Gemm_Multiply_LeakyReLU.py" -o "$T" \
        --id kernelbench/level2/12_Gemm_Multiply_LeakyReLU --compiled cuda >"$OUT/kb-import.log" 2>&1 || rc=1
      tail -3 "$OUT/kb-import.log" ;;
    kernelbench)
      T="${KB_TASKS:-$OUT/kb-tasks}"
      TASK="$T/kernelbench/level2/12_Gemm_Multiply_LeakyReLU"
      KBPROF="$B/tools/kbprof/kbprof" KBCHECK="$B/tools/kbcheck/kbcheck" \
        bash "$ROOT/scripts/bench/iteration.sh" "$TASK" "$ROOT/testdata/solutions-bench/gemm_mul_leakyrelu" 5 \
        >"$OUT/bench-l2-12.log" 2>&1 || rc=1
      cat "$OUT/bench-l2-12.log" ;;
    *) echo "unknown step $step"; exit 2 ;;
  esac
done
exit $rc
