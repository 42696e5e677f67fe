#!/usr/bin/env bash
# kbtrain end to end on the tiny model: toy demonstrations -> rft -> toy
# rollout (recorded token ids) -> value-pretrain -> ppo -> grpo -> plot; the
# metrics files have the documented fields; bad input exits 2 with one line.
set -uo pipefail
KBTRAIN="$1"
DATA="$2/testdata/policy"
source "$2/tests/support/cli_checks.sh"
M="$DATA/qwen2-tiny"
COMMON="--batch-size 4 --micro-batch 2 --lr 1e-3"

check "toy demos" bash -c "'$KBTRAIN' toy demos --first-seed 0 --last-seed 7 --out '$TMP/demos.jsonl' | jq -e '.tasks == 8'"
check "rft on demonstrations" bash -c "'$KBTRAIN' rft '$TMP/demos.jsonl' --model '$M' --out '$TMP/rft' $COMMON --epochs 2 \
  | jq -e '.data.filters.kept == 8 and .steps == 4 and .data.tokens_from_template == 8'"
check "rft metrics fields" jq -s -e 'length == 4 and all(.[]; .stage == "rft" and (.nll | type) == "number"
  and (.entropy > 0) and (.grad_norm > 0) and (.tokens_per_s > 0) and .mean_reward == 1 and .pass_rate == 1) and .[3].nll < .[0].nll' "$TMP/rft/metrics.jsonl"
check "rft checkpoint has config and tokenizer" test -s "$TMP/rft/config.json" -a -s "$TMP/rft/tokenizer.json" -a -s "$TMP/rft/model.safetensors"
check "toy rollout with the rft model" bash -c "'$KBTRAIN' toy rollout --model '$TMP/rft' --first-seed 100 --last-seed 103 --samples 2 \
  --max-new-tokens 12 --sampling-seed 1 --out '$TMP/roll.jsonl' | jq -e '.samples == 8 and (.mean_reward | type) == \"number\"'"
check "rollout records token ids and logprobs" jq -s -e 'length == 8 and all(.[]; (.turns[0].response.token_ids | length) > 0
  and (.turns[0].response.logprobs | length) == (.turns[0].response.token_ids | length) and (.reward.value == 1 or .reward.value == -1))' "$TMP/roll.jsonl"
# The real environment on the CPU: each answer built with the host compiler
# and verified against the toy bundles of testdata/rl (tasks 0-3).
BUNDLES="$2/testdata/rl/toy-bundles"
check "toy rollout scored by build + verify" bash -c "'$KBTRAIN' toy rollout --model '$TMP/rft' --first-seed 0 --last-seed 3 --samples 2 \
  --max-new-tokens 64 --sampling-seed 1 --env kbcheck --bundles '$BUNDLES' --env-jobs 2 --env-verdict-cache '$TMP/verdicts.jsonl' \
  --out '$TMP/roll-env.jsonl' | jq -e '.env == \"kbcheck\" and .samples == 8 and .environment.distinct >= 1
  and .environment.distinct == .environment.cached + .environment.verified + .environment.compile_errors + .environment.infra_errors'"
check "environment trajectories carry a status and a reward" jq -s -e 'length == 8 and all(.[]; (.status | IN("ok", "incorrect",
  "compile_error", "runtime_error", "timeout", "crash")) and (.reward.value == 1) == (.status == "ok") and (.reward.value | fabs) == 1)' "$TMP/roll-env.jsonl"
check "the verdict cache spares a second scoring" bash -c "'$KBTRAIN' toy rollout --model '$TMP/rft' --first-seed 0 --last-seed 3 --samples 2 \
  --max-new-tokens 64 --sampling-seed 1 --env kbcheck --bundles '$BUNDLES' --env-verdict-cache '$TMP/verdicts.jsonl' \
  --out '$TMP/roll-env2.jsonl' | jq -e '.environment.cached == .environment.distinct and .environment.verified == 0'"
check "toy tasks writes KernelBench programs" bash -c "'$KBTRAIN' toy tasks --first-seed 5 --last-seed 6 --out '$TMP/toysrc' | jq -e '.tasks == 2' \
  && grep -q 'def get_inputs' '$TMP/toysrc/toy-5.py' && test -s '$TMP/toysrc/toy-6.py'"
