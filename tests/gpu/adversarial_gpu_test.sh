#!/usr/bin/env bash
# gpu suite, the run-time half of the adversarial suite: every solution of
# testdata/solutions-adversarial/expected.json (one per hack class of
# DESIGN.md §5, and the legitimate fast solutions) through
#   kbcheck TASK SOL --device cuda          (static where built with Clang, build, verify)
# and, when that ends ok, through
#   kbprof TASK SOL --device cuda           (timing with CUPTI provenance)
# The final status must be one of the entry's `runtime` statuses. Where
# kbcheck has Clang, static catches many hacks first; then verify is run on
# its own too, so that the run-time defences are still exercised.
# Two optional fields of an entry tighten this where a status alone proves
# nothing:
#   max_speedup      when the run ends ok in kbprof, its speedup_vs_eager must
#                    be at most this: a result cache whose defence works never
#                    hits and is an honest (slower) kernel, while one that hits
#                    replays right outputs and ends ok with a fake speed-up.
#   baseline_check   a solution dir (relative to testdata/) of an honest
#                    solution of the same task: the entry's kbprof gets a
#                    baseline cache of its own, which the honest solution's
#                    kbprof then reads; its eager median must be within 25% of
#                    a clean one (kbprof --no-baseline-cache), i.e. the entry
#                    did not poison the cached baseline (issue 17, class 4).
# Prints a table and fails on any mismatch.
# Skips (exit 77) without a GPU or without a CUDA-enabled kbcheck-worker.
# Usage: adversarial_gpu_test.sh KBCHECK KBPROF|none TORCH_CUDA(true|false) WORKDIR
# Environment: ADV_ONLY="name ..." runs only those entries; ADV_VERIFY_TIMEOUT
# (seconds, default 20) is kbcheck's --timeout: the entries that wait for
# harness state the protocol no longer exposes end `timeout` at it (a
# legitimate entry's verify takes a few seconds), so a lower bound keeps the
# whole run inside one device call.
set -uo pipefail
KBCHECK="$1"; KBPROF="$2"; TORCH_CUDA="$3"; WORK="$4"
source "$(dirname "$0")/require_gpu.sh" "$TORCH_CUDA"
command -v jq >/dev/null || { echo "jq not found"; exit 1; }
SRC="${KB_SOURCE_ROOT:?}/testdata"
EXPECTED="$SRC/solutions-adversarial/expected.json"
if [ "$KBPROF" = "none" ] || [ ! -x "$KBPROF" ]; then
  echo "NOTE: kbprof not built: kbprof steps skipped; entries that only kbprof can catch will mismatch"
  KBPROF=""
