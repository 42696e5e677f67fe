#!/usr/bin/env bash
# kbprof's command line where no GPU is needed: help, bad input, a compile
# error (nvcc runs here), a library that imports torch symbols (read before
# anything runs), an unknown device refused, a CPU solution timed on the host, and kbreward reading two reports
# recorded on the H200. Usage: kbprof_cli_test.sh KBPROF WORKDIR KBREWARD
set -uo pipefail
KBPROF="$1"; WORK="$2"; KBREWARD="${3:-}"
SRC="${KB_SOURCE_ROOT:?}/testdata"
rm -rf "$WORK"; mkdir -p "$WORK"
fail=0
expect() {  # expect NAME WANT_RC GOT_RC
  if [ "$2" != "$3" ]; then echo "FAIL $1: exit $3, expected $2"; fail=1; else echo "ok   $1"; fi
}

"$KBPROF" --help >"$WORK/help.txt"; expect help 0 $?
grep -q "baseline cache" "$WORK/help.txt" || { echo "FAIL help lacks the baseline cache"; fail=1; }
grep -q "Exit status" "$WORK/help.txt" || { echo "FAIL help lacks exit codes"; fail=1; }

"$KBPROF" 2>"$WORK/noargs.err"; expect no-args 2 $?
"$KBPROF" "$WORK/nope" "$SRC/solutions-build/gemm_bias_relu" 2>"$WORK/missing.err"; expect missing-task 2 $?
"$KBPROF" "$SRC/tasks/linear_relu" "$SRC/solutions-build/gemm_bias_relu" --target-ci 2 2>/dev/null; expect bad-target 2 $?

# A compile error: reported as JSON, exit 1.
mkdir -p "$WORK/broken"
printf '#include <kb/solution.h>\nKB_FORWARD(ctx) { this is not C++; }\n' >"$WORK/broken/forward.cpp"
"$KBPROF" "$SRC/tasks/linear_relu" "$WORK/broken" --arch sm_90 --cache-dir "$WORK/cache" --json "$WORK/broken.json" -q
expect compile-error 1 $?
[ "$(jq -r .status "$WORK/broken.json")" = compile_error ] || { echo "FAIL broken.json status"; fail=1; }
[ "$(jq -r .tool "$WORK/broken.json")" = kbprof ] || { echo "FAIL broken.json tool"; fail=1; }

# Torch behind a weak declaration: hack_detected before any GPU is needed.
"$KBPROF" "$SRC/tasks/linear_relu" "$SRC/solutions-bench/weak_aten_relu" --arch sm_90 --cache-dir "$WORK/cache" \
  --json "$WORK/weak.json" -q
expect weak-aten 1 $?
[ "$(jq -r .status "$WORK/weak.json")" = hack_detected ] || { echo "FAIL weak.json status: $(jq -c . "$WORK/weak.json" | head -c 400)"; fail=1; }
jq -r '.evidence[0]' "$WORK/weak.json" | grep -q "_ZN2at5relu_" || { echo "FAIL weak.json evidence"; fail=1; }

# A device kbprof does not know: bad input, said before any work.
"$KBPROF" "$SRC/tasks/linear_relu" "$SRC/solutions-build/gemm_bias_relu" --arch sm_90 --cache-dir "$WORK/cache" \
  --device tpu 2>"$WORK/tpu.err"
expect unknown-device 2 $?
grep -q "tpu" "$WORK/tpu.err" || { echo "FAIL tpu.err: $(cat "$WORK/tpu.err")"; fail=1; }
# --device cpu times a CPU solution with the host clock (tests/profile/kbprof_cpu_timed_test.sh goes further).
"$KBPROF" "$SRC/tasks/linear_relu" "$SRC/solutions-cpu/ok_linear_relu" --device cpu --cache-dir "$WORK/cache" \
  --budget-s 0.5 --json "$WORK/cpu.json" -q
expect cpu-device 0 $?
[ "$(jq -r .timing_method "$WORK/cpu.json")" = host_clock ] || { echo "FAIL cpu.json timing_method"; fail=1; }
# kbreward reads kbprof's reports (recorded on the H200: testdata/prof/README.md).
if [ -n "$KBREWARD" ]; then
  "$KBREWARD" --prof "$SRC/prof/second_stream.json" >"$WORK/r1.json" 2>/dev/null
  [ "$(jq -r .reward "$WORK/r1.json")" = "-1.0" ] || [ "$(jq -r .reward "$WORK/r1.json")" = "-1" ] \
    || { echo "FAIL kbreward on hack_detected: $(cat "$WORK/r1.json")"; fail=1; }
  "$KBREWARD" --prof "$SRC/prof/cublas_2048.json" >"$WORK/r2.json" 2>/dev/null
  [ "$(jq -r .excluded "$WORK/r2.json")" = "missing_timings" ] || { echo "FAIL kbreward without compile timing: $(cat "$WORK/r2.json")"; fail=1; }
  [ "$(jq -r .timings.candidate.n "$WORK/r2.json")" = "131" ] || { echo "FAIL kbreward timings"; fail=1; }
  echo "ok   kbreward reads kbprof reports"
fi
exit $fail
