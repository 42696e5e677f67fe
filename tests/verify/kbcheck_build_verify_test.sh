#!/usr/bin/env bash
# Tool-level test of `kbcheck build`, `kbcheck verify` and `kbcheck TASK
# SOLUTION_DIR` on the host-side testdata: exit codes, JSON fields, the
# cache, and bad input. Usage: kbcheck_build_verify_test.sh KBCHECK WORKDIR
set -uo pipefail
KBCHECK="$1"; WORK="$2"
SRC="${KB_SOURCE_ROOT:?}/testdata"
rm -rf "$WORK"; mkdir -p "$WORK"
CACHE="$WORK/cache"
fails=0
check() {  # check NAME CONDITION...
  local name="$1"; shift
  if "$@"; then echo "ok   $name"; else echo "FAIL $name"; fails=$((fails + 1)); fi
}
run() {  # run EXPECTED_RC OUT -- ARGS... ; writes stdout to OUT, stderr to OUT.err
  local want="$1" out="$2"; shift 3
  "$KBCHECK" "$@" >"$out" 2>"$out.err"
  local rc=$?
  if [ "$rc" != "$want" ]; then
    echo "  exit $rc, expected $want: $KBCHECK $*"; head -c 600 "$out.err"; return 1
  fi
}
jqt() { jq -e "$2" "$1" >/dev/null; }

# build: cold, then from the cache.
check "build cpu cold" run 0 "$WORK/b1.json" -- build --device cpu "$SRC/solutions-cpu/ok_linear_relu" --cache-dir "$CACHE" --json -
check "build report fields" jqt "$WORK/b1.json" '.tool == "kbcheck" and .stage == "build" and .status == "ok"
  and (.solution_hash | startswith("sha256:")) and .stages.static.skipped and .stages.verify.skipped
  and (.stages.build.report | .cached == false and (.library | endswith("solution.so"))
       and .target == "cpu" and (.key | startswith("sha256:")) and (.steps | length) == 2)'
check "build cpu warm" run 0 "$WORK/b2.json" -- build --device cpu "$SRC/solutions-cpu/ok_linear_relu" --cache-dir "$CACHE" --json -
check "warm build is cached and fast" jqt "$WORK/b2.json" '.stages.build.report.cached and .stages.build.report.seconds < 0.05'

# compile error: verbatim diagnostics, exit 1.
mkdir -p "$WORK/broken"; printf '#include <kb/solution.h>\nKB_FORWARD(ctx) { nope(); }\n' >"$WORK/broken/forward.cpp"
check "compile error exits 1" run 1 "$WORK/b3.json" -- build --device cpu "$WORK/broken" --cache-dir "$CACHE" --json -
check "compile_error with diagnostics" jqt "$WORK/b3.json" '.status == "compile_error"
  and (.stages.build.report.diagnostics | test("forward.cpp:2:.*nope"))'

# verify: ok, incorrect, crash, each with its fields.
check "verify ok" run 0 "$WORK/v1.json" -- verify --device cpu "$SRC/tasks/linear_relu" "$SRC/solutions-cpu/ok_linear_relu" --cache-dir "$CACHE" --json -
check "verify report fields" jqt "$WORK/v1.json" '.stage == "verify" and .task_id == "testdata/linear_relu"
  and (.stages.verify.report | .status == "ok" and .device == "cpu"
       and ([.seeds[].draw] == ["generator", "generator", "generator", "domain", "domain", "domain"])
       and (.seeds[0].outputs[0] | .max_abs_error < 1e-5 and .mismatches == 0 and .shape == [16, 24])
       and (.worker.confinement | test("seccomp")) and .worker.end == "exit 0")'
check "verify incorrect exits 1" run 1 "$WORK/v2.json" -- verify --device cpu "$SRC/tasks/linear_relu" "$SRC/solutions-cpu/tol_outside" --cache-dir "$CACHE" --json -
check "incorrect names the element" jqt "$WORK/v2.json" '.status == "incorrect"
  and .stages.verify.report.seeds[0].outputs[0].worst_index == [15, 23]'
check "verify crash exits 1" run 1 "$WORK/v3.json" -- verify --device cpu "$SRC/tasks/linear_relu" "$SRC/solutions-cpu/segfault" --cache-dir "$CACHE" --json -
check "crash names the signal" jqt "$WORK/v3.json" '.status == "crash" and .stages.verify.report.worker.signal == "SIGSEGV"'
check "verify text output" run 1 "$WORK/v4.txt" -- verify --device cpu "$SRC/tasks/linear_relu" "$SRC/solutions-cpu/wrong_shape" --cache-dir "$CACHE"
check "text says why" grep -q "has shape \[16, 25\]" "$WORK/v4.txt"

# The combined run stops at the first failing stage.
check "combined run ok" run 0 "$WORK/c1.json" -- --device cpu "$SRC/tasks/linear_relu" "$SRC/solutions-cpu/ok_linear_relu" --cache-dir "$CACHE" --json -
check "combined report has every stage" jqt "$WORK/c1.json" '.status == "ok" and .stage == null
  and .stages.build.status == "ok" and .stages.verify.status == "ok"
  and (.stages | has("static")) and (.stages.static.skipped or .stages.static.status == "ok")'
check "combined run, failing build" run 1 "$WORK/c2.json" -- --device cpu "$SRC/tasks/linear_relu" "$WORK/broken" --cache-dir "$CACHE" --json -
check "verify skipped after a compile error" jqt "$WORK/c2.json" '.status == "compile_error" and .stages.verify.skipped
  and (.message | test("^(static|build): [^\\n]*$"))'

# Bad input: exit 2 with a one-line reason.
check "missing solution dir" run 2 "$WORK/e1" -- verify --device cpu "$SRC/tasks/linear_relu" "$WORK/nonexistent"
check "unknown device" run 2 "$WORK/e2" -- verify --device tpu "$SRC/tasks/linear_relu" "$SRC/solutions-cpu/ok_linear_relu" --cache-dir "$CACHE"
check "one line" test "$(wc -l <"$WORK/e2.err")" -eq 1
check "not a task" run 2 "$WORK/e3" -- verify --device cpu "$SRC/solutions-cpu" "$SRC/solutions-cpu/ok_linear_relu" --cache-dir "$CACHE"
check "no forward.cpp" run 2 "$WORK/e4" -- build --device cpu "$SRC/tasks" --cache-dir "$CACHE"
check "help teaches" run 0 "$WORK/h1" -- verify --help
check "help names the limits" grep -q -- "--timeout" "$WORK/h1"

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
