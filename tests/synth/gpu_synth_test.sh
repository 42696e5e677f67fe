#!/usr/bin/env bash
# GPU suite: a small synthesis run through every filter on CUDA (the timing
# stage measures instead of skipping). Skips (exit 77) without a GPU. The
# 300-task acceptance run is scripts/gpu-synth-run.sh.
# Usage: gpu_synth_test.sh KBSYNTH WORKDIR
set -uo pipefail
KBSYNTH="$1"; WORK="$2"
PY="${KB_PYTHON:-/opt/kb-venv/bin/python3}"
[ -x "$PY" ] || PY=python3
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "no GPU: skipped"; exit 77
fi
if ! "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  echo "torch sees no CUDA device: skipped"; exit 77
fi
ROOT="${KB_SOURCE_ROOT:?}"
rm -rf "$WORK"; mkdir -p "$WORK"
"$KBSYNTH" compose -n 24 --seed 1 -o "$WORK/run" >/dev/null || exit 1
"$KBSYNTH" filter "$WORK/run" --device cuda --reference "$ROOT/testdata/tasks-src" || exit 1
timed=$(jq -s '[.[] | select(.filter.stages.timing.eager_ms != null)] | length' "$WORK/run/manifest.jsonl")
skipped=$(jq -s '[.[] | select(.filter.stages.timing.status == "skipped")] | length' "$WORK/run/manifest.jsonl")
echo "timed $timed tasks, $skipped skipped"
[ "$timed" -gt 0 ] && [ "$skipped" -eq 0 ]
