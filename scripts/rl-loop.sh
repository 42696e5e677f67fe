#!/usr/bin/env bash
# The RL loop of DESIGN.md §1 as a resumable recipe:
#
#   [rft on given trajectories] -> for k in 1..K:
#       kbrollout run --local-model POLICY_{k-1}   -> RUN/iter-k/trajectories.jsonl
#       (k = 1, ppo) kbtrain value-pretrain        -> RUN/critic-0
#       kbtrain ppo|grpo                            -> RUN/iter-k/policy (+ critic/)
#   kbtrain plot                                    -> RUN/curves.html
#
# Usage:
#   bash scripts/rl-loop.sh --tasks DIR --model DIR --run RUN [--iterations K] [--samples N]
#        [--algo ppo|grpo] [--rft-from TRAJ.jsonl] [--device cpu|cuda] [--dtype auto|bfloat16]
#        [--max-turns T] [--parallel J] [--train-args "..."] [--rollout-args "..."]
#        [--untimed-correct-reward R]   (default 1: a correct solution kbprof could not time yet
#                                        gets the paper's "correct, not faster" reward; "" to drop them)
#
# Resumable: a step whose output is complete is skipped (kbtrain writes
# train_summary.json last; a rollout is complete when RUN/iter-k/rollout.done
# exists, and an interrupted kbrollout resumes its own file). Re-running the
# same command continues where it stopped. Binaries: $KB_BUILD (default
# build/) or KBROLLOUT / KBTRAIN. docs/kbtrain.md "The loop" explains it.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${KB_BUILD:-$ROOT/build}"
KBROLLOUT="${KBROLLOUT:-$BUILD/tools/kbrollout/kbrollout}"
KBTRAIN="${KBTRAIN:-$BUILD/tools/kbtrain/kbtrain}"
TASKS="" MODEL="" RUN="" ITERS=3 SAMPLES=4 ALGO=ppo RFT_FROM="" DEVICE=cpu DTYPE=auto MAX_TURNS=20 PARALLEL=1
TRAIN_ARGS="" ROLLOUT_ARGS="" UNTIMED_REWARD=1
while [ $# -gt 0 ]; do
  case "$1" in
    --tasks) TASKS="$2"; shift 2 ;;
    --model) MODEL="$2"; shift 2 ;;
    --run) RUN="$2"; shift 2 ;;
    --iterations) ITERS="$2"; shift 2 ;;
    --samples) SAMPLES="$2"; shift 2 ;;
    --algo) ALGO="$2"; shift 2 ;;
    --rft-from) RFT_FROM="$2"; shift 2 ;;
    --device) DEVICE="$2"; shift 2 ;;
    --dtype) DTYPE="$2"; shift 2 ;;
    --max-turns) MAX_TURNS="$2"; shift 2 ;;
    --parallel) PARALLEL="$2"; shift 2 ;;
    --train-args) TRAIN_ARGS="$2"; shift 2 ;;
    --rollout-args) ROLLOUT_ARGS="$2"; shift 2 ;;
    --untimed-correct-reward) UNTIMED_REWARD="$2"; shift 2 ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "rl-loop: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$TASKS" ] && [ -n "$MODEL" ] && [ -n "$RUN" ] || { echo "rl-loop: --tasks, --model and --run are required" >&2; exit 2; }
[ "$ALGO" = ppo ] || [ "$ALGO" = grpo ] || { echo "rl-loop: --algo is ppo or grpo" >&2; exit 2; }
for b in "$KBROLLOUT" "$KBTRAIN"; do [ -x "$b" ] || { echo "rl-loop: $b not built (set KB_BUILD)" >&2; exit 2; }; done
mkdir -p "$RUN"
say() { echo "rl-loop: $*" >&2; }
done_train() { [ -f "$1/train_summary.json" ]; }
# shellcheck disable=SC2086
train() {
  local extra=() out="" prev=""
  [ -n "$UNTIMED_REWARD" ] && extra=(--unprofiled-correct-reward "$UNTIMED_REWARD")
  # An interrupted kbtrain left a checkpoint in its --out: continue from it.
  for a in "$@"; do [ "$prev" = "--out" ] && out="$a"; prev="$a"; done
  [ -n "$out" ] && [ -f "$out/checkpoint/state.json" ] && extra+=(--resume)
  "$KBTRAIN" "$@" --device "$DEVICE" --dtype "$DTYPE" "${extra[@]}" $TRAIN_ARGS > /dev/null
}

POLICY="$MODEL"
METRICS=()
if [ -n "$RFT_FROM" ]; then
  if done_train "$RUN/rft"; then say "rft: done, skipped"; else say "rft on $RFT_FROM"; train rft "$RFT_FROM" --model "$MODEL" --out "$RUN/rft"; fi
  POLICY="$RUN/rft"; METRICS+=("$RUN/rft/metrics.jsonl")
fi
CRITIC=""
for k in $(seq 1 "$ITERS"); do
  D="$RUN/iter-$k"
  mkdir -p "$D"
  if [ -f "$D/rollout.done" ]; then
    say "iteration $k: rollouts done, skipped"
  else
    say "iteration $k: kbrollout with $POLICY"
    # shellcheck disable=SC2086
    "$KBROLLOUT" run --tasks "$TASKS" --out "$D/trajectories.jsonl" --local-model "$POLICY" --policy-device "$DEVICE" \
      --dtype "$DTYPE" --samples "$SAMPLES" --max-turns "$MAX_TURNS" -j "$PARALLEL" --no-progress $ROLLOUT_ARGS
    touch "$D/rollout.done"
  fi
  if [ "$ALGO" = ppo ]; then
    if [ -z "$CRITIC" ]; then
      if done_train "$RUN/critic-0"; then say "value-pretrain: done, skipped"
      else say "value-pretrain on iteration $k"; train value-pretrain "$D/trajectories.jsonl" --model "$POLICY" --out "$RUN/critic-0"; fi
      CRITIC="$RUN/critic-0"; METRICS+=("$RUN/critic-0/metrics.jsonl")
    fi
    if done_train "$D/policy"; then say "iteration $k: ppo done, skipped"
    else say "iteration $k: kbtrain ppo"; train ppo "$D/trajectories.jsonl" --model "$POLICY" --critic "$CRITIC" --out "$D/policy"; fi
    CRITIC="$D/policy/critic"
  else
    if done_train "$D/policy"; then say "iteration $k: grpo done, skipped"
    else say "iteration $k: kbtrain grpo"; train grpo "$D/trajectories.jsonl" --model "$POLICY" --out "$D/policy"; fi
  fi
  METRICS+=("$D/policy/metrics.jsonl")
  POLICY="$D/policy"
done
"$KBTRAIN" plot "${METRICS[@]}" --out "$RUN/curves.html" --title "rl-loop $RUN"
say "done: policy $POLICY, curves $RUN/curves.html"
