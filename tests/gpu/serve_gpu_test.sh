#!/usr/bin/env bash
# gpu suite: kbserve on this machine's GPUs, the GPU path of an evaluation:
# a profile's workers started before the lease and held before CUDA (the
# default) and in the lease (--late-start); with --verify-in-profile,
# verify and profile asked together run as one profile whose correctness
# seeds are the check
# (report.stages.verify.report.checked_by == "profile"); a wrong kernel is
# incorrect either way; with --gpu-share 3, four at once, and a candidate
# that runs out of device memory is run again with the GPU alone. Skips (exit 77) without a GPU or a CUDA-enabled
# kbcheck-worker.
# Usage: serve_gpu_test.sh KBSERVE TORCH_CUDA(true|false) WORKDIR
set -uo pipefail
KBSERVE="$1"; TORCH_CUDA="$2"; WORK="$3"
source "$(dirname "$0")/require_gpu.sh" "$TORCH_CUDA"
for t in jq curl; do command -v $t >/dev/null || { echo "$t not found"; exit 1; }; done
SRC="${KB_SOURCE_ROOT:?}/testdata"
rm -rf "$WORK"; mkdir -p "$WORK/tasks"
cp -r "$SRC/tasks/linear_relu" "$WORK/tasks/"
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# A JSON body: the task, the solution's files inline (named by their path
# under the solution, kernels/k.cu as well as forward.cpp), the stages.
body() {  # SOLUTION_DIR STAGES_JSON
  local files='{}' f
  while IFS= read -r f; do
    files=$(jq --arg n "$f" --rawfile c "$1/$f" '. + {($n): $c}' <<<"$files")
  done < <(cd "$1" && find . -type f | sed 's|^\./||' | sort)
  jq -n --argjson files "$files" --argjson stages "$2" \
    '{task: "testdata/linear_relu", files: $files, device: "cuda", stages: $stages}'
}

run_server() {  # NAME FLAGS...
  local name="$1"; shift
  "$KBSERVE" --listen 127.0.0.1:0 --tasks "$WORK/tasks" --gpus auto --state-dir "$WORK/$name-state" \
    --cache-dir "$WORK/cache" --compile-baseline none --profile-budget-s 1 "$@" >"$WORK/$name.log" 2>&1 &
  PID=$!
  URL=""
  for _ in $(seq 1 600); do
    URL=$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$WORK/$name.log" | head -1 | sed 's/listening on //')
    [ -n "$URL" ] && break
    kill -0 $PID 2>/dev/null || break
    sleep 0.1
  done
  [ -n "$URL" ] || { bad "$name: kbserve did not start: $(tail -3 "$WORK/$name.log")"; return 1; }
}

evaluate() {  # NAME SOLUTION STAGES WANT
  local out="$WORK/$1.json"
  body "$SRC/$2" "$3" >"$WORK/$1.body.json"
  curl -s -X POST "$URL/v1/evaluations?wait=true" -H 'Content-Type: application/json' \
    --data-binary @"$WORK/$1.body.json" -o "$out" --max-time 300
  local got; got=$(jq -r '.status // "none"' "$out" 2>/dev/null || echo none)
  local checked; checked=$(jq -r '.report.stages.verify.report.checked_by // "-"' "$out" 2>/dev/null)
  local secs; secs=$(jq -r '.report.stages.profile.seconds // .profile.seconds // "-"' "$out" 2>/dev/null)
  printf '%-28s %-14s %-14s verify checked by %-8s profile %s s\n' "$1" "$4" "$got" "$checked" "$secs"
  [ "$got" = "$4" ] || bad "$1: expected $4, got $got: $(jq -r '.message // ""' "$out" 2>/dev/null | head -c 300)"
  LAST="$out"
}

nvidia-smi -L
for mode in held late; do
  # held: one evaluation per GPU (--gpu-share 1); late: the default share.
  flags=(--verify-in-profile); [ $mode = late ] && flags+=(--late-start) || flags+=(--gpu-share 1)
  run_server "$mode" "${flags[@]}" || continue
  echo "$mode: kbserve chose $(grep -o '[0-9]* GPUs, [0-9]* evaluations on each' "$WORK/$mode.log" | head -1)"
  evaluate "$mode-ok-build-profile" solutions-gpu/ok_naive '["build","profile"]' ok
  evaluate "$mode-ok-verify-profile" solutions-gpu/ok_naive '["static","build","verify","profile"]' ok
  [ "$(jq -r '.report.stages.verify.report.checked_by // ""' "$LAST")" = profile ] ||
    bad "$mode: verify+profile: the verify stage does not say the profile checked it"
  [ "$(jq '.profile.seeds | map(select(.timed_call == null)) | length' "$LAST")" -ge 1 ] ||
    bad "$mode: verify+profile: the profile ran no correctness seeds"
  evaluate "$mode-wrong-verify-profile" solutions-gpu/wrong_kernel '["build","verify","profile"]' incorrect
  kill -TERM $PID; wait $PID 2>/dev/null
done

# --gpu-share 3: evaluations at once on one GPU, each profile's baselines
# and candidate alone on it (serve/gpu_gate.h); verdicts as above, and the
# exclusive share is measured.
if run_server shared --gpu-share 3; then
  pids=()
  for k in 1 2 3; do
    evaluate "shared-ok-$k" solutions-gpu/ok_naive '["build","verify","profile"]' ok >"$WORK/shared-$k.line" &
    pids+=($!)
  done
  evaluate "shared-wrong" solutions-gpu/wrong_kernel '["build","verify","profile"]' incorrect >"$WORK/shared-w.line" &
  pids+=($!)
  for p in "${pids[@]}"; do wait $p || true; done
  cat "$WORK"/shared-*.line
  grep -q FAIL "$WORK"/shared-*.line && bad "shared: $(grep -h FAIL "$WORK"/shared-*.line | head -2)"
  for k in 1 2 3; do
    [ "$(jq -r '.status' "$WORK/shared-ok-$k.json")" = ok ] || bad "shared-ok-$k: not ok"
  done
  # A candidate whose GPU stage fails with "out of memory" on the shared GPU
  # runs once more with the GPU alone; its own failure stays runtime_error.
  evaluate "shared-oom" solutions-gpu/out_of_memory '["build","verify","profile"]' runtime_error
  case "$(jq -r '.retried_alone_after // ""' "$LAST")" in
    *"out of memory"*) ;;
    *) bad "shared-oom: no retry alone recorded (retried_alone_after: $(jq -c '.retried_alone_after' "$LAST"))" ;;
  esac
  metrics=$(curl -s "$URL/metrics")
  excl=$(echo "$metrics" | awk '$1 == "kbserve_gpu_exclusive_fraction" {print $2}')
  # Every ok profile's baselines were read from the cache, written to it, or
  # measured and not stored: each counted once by outcome.
  echo "shared: $(echo "$metrics" | grep '^kbserve_baseline_cache_total' | tr '\n' ' ')"
  bc=$(echo "$metrics" | awk '$1 ~ /^kbserve_baseline_cache_total/ {s += $2} END {print s + 0}')
  [ "$bc" -ge 3 ] || bad "shared: kbserve_baseline_cache_total counts $bc profiles, not the three ok ones at least"
  echo "shared: kbserve_gpu_exclusive_fraction $excl"
  awk -v x="${excl:-0}" 'BEGIN { exit !(x > 0) }' || bad "shared: no exclusive share measured ($excl)"
  kill -TERM $PID; wait $PID 2>/dev/null
fi
exit $fail
