#!/usr/bin/env bash
# Issue 37, like-for-like baselines on the CPU (docs/kbprof.md "Baselines"):
# a Python-format solution is timed against model.py run by Python, eager
# and under torch.compile (Inductor's C++ backend, g++), and the report
# names both baselines and has a finite compile figure; a native solution
# keeps the LibTorch reference and, asked (--compile-baseline python), gets
# Python's torch.compile; by default on the CPU it has no compile figure and
# the report says why.
# kbreward says which baselines a speed-up is against.
# Usage: kbprof_python_baselines_test.sh KBPROF WORKDIR KBREWARD   (KB_WORKER, KB_SOURCE_ROOT set)
set -uo pipefail
KBPROF="$1"; WORK="$2"; KBREWARD="$3"
SRC="${KB_SOURCE_ROOT:?}/testdata"
TASK="$SRC/tasks/linear_relu"
rm -rf "$WORK"; mkdir -p "$WORK"
fail=0

# run NAME SOLUTION [FLAGS...]: writes $WORK/NAME.json.
run() {
  local name="$1" sol="$2"; shift 2
  "$KBPROF" "$TASK" "$sol" --device cpu --cache-dir "$WORK/cache" --budget 1 --min-rounds 5 --max-rounds 20 \
    -q --json "$WORK/$name.json" "$@" 2>"$WORK/$name.err"
}
# expect NAME JQ-EXPRESSION: the expression must be true of the report.
expect() {
  if [ "$(jq -r "$2" "$WORK/$1.json" 2>/dev/null)" != true ]; then
    echo "FAIL $1: $2"
    jq -c '{status, message, eager_baseline, compile_baseline, compile_baseline_reason, python_baselines,
            compile: .timings.compile}' "$WORK/$1.json" 2>/dev/null || cat "$WORK/$1.err"
    fail=1
  else
    echo "ok   $1: $2"
  fi
}
finite='(type == "number") and . > 0 and . < 1e9'

run python "$SRC/solutions-python/ok_linear_relu"
expect python '.status == "ok"'
expect python '.eager_baseline == "python" and .timings.eager.baseline == "python"'
expect python '.compile_baseline == "python_compile" and .timings.compile.baseline == "python_compile"'
expect python "(.timings.compile.median_ms | $finite) and (.speedup_vs_compile | $finite)"
expect python '(.compile_baseline_reason | test("Python-format")) and .python_baselines.max_abs_diff_vs_eager == 0'

"$KBREWARD" score "$WORK/python.json" > "$WORK/score.json" 2>"$WORK/score.err"
expect score '.baselines == {"eager": "python", "compile": "python_compile"} and .timings.compile.baseline == "python_compile"'

run native_python "$SRC/solutions-cpu/ok_linear_relu" --compile-baseline python
expect native_python '.status == "ok" and .eager_baseline == "libtorch" and .compile_baseline == "python_compile"'
expect native_python ".timings.compile.median_ms | $finite"

run native "$SRC/solutions-cpu/ok_linear_relu"
expect native '.status == "ok" and .eager_baseline == "libtorch" and .compile_baseline == null'
expect native '(.timings.compile.error | test("no AOTInductor package")) and .compile_baseline_reason == .timings.compile.error'

run native_none "$SRC/solutions-cpu/ok_linear_relu" --compile-baseline none
expect native_none '.compile_baseline == null and (.compile_baseline_reason | test("not asked"))'

exit $fail
