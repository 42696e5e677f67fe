#!/usr/bin/env bash
# Issue 37, like-for-like baselines on the CPU (docs/kbprof.md "Baselines"):
# a Python-format solution is timed against model.py run by Python, eager
# and under torch.compile (Inductor's C++ backend, g++), and the report
# names both baselines and has a finite compile figure; a native solution
# keeps the LibTorch reference and, asked (--compile-baseline python), gets
# Python's torch.compile; by default on the CPU it has no compile figure and
# the report says why.
# kbreward says which baselines a speed-up is against.
#
# The baseline cache (docs/kbprof.md, "Baselines are cached"), on the CPU
# with --cache-cpu-baselines: a failing candidate's profile still stores
# the baselines its worker measured; the next profile hits them; a poisoned
# Python entry (an eager median 1000x too slow, a compile figure of 77.7 ms)
# is re-checked, found wrong and replaced by a full timing (the one
# torch.compile of the Python kinds here); a second Python profile hits the
# replaced entry and runs no torch.compile at all (compile_run false, no
# compile_seconds); a cached compile failure comes back with its reason.
# Two torch.compile runs in all (python, native_python), as before.
# Usage: kbprof_python_baselines_test.sh KBPROF WORKDIR KBREWARD   (KB_WORKER, KB_SOURCE_ROOT set)
set -uo pipefail
KBPROF="$1"; WORK="$2"; KBREWARD="$3"
SRC="${KB_SOURCE_ROOT:?}/testdata"
TASK="$SRC/tasks/linear_relu"
rm -rf "$WORK"; mkdir -p "$WORK"
BL="$WORK/baselines"
fail=0

# run NAME SOLUTION [FLAGS...]: writes $WORK/NAME.json.
run() {
  local name="$1" sol="$2"; shift 2
  "$KBPROF" "$TASK" "$sol" --device cpu --cache-dir "$WORK/cache" --budget 1 --min-rounds 5 --max-rounds 20 \
    -q --json "$WORK/$name.json" "$@" 2>"$WORK/$name.err"
}
# The same with the baseline cache (host-clock times; a hit stands when the
# re-check is within a factor 2 of it: the test is about the cache, not
# this machine's noise).
cached_run() { run "$@" --baseline-cache "$BL" --cache-cpu-baselines --check-tolerance 1; }
# expect NAME JQ-EXPRESSION: the expression must be true of the report.
expect() {
  if [ "$(jq -r "$2" "$WORK/$1.json" 2>/dev/null)" != true ]; then
    echo "FAIL $1: $2"
    jq -c '{status, message, eager_baseline, compile_baseline, compile_baseline_reason, python_baselines,
            baselines_cached, baselines_written, baseline_cache_note, baseline_check,
            compile: .timings.compile}' "$WORK/$1.json" 2>/dev/null || cat "$WORK/$1.err"
    fail=1
  else
    echo "ok   $1: $2"
  fi
}
# expect_file FILE JQ-EXPRESSION: the same of a cache entry.
expect_file() {
  if [ "$(jq -r "$2" "$1" 2>/dev/null)" != true ]; then
    echo "FAIL $(basename "$1"): $2"; jq -c . "$1" 2>/dev/null || echo "(no file)"; fail=1
  else
    echo "ok   $(basename "$1"): $2"
  fi
}
finite='(type == "number") and . > 0 and . < 1e9'
no_compile_run='(.python_baselines.compile_run == false) and (.python_baselines | has("compile_seconds") | not)'

