#!/usr/bin/env bash
# Benchmark: wall time of `kbcheck static` on a typical solution (forward.cpp
# plus two .cu files: testdata/solutions/matmul_softmax), warm precompiled
# headers, N runs; prints min / median / max. Target (issue 2): < 1.5 s on the
# 2-core development machine.
set -uo pipefail
source "$(dirname "$0")/../env.sh"
KBCHECK="$KB_BUILD/tools/kbcheck/kbcheck"
SOLUTION="${1:-$KB_ROOT/testdata/solutions/matmul_softmax}"
N="${N:-10}"
"$KBCHECK" static "$SOLUTION" -q || true  # warm the precompiled headers
times=()
for _ in $(seq "$N"); do
  s=$(date +%s.%N)
  "$KBCHECK" static "$SOLUTION" -q
  e=$(date +%s.%N)
  times+=("$(echo "$e - $s" | bc -l)")
done
printf '%s\n' "${times[@]}" | sort -n | awk -v n="$N" -v sol="$SOLUTION" '
  { t[NR] = $1 }
  END { printf "kbcheck static %s: %d runs on %d cores, min %.3f s, median %.3f s, max %.3f s\n",
        sol, n, '"$(nproc)"', t[1], (n % 2 ? t[(n + 1) / 2] : (t[n / 2] + t[n / 2 + 1]) / 2), t[n] }'
