#!/usr/bin/env bash
# GPU acceptance of kbsynth synthesis (issue 7), run on the GPU machine in one
# device call (two if the first runs out of time):
#
#   build  scripts/gpu/build.sh $KB_BUILD kbsynth (the GPU-side build with the
#          carried .carry/; only the kbsynth target)
#   run    compose N tasks (default 300) with the rule composer (gpu profile,
#          seed 1) and run them through every filter on CUDA: parse, eager,
#          deterministic, nondegenerate, decontam (against testdata/tasks-src,
#          plus $KB_KERNELBENCH when set) and timing (eager 1-100 ms, CUDA
#          events, the GPU held alone) in one pass of long-lived workers, then
#          torch.compile for the survivors in parallel workers; print the
#          funnel, the similarity histogram and the time per task
#
#   bash scripts/gpu/validate-synth.sh [build] [run]      (default: both)
#
# Each call stays within KB_SYNTH_CALL_S seconds (default 510, so a 600 s
# device call ends well inside its limit): the filter gets what is left as
# --time-limit, stops there with its manifest saved, and the next call
# resumes. With $OUT set, the report (gpu-synth-report.txt), kbsynth's stats
# as JSON, and the run folder (gpu-synth-run.tar.gz: synth.json, manifest,
# times, programs) are written there. A machine that went cold between calls
# resumes from that tarball when it is carried back as
# .synth-resume/gpu-synth-run.tar.gz (KB_SYNTH_RESUME).
#
# Environment: KB_SYNTH_N (300), KB_SYNTH_SEED (1), KB_SYNTH_JOBS (filter-pass
# workers; 12), KB_SYNTH_COMPILE_JOBS (torch.compile workers; the cores, at
# most 16), KB_SYNTH_TASK_TIMEOUT (seconds per task; 120), KB_SYNTH_WORK
# (default $KB_BUILD/gpu-synth), KB_SYNTH_DEVICE and KB_SYNTH_PROFILE (cuda,
# gpu; cpu and tiny make a dry run of the mechanics), KB_KERNELBENCH (a KernelBench checkout, if
# the machine has one), KB_PYTHON (default python3), KB_BUILD (build-gpu).
set -uo pipefail
T_START=$(date +%s)
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export KB_PYTHON="${KB_PYTHON:-$(command -v python3)}"
BUILD="${KB_BUILD:-$ROOT/build-gpu}"
WORK="${KB_SYNTH_WORK:-$BUILD/gpu-synth}"
N="${KB_SYNTH_N:-300}"
SEED="${KB_SYNTH_SEED:-1}"
JOBS="${KB_SYNTH_JOBS:-12}"
CJOBS="${KB_SYNTH_COMPILE_JOBS:-0}"
CALL_S="${KB_SYNTH_CALL_S:-510}"
DEVICE="${KB_SYNTH_DEVICE:-cuda}"      # cpu: a dry run of this script's mechanics (no timing)
PROFILE="${KB_SYNTH_PROFILE:-gpu}"
RESUME="${KB_SYNTH_RESUME:-$ROOT/.synth-resume/gpu-synth-run.tar.gz}"
export KB_SYNTH_TASK_TIMEOUT="${KB_SYNTH_TASK_TIMEOUT:-120}"
KBSYNTH="$BUILD/tools/kbsynth/kbsynth"
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(build run)
status=0

step_build() {
  echo "=== build ($BUILD)"
  local t0=$(date +%s)
  bash "$ROOT/scripts/gpu/build.sh" "$BUILD" kbsynth || return 1
  echo "build $(( $(date +%s) - t0 )) s"
}

# The run folder from an earlier call's $OUT, when this machine has none.
restore() {
  [ -f "$WORK/manifest.jsonl" ] && return 0
  [ -f "$RESUME" ] || return 0
  echo "resuming from $RESUME"
  mkdir -p "$WORK" && tar -xzf "$RESUME" -C "$WORK" || return 1
  # Reference paths are recorded absolute; this checkout may live elsewhere.
  "$KB_PYTHON" - "$WORK/synth.json" "$ROOT" <<'PY'
import json, sys
p, root = sys.argv[1], sys.argv[2]
c = json.load(open(p))
f = c.get("filter") or {}
f["references"] = [root + r[r.index("/testdata/"):] if "/testdata/" in r else r for r in f.get("references", [])]
c["catalog"] = root + "/testdata/synth/seeds.json"
json.dump(c, open(p, "w"), indent=2)
open(p, "a").write("\n")
PY
}

