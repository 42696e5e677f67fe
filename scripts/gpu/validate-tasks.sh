#!/usr/bin/env bash
# GPU acceptance of the task bundles (issue 4), run on the GPU machine:
#
#   build    configure and build kbsynth with LibTorch CUDA (-Dtorch_cuda=true,
#            -Dclang=disabled, -Dtests=false) in $KB_BUILD (default build-gpu)
#   samples  import testdata/tasks-src/kernelbench with CUDA compiled baselines
#            (compiled/sm_XY.pt2) and check that C++ reproduces Python on
#            CUDA for seeds 0,1,2 (max abs diff <= 1e-5)
#   timing-import  capture testdata/tasks-src/gpu-timing (forwards of ~1-10 ms
#            on an H200) and build their CUDA baselines
#   timing   (runs timing-import first if it has not run) compare C++ eager / compiled times
#            with Python's model(*x) / torch.compile(model)(*x): pass when at
#            least 5 tasks are within 3% on both
#
#   bash scripts/gpu/validate-tasks.sh [build] [samples] [timing-import] [timing]
#   (default: build samples timing)
#
# Each step prints a table and a PASS/FAIL line; the exit status is non-zero
# if any step failed. Work goes to $KB_GPU_WORK (default $KB_BUILD/gpu-validate,
# an ignored folder, so a second call on a warm machine reuses bundles and
# compiled packages). One call of all three takes several minutes (an
# AOTInductor CUDA build is 20-80 s per task); split it across calls if a call
# is limited to 10 minutes: `build samples`, then `timing-import`, then `timing`.
#
# Environment: KB_PYTHON (python with torch; default python3 on the PATH),
# KB_MESON_ARGS (extra meson setup arguments, e.g. where carried CLI11 /
# nlohmann-json / OpenSSL are), KB_TIME_ITERS (default 20).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export KB_PYTHON="${KB_PYTHON:-$(command -v python3)}"
BUILD="${KB_BUILD:-$ROOT/build-gpu}"
WORK="${KB_GPU_WORK:-$BUILD/gpu-validate}"
KBSYNTH="$BUILD/tools/kbsynth/kbsynth"
ITERS="${KB_TIME_ITERS:-20}"
JOBS="${KB_JOBS:-8}"
# On the H200 machine CXX points at a wrapper (/opt/gcc/bin/g++ -> g++-real)
# with which AOTInductor's packages segfault when Python loads them (seen
# 2026-11-29); the system compiler works.
if [ -x /usr/bin/g++ ]; then export CXX=/usr/bin/g++ CC=/usr/bin/gcc; fi
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(build samples timing)
status=0

say() { printf '\n=== %s\n' "$*"; }

step_build() {
  say "build ($BUILD)"
  if [ ! -f "$BUILD/build.ninja" ]; then
    # shellcheck disable=SC2086
    meson setup "$BUILD" "$ROOT" -Dtorch_cuda=true -Dclang=disabled -Dtests=false ${KB_MESON_ARGS:-} || return 1
  fi
  meson compile -C "$BUILD" kbsynth || return 1
  "$KB_PYTHON" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name(0))"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
  echo "commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
}

# Table of kbsynth check lines (JSONL on stdin).
table() {
  "$KB_PYTHON" -c '
import json, sys
want_time = sys.argv[1] == "time"
rows = [json.loads(l) for l in sys.stdin if l.strip()]
fmt = lambda v: "-" if v is None else ("%.3g" % v)
ok_diff = ok_time = 0
for r in rows:
    line = "%-52s %-8s in %-8s ref %-9s comp %-9s" % (r["id"][-52:], r.get("status"), fmt(r.get("inputs_max_abs_diff")),
        fmt(r.get("reference_max_abs_diff")), fmt(r.get("compiled_max_abs_diff")))
    ok_diff += r.get("status") == "ok"
    if want_time and "eager_ms" in r:
        e, c = r["eager_ms"], r.get("compile_ms", {})
        good = abs(e["ratio"] - 1) <= 0.03 and c and abs(c["ratio"] - 1) <= 0.03
        ok_time += bool(good)
        line += " | eager C++ %.4f ms py %.4f ms x%.3f | compiled C++ %.4f ms py %.4f ms x%.3f | %s" % (
            e["cpp"], e["python"], e["ratio"], c.get("cpp", 0), c.get("python", 0), c.get("ratio", 0),
            "within 3%" if good else "OUTSIDE 3%")
    if r.get("message"):
        line += " | " + r["message"][:200]
    print(line)
print("correct (max abs diff <= threshold): %d of %d" % (ok_diff, len(rows)))
if want_time:
    print("timing within 3%% (eager and compiled): %d of %d" % (ok_time, len(rows)))
    sys.exit(0 if ok_time >= 5 else 1)
sys.exit(0 if rows and ok_diff == len(rows) else 1)
' "$1"
}

# Builds the CUDA baselines of the bundles under $1, $JOBS at a time (each
# AOTInductor build takes about a minute on the H200 machine, mostly CPU).
baselines() {
  mkdir -p "$WORK/baseline-logs"
  find "$1" -name task.json -printf '%h\n' | sort |
    xargs -P "$JOBS" -I{} sh -c 'log="$2/$(echo "$1" | tr / _).log"; "$0" baseline "$1" --device cuda >"$log" 2>&1; tail -1 "$log"' "$KBSYNTH" {} "$WORK/baseline-logs"
}

step_samples() {
  say "samples: import + CUDA baselines + check, seeds 0,1,2"
  local out="$WORK/samples"
  "$KBSYNTH" import "$ROOT/testdata/tasks-src/kernelbench" -o "$out" --compiled none >"$WORK/samples-import.jsonl" || return 1
  baselines "$out"
  "$KBSYNTH" check "$out"/kernelbench/level*/* --device cuda --seeds 0,1,2 >"$WORK/samples-check.jsonl"
  table plain <"$WORK/samples-check.jsonl"
}

step_timing_import() {
  say "timing-import: capture + CUDA baselines of testdata/tasks-src/gpu-timing"
  "$KBSYNTH" import "$ROOT/testdata/tasks-src/gpu-timing" -o "$WORK/timing" --compiled none \
    >"$WORK/timing-import.jsonl" || return 1
  baselines "$WORK/timing"
  "$KB_PYTHON" -c "import json,sys; r=json.load(open(sys.argv[1])); print(json.dumps(r['summary']))" \
    "$WORK/timing/import-report.json"
}

step_timing() {
  local out="$WORK/timing"
  # Bundles and packages from an earlier call (or `timing-import`) are reused.
  [ -f "$out/import-report.json" ] || step_timing_import || return 1
  say "timing: check --time $ITERS"
  "$KBSYNTH" check "$out"/kernelbench/level*/* --device cuda --seeds 0 --max-diff 1e-4 \
    --time "$ITERS" --warmup 10 --repeats 7 >"$WORK/timing-check.jsonl"
  table time <"$WORK/timing-check.jsonl"
}

mkdir -p "$WORK"
for s in "${steps[@]}"; do
  case "$s" in
    build|samples|timing|timing-import)
      if "step_${s//-/_}"; then echo "PASS $s"; else echo "FAIL $s"; status=1; fi ;;
    *) echo "unknown step $s (build, samples, timing-import, timing)"; exit 2 ;;
  esac
done
exit $status