fi
VERIFY_TIMEOUT="${ADV_VERIFY_TIMEOUT:-20}"
rm -rf "$WORK"; mkdir -p "$WORK"
nvidia-smi -L
fail=0
names=$(jq -r '.solutions | keys[]' "$EXPECTED")
[ -n "${ADV_ONLY:-}" ] && names="$ADV_ONLY"
printf '%-24s %-20s %-28s %-14s %7s  %s\n' solution class expected got wall_s "stage: message / evidence"
for name in $names; do
  e=$(jq -c ".solutions[\"$name\"] // empty" "$EXPECTED")
  if [ -z "$e" ]; then echo "$name: no such entry"; fail=1; continue; fi
  dir="$SRC/$(jq -r .dir <<<"$e")"; task="$SRC/tasks/$(jq -r .task <<<"$e")"
  class=$(jq -r '.class' <<<"$e" | cut -c1-20)
  want=$(jq -c '.runtime | if type == "array" then . else [.] end' <<<"$e")
  start=$(date +%s%N)
  # 1. kbcheck, combined run.
  "$KBCHECK" "$task" "$dir" --device cuda --timeout "$VERIFY_TIMEOUT" --cache-dir "$WORK/cache" \
    --json "$WORK/$name.kbcheck.json" -q 2>"$WORK/$name.kbcheck.err"
  got=$(jq -r '.status // "none"' "$WORK/$name.kbcheck.json" 2>/dev/null || echo none)
  stage="kbcheck"
  pre=""
  msg=$(jq -r '.message // ""' "$WORK/$name.kbcheck.json" 2>/dev/null | head -c 160)
  if [ "$got" = "static_violation" ]; then
    # Clang is here: static caught it. Exercise the run-time defences too.
    "$KBCHECK" verify "$task" "$dir" --device cuda --timeout "$VERIFY_TIMEOUT" --cache-dir "$WORK/cache" \
      --json "$WORK/$name.verify.json" -q 2>"$WORK/$name.verify.err"
    got=$(jq -r '.status // "none"' "$WORK/$name.verify.json" 2>/dev/null || echo none)
    pre="static_violation, then "
    stage="${pre}verify"
    msg=$(jq -r '.message // ""' "$WORK/$name.verify.json" 2>/dev/null | head -c 160)
  fi
  # 2. kbprof, where verification passed.
  probe=$(jq -r '.baseline_check // empty' <<<"$e")
  blargs=()
  [ -n "$probe" ] && blargs=(--baseline-cache "$WORK/baselines-$name")
  if [ "$got" = "ok" ] && [ -n "$KBPROF" ]; then
    # No torch.compile baseline (an AOTInductor build per task, ~1 min each, is
    # irrelevant to catching a hack); KB_ADV_KBPROF_ARGS overrides.
    # shellcheck disable=SC2086
    "$KBPROF" "$task" "$dir" --device cuda --cache-dir "$WORK/cache" ${blargs[@]+"${blargs[@]}"} ${KB_ADV_KBPROF_ARGS:---no-compile --budget-s 2} \
      --json "$WORK/$name.kbprof.json" -q 2>"$WORK/$name.kbprof.err"
    rc=$?
    got=$(jq -r '.status // "none"' "$WORK/$name.kbprof.json" 2>/dev/null || echo none)
    [ "$got" = "none" ] && got="kbprof_exit_$rc"
    stage="${pre}kbprof"
    msg="$(jq -r '.message // ""' "$WORK/$name.kbprof.json" 2>/dev/null | head -c 120) $(jq -r '(.evidence // []) | .[0:2] | join("; ")' "$WORK/$name.kbprof.json" 2>/dev/null | head -c 200)"
  fi
  wall=$(awk -v a="$start" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
  printf '%-24s %-20s %-28s %-14s %7s  %s: %s\n' "$name" "$class" "$want" "$got" "$wall" "$stage" "$msg"
  if ! jq -e --arg g "$got" 'index($g) != null' <<<"$want" >/dev/null; then
    echo "  FAIL: $name ended $got, expected one of $want"
    for f in "$WORK/$name".*.err; do [ -s "$f" ] && echo "  $(basename "$f"): $(head -c 600 "$f")"; done
    fail=1
  fi
  # An ok from kbprof must not carry a fake speed-up.
  max=$(jq -r '.max_speedup // empty' <<<"$e")
  if [ -n "$max" ] && [ "$got" = "ok" ] && [ "${stage##* }" = "kbprof" ]; then
    sp=$(jq -r '.speedup_vs_eager // "null"' "$WORK/$name.kbprof.json" 2>/dev/null)
    if [ "$sp" = "null" ] || awk -v s="$sp" -v m="$max" 'BEGIN { exit !(s > m) }'; then
      echo "  FAIL: $name ended ok with speedup_vs_eager $sp, above its honest bound $max (a cache hit or replay)"
      fail=1
    else
      echo "  $name: speedup_vs_eager $sp <= $max (no fake speed-up)"
    fi
  fi
  # The entry must not have poisoned the baseline it could have measured.
  if [ -n "$probe" ] && [ -n "$KBPROF" ]; then
    "$KBPROF" "$task" "$SRC/$probe" --device cuda --cache-dir "$WORK/cache" ${blargs[@]+"${blargs[@]}"} --no-compile \
      --budget-s 2 --json "$WORK/$name.probe.json" -q 2>"$WORK/$name.probe.err"
    "$KBPROF" "$task" --device cuda --no-baseline-cache --no-compile --budget-s 2 \
      --json "$WORK/$name.clean.json" -q 2>"$WORK/$name.clean.err"
    used=$(jq -r '.timings.eager.median_ms // "null"' "$WORK/$name.probe.json" 2>/dev/null)
    clean=$(jq -r '.timings.eager.median_ms // "null"' "$WORK/$name.clean.json" 2>/dev/null)
    if [ "$used" = "null" ] || [ "$clean" = "null" ]; then
      echo "  FAIL: $name: baseline check could not read eager medians (after the entry: $used, clean: $clean)"
      fail=1
    elif awk -v u="$used" -v c="$clean" 'BEGIN { exit !(u > 1.25 * c) }'; then
      echo "  FAIL: $name poisoned the cached eager baseline: $used ms after it vs $clean ms clean"
      fail=1
    else
      echo "  $name: eager baseline after it $used ms, clean $clean ms (not poisoned)"
    fi
  fi
done
exit $fail
