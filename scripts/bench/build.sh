#!/usr/bin/env bash
# Build benchmark (printed, not asserted): the testdata GEMM + bias + ReLU
# solution (testdata/solutions-build/gemm_bias_relu: cuBLAS GEMM and a fused
# epilogue kernel; one .cu, one .cpp) built by `kbcheck build`:
#   cold         a fresh cache each time (nvcc + g++ in parallel, link, and
#                the compilers' --version runs)
#   warm         the same solution again (a cache hit)
#   device-only  a fresh cache each time, NVRTC on the .cu
# Reports the library's own time (the report's `seconds`) and the process
# wall time, min/median/max over N runs, and the ratio to the paper's
# workspace (20-22 s per build on an H200, measured 2026-11-29).
# Usage: bash scripts/bench/build.sh [N]   (KBCHECK=path/to/kbcheck to choose the binary)
set -euo pipefail
N="${1:-5}"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
KBCHECK="${KBCHECK:-$ROOT/build/tools/kbcheck/kbcheck}"
SOL="$ROOT/testdata/solutions-build/gemm_bias_relu"
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT

stats() {  # reads numbers, prints "min median max"
  sort -g | awk '{ a[NR] = $1 } END { printf "%.4f %.4f %.4f", a[1], a[int((NR + 1) / 2)], a[NR] }'
}
one() {  # one LABEL ARGS...: prints "library_s wall_s"
  local s e
  s=$(date +%s%N)
  "$KBCHECK" build "$@" --json "$T/r.json" -q
  e=$(date +%s%N)
  printf '%s %s\n' "$(jq -r .stages.build.report.seconds "$T/r.json")" \
    "$(awk -v a="$s" -v b="$e" 'BEGIN { printf "%.4f", (b - a) / 1e9 }')"
}
measure() {  # measure LABEL ARGS... (ARGS may contain @i@, replaced by the run index)
  local label="$1"; shift
  : >"$T/lib"; : >"$T/wall"
  for i in $(seq "$N"); do
    local args=("${@//@i@/$i}")
    read -r lib wall < <(one "${args[@]}")
    echo "$lib" >>"$T/lib"; echo "$wall" >>"$T/wall"
  done
  printf '%-12s library %s s   process %s s   (min median max of %d)\n' "$label" \
    "$(stats <"$T/lib")" "$(stats <"$T/wall")" "$N"
}

echo "kbcheck build $SOL on $(hostname) ($(nproc) cores), $(date -u +%Y-%m-%dT%H:%MZ)"
"$KBCHECK" build "$SOL" --cache-dir "$T/warm" -q  # fill the warm cache once
measure cold "$SOL" --cache-dir "$T/cold-@i@"
measure warm "$SOL" --cache-dir "$T/warm"
measure device-only "$SOL" --device-only --cache-dir "$T/dev-@i@"
: >"$T/lib2"
for i in $(seq "$N"); do one "$SOL" --cache-dir "$T/again-$i" | cut -d' ' -f2 >>"$T/lib2"; done
med=$(stats <"$T/lib2" | cut -d' ' -f2)
awk -v m="$med" 'BEGIN { printf "cold build (process, median) %.2f s: %.1fx to %.1fx faster than the paper workspace'"'"'s 20-22 s\n", m, 20 / m, 22 / m }'