# What the run shows: the funnel and times (kbsynth stats), the acceptance
# checks, and the time per task; into $OUT too when set.
report() {
  local rep="${OUT:+$OUT/gpu-synth-report.txt}"
  rep="${rep:-$WORK.report.txt}"
  {
    echo "kbsynth GPU acceptance run: $N tasks, seed $SEED, commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'), $(date -u +%Y-%m-%dT%H:%MZ)"
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
    "$KBSYNTH" stats "$WORK"
    "$KB_PYTHON" - "$WORK" <<'PY'
import json, os, statistics, sys
work = sys.argv[1]
recs = [json.loads(l) for l in open(os.path.join(work, "manifest.jsonl")) if l.strip()]
times = [json.loads(l) for l in open(os.path.join(work, "times.jsonl")) if l.strip()] \
    if os.path.exists(os.path.join(work, "times.jsonl")) else []
n = len(recs)
done = [r for r in recs if r["status"] in ("kept", "dropped")]
kept = [r for r in recs if r["status"] == "kept"]
st = lambda r, s: (r.get("filter") or {}).get("stages", {}).get(s, {})
timed = [st(r, "timing")["eager_ms"] for r in recs if "eager_ms" in st(r, "timing")]
sims = [st(r, "decontam")["similarity"] for r in recs if isinstance(st(r, "decontam").get("similarity"), (int, float))]
groups = {}
for t in times:
    if "wall_seconds" in t:
        g = groups.setdefault(t["group"], {"wall": 0.0, "tasks": 0, "startup": 0.0, "starts": 0})
        g["wall"] += t["wall_seconds"]; g["tasks"] += t["tasks"]
        g["startup"] += t.get("startup_seconds", 0.0); g["starts"] += t.get("worker_starts", 0)
wall = sum(g["wall"] for g in groups.values())
print(f"\nfilter wall time by stage group (all calls):")
for name, g in groups.items():
    per = g["wall"] / g["tasks"] if g["tasks"] else 0
    print(f"  {name}: {g['wall']:.1f} s for {g['tasks']} tasks = {per:.3f} s per task"
          f" ({g['starts']} worker starts, {g['startup'] / max(g['starts'], 1):.1f} s each)")
print(f"  total {wall:.1f} s for {n} tasks = {wall / max(n, 1):.3f} s per task")
if timed:
    print(f"eager ms of the timed tasks: n={len(timed)} min {min(timed):.3f} median {statistics.median(timed):.3f} max {max(timed):.3f}")
checks = [
    (f"at least 300 composed tasks ({n})", n >= 300),
    (f"every task through every filter it reached ({len(done)} of {n} finished)", len(done) == n),
    ("every kept task passed eager, deterministic, nondegenerate, decontam, timing and compile on CUDA",
     all(all(st(r, s).get("status") == "pass" for s in
             ("eager", "deterministic", "nondegenerate", "decontam", "timing", "compile")) for r in kept)),
    (f"kept tasks' eager ms within [1, 100] ({len(kept)} kept)",
     all(1 <= st(r, "timing").get("eager_ms", -1) <= 100 for r in kept)),
    (f"kept tasks' AST similarity <= 0.9 (max {max(sims) if sims else float('nan'):.3f})",
     all(st(r, "decontam").get("similarity", 1) <= 0.9 for r in kept)),
    (f"some tasks kept ({len(kept)})", len(kept) > 0),
]
for what, ok in checks:
    print(("PASS " if ok else "FAIL ") + what)
sys.exit(0 if all(ok for _, ok in checks) else 1)
PY
  } 2>&1 | tee "$rep"
  local rc=${PIPESTATUS[0]}
  if [ -n "${OUT:-}" ]; then
    "$KBSYNTH" stats "$WORK" --json >"$OUT/gpu-synth-stats.json" 2>/dev/null
    tar -czf "$OUT/gpu-synth-run.tar.gz" -C "$WORK" synth.json manifest.jsonl times.jsonl programs 2>/dev/null
    cp "$WORK.filter.err" "$OUT/gpu-synth-filter.log" 2>/dev/null
    echo "written to $OUT: $(cd "$OUT" && ls | tr '\n' ' ')"
  fi
  return "$rc"
}

step_run() {
  echo "=== run: $N tasks, seed $SEED, $JOBS filter workers, work $WORK"
  [ -x "$KBSYNTH" ] || { echo "no $KBSYNTH: run the build step first"; return 1; }
  "$KB_PYTHON" -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'no CUDA')" || return 1
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || true
  mkdir -p "$(dirname "$WORK")"
  restore || return 1
  refs=(--reference "$ROOT/testdata/tasks-src")
  [ -n "${KB_KERNELBENCH:-}" ] && refs+=(--reference "$KB_KERNELBENCH")
  local t0 t1 t2
  t0=$(date +%s.%N)
  "$KBSYNTH" compose -n "$N" --seed "$SEED" --profile "$PROFILE" -o "$WORK" >"$WORK.compose.jsonl" 2>"$WORK.compose.err" || {
    tail -3 "$WORK.compose.err"; return 1; }
  tail -1 "$WORK.compose.err"
  t1=$(date +%s.%N)
  # What is left of this call's budget, less a minute for the report.
  local limit=$(( CALL_S - ($(date +%s) - T_START) - 45 ))
  [ "$limit" -lt 30 ] && limit=30
  echo "filter: --time-limit $limit s, task timeout $KB_SYNTH_TASK_TIMEOUT s"
  "$KBSYNTH" filter "$WORK" --device "$DEVICE" -j "$JOBS" --compile-jobs "$CJOBS" --time-limit "$limit" "${refs[@]}" \
    >"$WORK.filter.out" 2>>"$WORK.filter.err"
  local rc=$?
  t2=$(date +%s.%N)
  grep -E "^kbsynth: (filtering|filter [a-z+]+:|filter:)" "$WORK.filter.err" | tail -12
  awk -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN { printf "this call: compose %.1f s, filter %.1f s wall\n", b - a, c - b }'
  case $rc in
    0) ;;
    1) echo "filter stopped at its time limit: run this script again to resume (see the header)" ;;
    *) echo "filter exited $rc"; tail -20 "$WORK.filter.err" ;;
  esac
  report
  local rr=$?
  [ $rc -eq 0 ] || return 1
  return $rr
}

for s in "${steps[@]}"; do
  case "$s" in
    build) step_build || status=1 ;;
    run) step_run || status=1 ;;
    *) echo "unknown step $s (build, run)"; status=2 ;;
  esac
done
echo "gpu-synth-run: $([ $status -eq 0 ] && echo PASS || echo FAIL) in $(( $(date +%s) - T_START )) s"
exit $status
