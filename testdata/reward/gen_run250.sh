#!/usr/bin/env bash
# Writes the 250-result fixture (KernelBench's three levels: 100, 100 and 50
# tasks) as combined per-candidate JSONL to stdout:
#   gen_run250.sh a > run250_a.jsonl     the run the aggregate test checks
#   gen_run250.sh b > run250_b.jsonl     the same run, changed, for --compare
# Every correct task belongs to a class with fixed speed-ups over eager (se)
# and over torch.compile (sc); within a class the tasks cycle through
# se*r^k, sc*r^k with k = -1, 0, +1 (r = 1.02), so each class's geometric mean
# is exactly se (sc), and no value crosses a threshold (1, 1/0.95, 1.5, 2).
# tests/reward/reward_test.cpp (Run250) computes the expected table by hand
# from these classes; change one and that test must change with it.
set -euo pipefail
variant="${1:-a}"
case "$variant" in a|b) ;; *) echo "usage: $0 [a|b]" >&2; exit 2 ;; esac

awk -v variant="$variant" '
function t(m, w) {
  return sprintf("{\"median_ms\":%.9g,\"mean_ms\":%.9g,\"min_ms\":%.9g,\"ci95_low_ms\":%.9g,\"ci95_high_ms\":%.9g,\"n\":100}",
                 m, m * 1.01, m * 0.97, m * (1 - w), m * (1 + w))
}
# One class: n tasks of one status; se, sc, w (CI half-width) for ok ones.
function class(level, n, status, se, sc, w,    j, k, e, x, c, id, timings) {
  for (j = 0; j < n; j++) {
    idx[level]++
    id = sprintf("kb_l%d_%03d", level, idx[level])
    if (status == "ok") {
      k = (j % 3) - 1
      e = 0.5 + (idx[level] % 9) * 0.75        # eager median, 0.5 to 6.5 ms
      x = e / (se * 1.02 ^ k)                   # candidate
      c = x * sc * 1.02 ^ k                     # torch.compile
      timings = sprintf("{\"eager\":%s,\"compile\":%s,\"candidate\":%s}", t(e, w), t(c, w), t(x, w))
    } else {
      timings = "null"
    }
    printf "{\"task_id\":\"%s\",\"level\":%d,\"solution_hash\":null,\"status\":\"%s\",\"gpu\":\"NVIDIA H200\",\"torch_version\":\"2.11.0\",\"timing_method\":\"cuda_events\",\"timings\":%s}\n", id, level, status, timings
  }
}
BEGIN {
  b = (variant == "b")
  # Level 1: 9 failures, 1 infra error, 90 correct.
  if (b) class(1, 4, "ok", 2.5, 1.8, 0.01)      # B: the compile errors fixed
  else   class(1, 4, "compile_error")
  class(1, 2, "incorrect")
  class(1, 1, "runtime_error")
  class(1, 1, "timeout")
  class(1, 1, "hack_detected")
  class(1, 1, "infra_error")
  class(1, 30, "ok", 2.5, 1.8, 0.01)            # 3: faster than both
  class(1, 24, "ok", 1.3, 0.9, 0.01)            # 2: faster than eager only
  class(1, 6, "ok", 1.08, 0.8, 0.05)            # 2 on the median, 1 noise-aware
  if (b) class(1, 30, "ok", 1.05, 0.75, 0.01)   # B: 1.5x faster than in A
  else   class(1, 30, "ok", 0.7, 0.5, 0.01)     # 1: slower than eager
  # Level 2: 8 failures, 2 infra errors, 90 correct.
  class(2, 3, "compile_error")
  class(2, 2, "incorrect")
  class(2, 1, "crash")
  class(2, 1, "static_violation")
  class(2, 1, "hack_detected")
  class(2, 2, "infra_error")
  if (b) { class(2, 3, "incorrect"); class(2, 42, "ok", 3.0, 2.2, 0.01) }   # B: 3 broke
  else   class(2, 45, "ok", 3.0, 2.2, 0.01)     # 3
  class(2, 30, "ok", 1.6, 1.2, 0.01)            # 3
  class(2, 15, "ok", 0.95, 0.75, 0.01)          # 1
  # Level 3: 7 failures, 1 infra error, 42 correct.
  class(3, 2, "compile_error")
  class(3, 1, "runtime_error")
  class(3, 2, "timeout")
  class(3, 1, "incorrect")
  class(3, 1, "crash")
  class(3, 1, "infra_error")
  class(3, 21, "ok", 1.2, 1.1, 0.01)            # 3
  if (b) class(3, 15, "ok", 0.72, 0.48, 0.01)   # B: 0.8x of A
  else   class(3, 15, "ok", 0.9, 0.6, 0.01)     # 1
  class(3, 6, "ok", 1.1, 1.09, 0.05)            # 3 on the median, 1 noise-aware
}'
