#!/usr/bin/env bash
# GPU acceptance of kbsynth synthesis (issue 7), run on the GPU machine:
#
#   build  configure and build kbsynth with LibTorch CUDA in $KB_BUILD
#          (default build-gpu; -Dtorch_cuda=true -Dclang=disabled -Dtests=false;
#          carried dependencies from .carry/ when present, see scripts/gpu-carry.sh)
#   run    compose N tasks (default 300) with the rule composer (gpu profile)
#          and run them through every filter on CUDA: parse, eager, deterministic,
#          nondegenerate, decontam (against testdata/tasks-src, plus
#          $KB_KERNELBENCH when set), timing (eager 1-100 ms, CUDA events) and
#          torch.compile; print the funnel, the similarity histogram and the time
#          per task, and a Markdown record for docs/gpu-validation.md
#
#   bash scripts/gpu-synth-run.sh [build] [run]      (default: both)
#
# Environment: KB_SYNTH_N (300), KB_SYNTH_SEED (1), KB_SYNTH_JOBS (filter
# worker processes; default 12), KB_SYNTH_WORK (default $KB_BUILD/gpu-synth),
# KB_KERNELBENCH (a KernelBench checkout, if the machine has one), KB_PYTHON
# (default python3). A second `run` on a warm machine resumes the same run
# folder; delete it (or change KB_SYNTH_SEED) for a fresh one.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export KB_PYTHON="${KB_PYTHON:-$(command -v python3)}"
BUILD="${KB_BUILD:-$ROOT/build-gpu}"
WORK="${KB_SYNTH_WORK:-$BUILD/gpu-synth}"
N="${KB_SYNTH_N:-300}"
SEED="${KB_SYNTH_SEED:-1}"
JOBS="${KB_SYNTH_JOBS:-12}"
KBSYNTH="$BUILD/tools/kbsynth/kbsynth"
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(build run)
status=0

step_build() {
  echo "=== build ($BUILD)"
  if [ -d "$ROOT/.carry" ]; then
    export PKG_CONFIG_PATH="$ROOT/.carry/lib/pkgconfig"
    export PATH="$ROOT/.carry/bin:$PATH"
    export LD_LIBRARY_PATH="$ROOT/.carry/lib/so${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
  if [ ! -f "$BUILD/build.ninja" ]; then
    # shellcheck disable=SC2086
    meson setup "$BUILD" "$ROOT" -Dtorch_cuda=true -Dclang=disabled -Dtests=false ${KB_MESON_ARGS:-} || return 1
  fi
  meson compile -C "$BUILD" kbsynth || return 1
}

step_run() {
  echo "=== run: $N tasks, seed $SEED, $JOBS filter workers, work $WORK"
  [ -x "$KBSYNTH" ] || { echo "no $KBSYNTH: run the build step first"; return 1; }
  "$KB_PYTHON" -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name(0))" || return 1
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
  echo "commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
  refs=(--reference "$ROOT/testdata/tasks-src")
  [ -n "${KB_KERNELBENCH:-}" ] && refs+=(--reference "$KB_KERNELBENCH")
  local t0 t1 t2
  t0=$(date +%s.%N)
  "$KBSYNTH" compose -n "$N" --seed "$SEED" -o "$WORK" >"$WORK.compose.jsonl" 2>"$WORK.compose.err" || {
    tail -3 "$WORK.compose.err"; return 1; }
  tail -1 "$WORK.compose.err"
  t1=$(date +%s.%N)
  "$KBSYNTH" filter "$WORK" --device cuda -j "$JOBS" "${refs[@]}" >"$WORK.filter.out" 2>"$WORK.filter.err"
  local rc=$?
  t2=$(date +%s.%N)
  grep -E "^kbsynth: (filtering|filter:)" "$WORK.filter.err" | tail -8
  cat "$WORK.filter.out"
  [ $rc -eq 0 ] || { echo "filter exited $rc"; tail -20 "$WORK.filter.err"; return 1; }
  "$KB_PYTHON" - "$WORK/manifest.jsonl" "$t0" "$t1" "$t2" <<'PY'
import json, statistics, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
t0, t1, t2 = map(float, sys.argv[2:5])
n = len(recs)
ms = sorted(r["filter"]["stages"]["timing"]["eager_ms"] for r in recs
            if r.get("filter") and "eager_ms" in r["filter"]["stages"].get("timing", {}))
kept = sum(r["status"] == "kept" for r in recs)
print(f"\ncompose {t1 - t0:.1f} s, filter {t2 - t1:.1f} s wall for {n} tasks = {(t2 - t0) / n:.2f} s per task")
if ms:
    print(f"eager ms of the timed tasks: n={len(ms)} min {ms[0]:.3f} median {statistics.median(ms):.3f} max {ms[-1]:.3f}")
print(f"kept {kept} of {n}")
PY
}

for s in "${steps[@]}"; do
  case "$s" in
    build) step_build || status=1 ;;
    run) step_run || status=1 ;;
    *) echo "unknown step $s (build, run)"; status=2 ;;
  esac
done
echo "gpu-synth-run: $([ $status -eq 0 ] && echo PASS || echo FAIL)"
exit $status