# Give the rollout both rewards so that advantages are not all zero.
jq -c 'if .sample == 0 then .reward.value = 1 | .reward.correct = true else . end' "$TMP/roll.jsonl" > "$TMP/roll2.jsonl"
check "rft rejects by reason" bash -c "'$KBTRAIN' rft '$TMP/roll2.jsonl' --model '$M' --out '$TMP/rft2' $COMMON --no-progress \
  | jq -e '.data.filters.seen == 8 and .data.filters.kept + .data.filters.rejected == 8 and (.data.filters.reasons | has(\"loop\"))'"
check "value-pretrain" bash -c "'$KBTRAIN' value-pretrain '$TMP/roll2.jsonl' --model '$TMP/rft' --out '$TMP/critic' $COMMON --epochs 2 \
  | jq -e '.steps == 4 and .head_loaded == false and .data.tokens_from_recorded == 8' && test -s '$TMP/critic/value_head.safetensors'"
check "value-pretrain metrics fields" jq -s -e 'all(.[]; .stage == "value-pretrain" and (.value_loss >= 0) and has("explained_var"))' "$TMP/critic/metrics.jsonl"
check "ppo" bash -c "'$KBTRAIN' ppo '$TMP/roll2.jsonl' --model '$TMP/rft' --critic '$TMP/critic' --out '$TMP/ppo' $COMMON --epochs 2 \
  --kl-coef 0.05 --reference '$TMP/rft' | jq -e '.steps == 4 and (.logprob_mismatch < 1e-3)' && test -s '$TMP/ppo/critic/value_head.safetensors'"
check "ppo metrics fields" jq -s -e 'length == 4 and all(.[]; .stage == "ppo" and ([.mean_reward, .pass_rate, .entropy, .approx_kl, .kl_ref,
  .clip_frac, .clip_frac_low, .clip_frac_high, .ratio_mean, .ratio_max, .value_loss, .grad_norm, .critic_grad_norm, .tokens_per_s, .lr]
  | all(type == "number")) and has("explained_var")) and (.[0].ratio_mean - 1 | fabs) < 1e-5 and .[3].ratio_max != 1' "$TMP/ppo/metrics.jsonl"
check "ppo with recorded old logprobs" bash -c "'$KBTRAIN' ppo '$TMP/roll2.jsonl' --model '$TMP/rft' --critic '$TMP/critic' --out '$TMP/ppo-rec' $COMMON \
  --old-logprobs recorded --no-progress | jq -e '.old_logprobs == \"recorded\"'"
check "grpo" bash -c "'$KBTRAIN' grpo '$TMP/roll2.jsonl' --model '$TMP/rft' --out '$TMP/grpo' $COMMON --no-progress \
  | jq -e '.stage == \"grpo\" and .last.adv_std > 0'"
check "plot" bash -c "'$KBTRAIN' plot '$TMP/rft/metrics.jsonl' '$TMP/ppo/metrics.jsonl' --out '$TMP/curves.html' && grep -q '<svg' '$TMP/curves.html' \
  && grep -q 'clip_frac' '$TMP/curves.html' && ! grep -q '<script' '$TMP/curves.html'"
check "help teaches the recipe" bash -c "'$KBTRAIN' --help | grep -q value-pretrain && '$KBTRAIN' ppo --help | grep -q -- --eps-high"

expect_rc 2 "missing trajectory file" "$KBTRAIN" rft "$TMP/nope.jsonl" --model "$M" --out "$TMP/x"
expect_rc 2 "ppo without --critic" "$KBTRAIN" ppo "$TMP/roll2.jsonl" --model "$M" --out "$TMP/x"
expect_rc 2 "kl without a reference" "$KBTRAIN" grpo "$TMP/roll2.jsonl" --model "$M" --out "$TMP/x" --kl-coef 0.1
expect_rc 2 "--env kbcheck without --bundles" "$KBTRAIN" toy rollout --model "$M" --out "$TMP/x.jsonl" --env kbcheck
expect_rc 2 "a task without a bundle" "$KBTRAIN" toy rollout --model "$M" --out "$TMP/x.jsonl" --env kbcheck --bundles "$BUNDLES" \
  --first-seed 50 --last-seed 50 --max-new-tokens 4
expect_rc 2 "a bad --env-device list" "$KBTRAIN" toy rollout --model "$M" --out "$TMP/x.jsonl" --env kbcheck \
  --bundles "$BUNDLES" --env-device "cpu,,cpu" --first-seed 0 --last-seed 0 --max-new-tokens 4
expect_rc 2 "nothing left after the filters" "$KBTRAIN" rft "$TMP/roll.jsonl" --model "$M" --out "$TMP/x" --min-reward 5
[ "$fail" -eq 0 ] && echo "kbtrain CLI: all checks passed"
exit "$fail"