# 1. A failing native candidate: its baselines (LibTorch eager, no compile
# figure on the CPU) were measured before its library was opened, so they
# are stored although it failed.
cached_run native_fail "$SRC/solutions-cpu/wrong_result"
expect native_fail '.status == "incorrect" and .baselines_written == true and .baselines_cached == false'
native_entry=$(ls "$BL"/*-libtorch_none.json 2>/dev/null | head -1)
[ -n "$native_entry" ] || { echo "FAIL native_fail: no libtorch+none entry in $BL"; ls -l "$BL"; exit 1; }

# 2. The native candidate hits them.
cached_run native "$SRC/solutions-cpu/ok_linear_relu"
expect native '.status == "ok" and .eager_baseline == "libtorch" and .compile_baseline == null'
expect native '(.timings.compile.error | test("no AOTInductor package")) and .compile_baseline_reason == .timings.compile.error'
expect native '.baselines_cached == true and .timings.eager.cached == true and .baseline_check.agrees == true and .baselines_written == false'

# 3. A poisoned entry for the Python kinds, keyed like the native one (same
# task, CPU, torch, method) plus model.py's hash: eager 1000x slower than
# measured (it would inflate every speed-up), a compile figure of 77.7 ms.
py_entry="${native_entry%-libtorch_none.json}-python_python_compile.json"
model_hash="sha256:$(sha256sum "$TASK/model.py" | cut -d' ' -f1)"
jq --arg mh "$model_hash" '.key.baselines = "python+python_compile" | .key.model_hash = $mh
    | .eager.median_ms *= 1000 | .eager.cached = false
    | .compile = (.eager | .median_ms = 77.7)
    | .eager_baseline = "python" | .compile_baseline = "python_compile"
    | .compile_baseline_reason = "poisoned"' "$native_entry" > "$py_entry"

# 4. The Python candidate: the re-check of Python eager disagrees, both are
# timed afresh (torch.compile run) and the entry replaced.
run python "$SRC/solutions-python/ok_linear_relu" --baseline-cache "$BL" --cache-cpu-baselines
expect python '.status == "ok"'
expect python '.eager_baseline == "python" and .timings.eager.baseline == "python"'
expect python '.compile_baseline == "python_compile" and .timings.compile.baseline == "python_compile"'
expect python "(.timings.compile.median_ms | $finite) and (.speedup_vs_compile | $finite)"
expect python '(.compile_baseline_reason | test("Python-format")) and .python_baselines.max_abs_diff_vs_eager == 0'
expect python '.baseline_check.agrees == false and .baseline_check.replaced == true and .baselines_cached == false'
expect python '.python_baselines.compile_run == true and (.python_baselines.compile_seconds | type == "number")'
expect python '.baselines_written == true and .timings.compile.median_ms != 77.7'
expect_file "$py_entry" '.key.baselines == "python+python_compile" and .compile.median_ms != 77.7 and .compile_baseline_reason != "poisoned"'
expect_file "$py_entry" ".key.model_hash == \"$model_hash\""
expect_file "$py_entry" ".eager.median_ms == $(jq '.timings.eager.median_ms' "$WORK/python.json")"

"$KBREWARD" score "$WORK/python.json" > "$WORK/score.json" 2>"$WORK/score.err"
expect score '.baselines == {"eager": "python", "compile": "python_compile"} and .timings.compile.baseline == "python_compile"'

# 5. Again: a hit on the replaced entry, no torch.compile in this profile.
cached_run python_cached "$SRC/solutions-python/ok_linear_relu"
expect python_cached '.status == "ok" and .baselines_cached == true and .baseline_check.agrees == true'
expect python_cached '.timings.eager.cached == true and .timings.compile.cached == true and .baselines_written == false'
expect python_cached "$no_compile_run"
expect python_cached '.eager_baseline == "python" and .compile_baseline == "python_compile" and (.compile_baseline_reason | test("Python-format"))'
expect python_cached ".timings.compile.median_ms == $(jq '.timings.compile.median_ms' "$WORK/python.json")"

# 6. A cached torch.compile failure: no figure, its reason, no retry.
jq '.compile = {"error": "python_compile: torch.compile: a cached failure"} | .compile_baseline = null
    | .compile_baseline_reason = .compile.error' "$py_entry" > "$py_entry.new" && mv "$py_entry.new" "$py_entry"
cached_run python_cached_error "$SRC/solutions-python/ok_linear_relu"
expect python_cached_error '.status == "ok" and .baselines_cached == true and .compile_baseline == null'
expect python_cached_error '(.timings.compile.error | test("a cached failure")) and .compile_baseline_reason == .timings.compile.error'
expect python_cached_error "$no_compile_run"

# 7. A native candidate against Python's torch.compile (no cache: its own
# torch.compile run).
run native_python "$SRC/solutions-cpu/ok_linear_relu" --compile-baseline python
expect native_python '.status == "ok" and .eager_baseline == "libtorch" and .compile_baseline == "python_compile"'
expect native_python ".timings.compile.median_ms | $finite"

# 8. No compile figure asked: a hit on the libtorch+none entry says so (the
# reason is this run's, not the entry's "no AOTInductor package").
cached_run native_none "$SRC/solutions-cpu/ok_linear_relu" --compile-baseline none
expect native_none '.compile_baseline == null and (.compile_baseline_reason | test("not asked")) and .baselines_cached == true'

exit $fail
