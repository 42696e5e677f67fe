#!/usr/bin/env bash
# GPU acceptance of kbprof (issue 5), on the GPU machine after
# `bash scripts/gpu-carry.sh` here and `bash scripts/gpu-build.sh build-gpu` there:
#
#   suite      meson test --suite gpu (kbcheck on CUDA solutions, the adversarial suite)
#   parity     the gpu-timing task bundles (made by gpu-validate-tasks.sh timing-import):
#              kbprof's eager and compile medians (baselines only, no cache) against
#              scripts/prof_parity.py's torch.cuda.Event medians of model(*x) and
#              torch.compile(model)(*x), in the same call. PASS: >= 5 tasks within 3% on both.
#   repeat     5 separate kbprof runs of testdata/solutions-bench/matmul_square_cublas (cached
#              baselines): coefficient of variation of the candidate's median. PASS: <= 1%.
#   bench      one agent iteration on a changed candidate with cached baselines (scripts/bench-iteration.sh)
#
#   KB_BUILD=build-gpu bash scripts/gpu-validate-prof.sh [suite] [parity] [repeat] [bench]
#
# Writes its tables to $OUT/prof-*.txt when OUT is set (the device tool's output folder).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${KB_BUILD:-$ROOT/build-gpu}"
WORK="${KB_GPU_WORK:-$BUILD/gpu-validate}"
KBPROF="$BUILD/tools/kbprof/kbprof"
PY="${KB_PYTHON:-$(command -v python3)}"
export KB_PYTHON="$PY"
if [ -x /usr/bin/g++ ]; then export CXX=/usr/bin/g++ CC=/usr/bin/gcc; fi
export KB_BASELINE_CACHE="$WORK/baseline-cache"
OUTDIR="${OUT:-$WORK/out}"
mkdir -p "$WORK" "$OUTDIR"
steps=("$@"); [ ${#steps[@]} -eq 0 ] && steps=(suite parity repeat bench)
status=0
say() { printf '\n=== %s\n' "$*"; }
MATMUL="$WORK/timing/kernelbench/level1/1_Matmul_Square"

step_suite() {
  say "gpu suite: kbcheck_gpu, adversarial_gpu"
  meson test -C "$BUILD" kbcheck_gpu adversarial_gpu --print-errorlogs >"$WORK/suite.log" 2>&1
  local rc=$?
  tail -40 "$WORK/suite.log"
  cp "$BUILD/meson-logs/testlog.txt" "$OUTDIR/prof-suite-testlog.txt" 2>/dev/null
  return $rc
}

step_parity() {
  say "parity: kbprof baselines vs torch.cuda.Event (same call)"
  local tasks=("$WORK"/timing/kernelbench/level*/*)
  [ -d "${tasks[0]}" ] || { echo "no task bundles under $WORK/timing: run gpu-validate-tasks.sh timing-import"; return 1; }
  # torch.compile's first compile of each task in parallel (fills inductor's
  # on-disk caches), then the timed pass one task after the other.
  for t in "${tasks[@]}"; do
    "$PY" "$ROOT/scripts/prof_parity.py" "$t" --calls 1 --warmup 1 >/dev/null 2>&1 &
  done
  wait
  "$PY" "$ROOT/scripts/prof_parity.py" "${tasks[@]}" --calls 100 >"$WORK/parity-python.jsonl" 2>"$WORK/parity-python.err"
  : >"$WORK/parity-kbprof.jsonl"
  for t in "${tasks[@]}"; do
    "$KBPROF" "$t" --no-baseline-cache --min-rounds 100 --max-rounds 100 --json "$WORK/parity.json" -q 2>>"$WORK/parity-kbprof.err"
    jq -c --arg t "$t" '{task: $t, status, eager: .timings.eager.median_ms, compile: .timings.compile.median_ms,
      eager_device: .timings.eager.device.median_ms, compile_device: .timings.compile.device.median_ms,
      compile_error: .timings.compile.error, message}' "$WORK/parity.json" >>"$WORK/parity-kbprof.jsonl"
  done
  "$PY" - "$WORK/parity-python.jsonl" "$WORK/parity-kbprof.jsonl" <<'PYEOF' | tee "$OUTDIR/prof-parity.txt"
import json, sys
py = {}
for l in open(sys.argv[1]):
    r = json.loads(l); py[r["task"]] = r
rows, good = [], 0
print(f"{'task':34} {'py eager':>9} {'kbprof':>9} {'diff':>7} | {'py compile':>10} {'kbprof':>9} {'diff':>7} | {'py aoti':>8} {'diff':>7} | {'kb dev eager':>12} {'kb dev comp':>11}")
for l in open(sys.argv[2]):
    k = json.loads(l); p = py.get(k["task"], {})
    name = k["task"].split("/kernelbench/")[-1][:34]
    if "error" in p or not k.get("eager") or not p:
        print(f"{name:34} python: {p.get('error','?')[:60]} kbprof: {k.get('status')} {str(k.get('message'))[:60]} {str(k.get('compile_error'))[:60]}"); continue
    de = k["eager"] / p["eager_median_ms"] - 1
    dc = (k["compile"] / p["compile_median_ms"] - 1) if k.get("compile") else float("nan")
    ok = abs(de) <= 0.03 and abs(dc) <= 0.03
    good += ok
    pa = p.get("aoti_median_ms")
    da = (k["compile"] / pa - 1) if (pa and k.get("compile")) else float("nan")
    print(f"{name:34} {p['eager_median_ms']:9.4f} {k['eager']:9.4f} {100*de:+6.2f}% | {p['compile_median_ms']:10.4f} {k.get('compile') or 0:9.4f} {100*dc:+6.2f}% | {pa or 0:8.4f} {100*da:+6.2f}% | {k.get('eager_device') or 0:12.4f} {k.get('compile_device') or 0:11.4f} {'ok' if ok else ''}")
print(f"{good} tasks within 3% on both eager and compile (the aoti column: the same package kbprof times, from Python)")
sys.exit(0 if good >= 5 else 1)
PYEOF
}

step_repeat() {
  say "repeatability: 5 kbprof runs, matmul_square_cublas on $MATMUL"
  [ -d "$MATMUL" ] || { echo "no $MATMUL"; return 1; }
  "$KBPROF" "$MATMUL" "$ROOT/testdata/solutions-bench/matmul_square_cublas" -q --json "$WORK/repeat-0.json"
  for i in 1 2 3 4 5; do
    "$KBPROF" "$MATMUL" "$ROOT/testdata/solutions-bench/matmul_square_cublas" -q --json "$WORK/repeat-$i.json"
    jq -c '{status, median: .timings.candidate.median_ms, device: .timings.candidate.device.median_ms,
            ci: .timings.candidate.ci95_half_width, n: .timings.candidate.n, cached: .timings.eager.cached,
            speedup_vs_compile, seconds}' "$WORK/repeat-$i.json"
  done | tee "$WORK/repeat.jsonl"
  "$PY" - "$WORK/repeat.jsonl" <<'PYEOF' | tee "$OUTDIR/prof-repeat.txt"
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
for key in ("median", "device"):
    v = [r[key] for r in rows if r.get(key)]
    cv = statistics.stdev(v) / statistics.mean(v) if len(v) > 1 else float("nan")
    print(f"candidate {key} over {len(v)} runs: mean {statistics.mean(v):.4f} ms, CV {100*cv:.3f}%")
v = [r["median"] for r in rows if r.get("median")]
cv = statistics.stdev(v) / statistics.mean(v)
print("PASS" if cv <= 0.01 and len(v) == 5 else "FAIL", "(CV of the CUDA-event median <= 1%)")
sys.exit(0 if cv <= 0.01 and len(v) == 5 else 1)
PYEOF
}

step_bench() {
  say "bench: one agent iteration"
  KBPROF="$KBPROF" KBCHECK="$BUILD/tools/kbcheck/kbcheck" bash "$ROOT/scripts/bench-iteration.sh" "$MATMUL" \
    "$ROOT/testdata/solutions-bench/matmul_square_cublas" 3 | tee "$OUTDIR/prof-bench.txt"
}

for s in "${steps[@]}"; do
  case "$s" in
    suite|parity|repeat|bench)
      if "step_$s"; then echo "PASS $s"; else echo "FAIL $s"; status=1; fi ;;
    *) echo "unknown step $s"; exit 2 ;;
  esac
done
exit $status
