#!/usr/bin/env bash
# GPU acceptance of kbprof (issue 5), on the GPU machine after
# `bash scripts/gpu/carry.sh` here and `bash scripts/gpu/build.sh build-gpu` there:
#
#   suite      meson test --suite gpu (kbcheck on CUDA solutions, the adversarial suite)
#   parity     the gpu-timing task bundles (made by gpu-validate-tasks.sh timing-import):
#              kbprof's eager and compile medians (baselines only, no cache) against
#              scripts/gpu/prof_parity.py's torch.cuda.Event medians of model(*x) and
#              torch.compile(model)(*x), in the same call, plain and with kbprof's head start
#              (prints both). PASS: >= 5 tasks within 3% on both, timed the same way.
#   repeat     5 separate kbprof runs of testdata/solutions-bench/matmul_square_cublas (cached
#              baselines): coefficient of variation of the candidate's median. PASS: <= 1%.
#   repeat2048 the same for testdata/tasks/matmul_2048 with solutions-fast/cublas_gemm (0.34 ms)
#   bench      one agent iteration on a changed candidate with cached baselines (scripts/bench/iteration.sh)
#
#   KB_BUILD=build-gpu bash scripts/gpu/validate-prof.sh [suite] [parity] [repeat] [repeat2048] [bench]
#
# Writes its tables to $OUT/prof-*.txt when OUT is set (the device tool's output folder).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
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
    "$PY" "$ROOT/scripts/gpu/prof_parity.py" "$t" --calls 1 --warmup 1 >/dev/null 2>&1 &
  done
  wait
  "$PY" "$ROOT/scripts/gpu/prof_parity.py" "${tasks[@]}" --calls 100 >"$WORK/parity-python.jsonl" 2>"$WORK/parity-python.err"
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
def pct(a, b): return 100 * (a / b - 1) if a and b else float("nan")
good_plain = good_hs = 0
print("kbprof (head start) against Python's torch.cuda.Event timing, plain (py) and with the same head start (py hs); ms, diff = kbprof / python - 1")
print(f"{'task':34} {'py eager':>9} {'py hs':>8} {'kbprof':>8} {'diff':>7} {'diff hs':>7} | {'py comp':>8} {'py hs':>8} {'kbprof':>8} {'diff':>7} {'diff hs':>7} | {'aoti hs':>8} {'diff':>7} | {'dev eager':>9} {'dev comp':>9}")
for l in open(sys.argv[2]):
    k = json.loads(l); p = py.get(k["task"], {})
    name = k["task"].split("/kernelbench/")[-1][:34]
    if "error" in p or not k.get("eager") or not p:
        print(f"{name:34} python: {p.get('error','?')[:60]} kbprof: {k.get('status')} {str(k.get('message'))[:60]} {str(k.get('compile_error'))[:60]}"); continue
    e, c = k["eager"], k.get("compile")
    de, deh = pct(e, p["eager_median_ms"]), pct(e, p.get("eager_hs_median_ms"))
    dc, dch = pct(c, p["compile_median_ms"]), pct(c, p.get("compile_hs_median_ms"))
    da = pct(c, p.get("aoti_hs_median_ms"))
    ok_plain = abs(de) <= 3 and abs(dc) <= 3
    ok_hs = abs(deh) <= 3 and abs(dch) <= 3
    good_plain += ok_plain; good_hs += ok_hs
    flag = ("ok" if ok_plain else "--") + "/" + ("ok" if ok_hs else "--")
    print(f"{name:34} {p['eager_median_ms']:9.4f} {p.get('eager_hs_median_ms') or 0:8.4f} {e:8.4f} {de:+6.2f}% {deh:+6.2f}% | "
          f"{p['compile_median_ms']:8.4f} {p.get('compile_hs_median_ms') or 0:8.4f} {c or 0:8.4f} {dc:+6.2f}% {dch:+6.2f}% | "
          f"{p.get('aoti_hs_median_ms') or 0:8.4f} {da:+6.2f}% | {k.get('eager_device') or 0:9.4f} {k.get('compile_device') or 0:9.4f} {flag}")
print(f"within 3% on both eager and compile: {good_plain} tasks against plain Python timing, {good_hs} against Python with the same head start")
print("(the aoti column: the very package kbprof times as its compile baseline, called from Python)")
sys.exit(0 if good_hs >= 5 else 1)
PYEOF
}

# repeat_case TAG TASK SOLUTION [kbprof flags]: one untimed run (fills the baseline
# cache), then 5 separate runs; the CV of the candidate's event and device medians.
repeat_case() {
  local tag=$1 task=$2 sol=$3; shift 3
  say "repeatability ($tag): 5 kbprof runs, $sol on $task $*"
  [ -d "$task" ] || { echo "no $task"; return 1; }
  "$KBPROF" "$task" "$sol" -q --json "$WORK/repeat-$tag-0.json" "$@"
  for i in 1 2 3 4 5; do
    "$KBPROF" "$task" "$sol" -q --json "$WORK/repeat-$tag-$i.json" "$@"
    jq -c '{status, median: .timings.candidate.median_ms, device: .timings.candidate.device.median_ms,
            ci: .timings.candidate.ci95_half_width, n: .timings.candidate.n, cached: .timings.eager.cached,
            head_start_us, speedup_vs_compile, seconds}' "$WORK/repeat-$tag-$i.json"
  done | tee "$WORK/repeat-$tag.jsonl"
  "$PY" - "$WORK/repeat-$tag.jsonl" "$tag" <<'PYEOF' | tee "$OUTDIR/prof-repeat-$tag.txt"
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(sys.argv[2] + ": event medians", " ".join(f"{r.get('median') or 0:.4f}" for r in rows),
      "| device medians", " ".join(f"{r.get('device') or 0:.4f}" for r in rows))
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

# The criterion's case (4096^2 GEMM, 2.7 ms) and a shorter kernel (2048^2, 0.34 ms).
step_repeat() {
  repeat_case matmul4096 "$MATMUL" "$ROOT/testdata/solutions-bench/matmul_square_cublas"
}
step_repeat2048() {
  repeat_case matmul2048 "$ROOT/testdata/tasks/matmul_2048" "$ROOT/testdata/solutions-fast/cublas_gemm" --no-compile
}

step_bench() {
  say "bench: one agent iteration"
  KBPROF="$KBPROF" KBCHECK="$BUILD/tools/kbcheck/kbcheck" bash "$ROOT/scripts/bench/iteration.sh" "$MATMUL" \
    "$ROOT/testdata/solutions-bench/matmul_square_cublas" 3 | tee "$OUTDIR/prof-bench.txt"
}

for s in "${steps[@]}"; do
  case "$s" in
    suite|parity|repeat|repeat2048|bench)
      if "step_$s"; then echo "PASS $s"; else echo "FAIL $s"; status=1; fi ;;
    *) echo "unknown step $s"; exit 2 ;;
  esac
done
exit $status
