#!/usr/bin/env bash
# kbtrain on the GPU machine: the checks of issue #10 that need GPUs, one
# step per invocation, each well under 8 minutes once built.
#
#   (on the dev machine)  bash scripts/gpu/carry.sh
#   (on the GPU machine)  bash scripts/gpu/build.sh build-gpu        # once, before the steps
#   bash scripts/gpu/validate-train.sh ddp         # nvidia-h200-x2: NCCL 2 processes vs 1 GPU, max weight diff
#   bash scripts/gpu/validate-train.sh throughput  # 1 H200: PPO step tokens/s, kbtrain vs plain PyTorch
#   bash scripts/gpu/validate-train.sh learn       # 1 H200: toy task family, RFT then PPO, held-out reward per iteration
#   ENV=kbcheck bash scripts/gpu/validate-train.sh learn   # the same, every answer built by nvcc and verified on the GPU
#   bash scripts/gpu/validate-train.sh envdiag     # where the toy environment's time per answer goes
#   DEV=cpu HIDDEN=64 LAYERS=2 DEMOS=64 RFT_CHUNK=2 RFT_MAX_CHUNKS=1 ITERS=1 TASKS=4 SAMPLES=2 EVAL=4 \
#     bash scripts/gpu/validate-train.sh learn build   # a CPU smoke run of the same pipeline
#
# Results (metrics, summaries, curves.html) go to $OUT/<step> when $OUT is set
# (the device tool brings $OUT back), else gpu-train-out/<step>. Knobs are
# environment variables, listed at each step. docs/kbtrain.md explains the
# figures; docs/gpu-validation.md is where the lead records them.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
STEP="${1:?usage: gpu-train-validate.sh ddp|throughput|learn|envdiag [BUILD_DIR]}"
BUILD="${2:-$ROOT/build-gpu}"
RES="${OUT:-$ROOT/gpu-train-out}/$STEP"
mkdir -p "$RES"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
log() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }

if [ ! -x "$BUILD/tools/kbtrain/kbtrain" ]; then
  log "building (scripts/gpu/build.sh $BUILD)"
  bash "$ROOT/scripts/gpu/build.sh" "$BUILD" > "$RES/build.log" 2>&1 || { tail -30 "$RES/build.log"; exit 1; }
fi
KBTRAIN="$BUILD/tools/kbtrain/kbtrain"
TOKDIR="$ROOT/testdata/policy/qwen2-tiny"
nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader >&2 || true

# A Qwen2 config of the given shape (vocabulary of the tiny test tokenizer
# unless VOCAB is given).
write_config() {  # file hidden intermediate layers heads kv_heads vocab dtype
  cat > "$1" <<JSON
{"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": $2, "intermediate_size": $3,
 "num_hidden_layers": $4, "num_attention_heads": $5, "num_key_value_heads": $6, "vocab_size": $7,
 "max_position_embeddings": 32768, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "tie_word_embeddings": true,
 "torch_dtype": "$8", "eos_token_id": null, "bos_token_id": null}
JSON
}

# Synthetic trajectories with recorded token ids: N episodes of PROMPT + GEN tokens.
synthetic_trajectories() {  # file n prompt gen
  python3 - "$@" <<'PY'
import json, random, sys
path, n, prompt, gen = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rng = random.Random(0)
with open(path, "w") as f:
    for i in range(n):
        t = {"rollout_id": f"syn-{i // 4}#{i % 4}", "task_id": f"syn-{i // 4}",
             "messages": [{"role": "user", "content": "synthetic"}],
             "turns": [{"turn": 0, "prompt_messages": 1, "response": {
                 "content": "", "tool_calls": [], "finish_reason": "stop",
                 "prompt_token_ids": [rng.randrange(800) for _ in range(prompt)],
                 "token_ids": [rng.randrange(800) for _ in range(gen)],
                 "logprobs": [-6.7] * gen}}],
             "status": "ok" if i % 2 == 0 else "incorrect",
             "reward": {"value": 1.0 if i % 2 == 0 else -1.0, "correct": i % 2 == 0}}
        f.write(json.dumps(t) + "\n")
PY
}

case "$STEP" in
ddp)
  # NCCL, 2 processes (cuda:0, cuda:1) on halves of each batch vs 1 process on
  # cuda:0 with the whole batch; float32. Knobs: HIDDEN (256), LAYERS (4).
  # SMOKE=1: the same on the CPU with gloo (checks the script; CI tests gloo).
  DEV=cuda
  if [ "${SMOKE:-0}" = 1 ]; then DEV=cpu; else
    NGPU=$(nvidia-smi -L | wc -l)
    [ "$NGPU" -ge 2 ] || { echo "ddp needs 2 GPUs (nvidia-h200-x2); found $NGPU"; exit 1; }
  fi
  write_config "$WORK/cfg.json" "${HIDDEN:-256}" 704 "${LAYERS:-4}" 4 2 802 float32
  "$KBTRAIN" init-model --config "$WORK/cfg.json" --tokenizer-from "$TOKDIR" --out "$WORK/init" --seed 1
  "$KBTRAIN" toy demos --first-seed 0 --last-seed 31 --out "$WORK/demos.jsonl" > /dev/null
  "$KBTRAIN" toy rollout --model "$WORK/init" --first-seed 0 --last-seed 31 --max-new-tokens 48 --device "$DEV" \
    --out "$WORK/random.jsonl" > /dev/null
  cat "$WORK/demos.jsonl" "$WORK/random.jsonl" > "$WORK/traj.jsonl"
  ARGS=(--batch-size 16 --micro-batch 2 --epochs 2 --lr 1e-4 --warmup-steps 2 --device "$DEV" --no-progress)
  run_pair() {  # stage out extra...
    local stage="$1" out="$2"; shift 2
    "$KBTRAIN" "$stage" "$WORK/traj.jsonl" "${ARGS[@]}" "$@" --out "$out-1gpu" > "$RES/$stage-1gpu.json"
    local port=$((20000 + RANDOM % 20000)) pids=()
    for r in 0 1; do
      WORLD_SIZE=2 RANK=$r LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
        "$KBTRAIN" "$stage" "$WORK/traj.jsonl" "${ARGS[@]}" "$@" --out "$out-2gpu" > "$RES/$stage-2gpu-rank$r.json" &
      pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p"; done
  }
  T0=$(date +%s)
  # --shards 2: the same micro-batches in both runs (exact by construction);
  # --shards 0 (default = WORLD_SIZE): 1 and 2 processes pad different
  # sequences together (float32-rounding-level differences expected).
  for SH in 2 0; do
    run_pair rft "$WORK/rft-s$SH" --model "$WORK/init" --keep-no-reward --min-reward -10 --shards $SH
    run_pair ppo "$WORK/ppo-s$SH" --model "$WORK/init" --critic "$WORK/init" --shards $SH
  done
  echo "== ddp: 2 processes ($([ "$DEV" = cuda ] && echo NCCL, cuda:0 + cuda:1 || echo gloo, CPU)) vs 1 process, same batch (float32, $(( $(date +%s) - T0 )) s)"
  maxdiff() { "$KBTRAIN" diff "$1" "$2" > "$3" && python3 -c "import json;print(json.load(open('$3'))['max_abs_diff'])"; }
  for SH in 2 0; do
    echo "--shards $SH: rft actor  max |w_1 - w_2| = $(maxdiff "$WORK/rft-s$SH-1gpu" "$WORK/rft-s$SH-2gpu" "$RES/rft-s$SH-diff.json")"
    echo "--shards $SH: ppo actor  max |w_1 - w_2| = $(maxdiff "$WORK/ppo-s$SH-1gpu" "$WORK/ppo-s$SH-2gpu" "$RES/ppo-s$SH-diff.json")"
    echo "--shards $SH: ppo critic max |w_1 - w_2| = $(maxdiff "$WORK/ppo-s$SH-1gpu/critic" "$WORK/ppo-s$SH-2gpu/critic" "$RES/ppo-s$SH-critic-diff.json")"
  done
  echo "(weights moved by training: max |w_init - w_ppo| = $(maxdiff "$WORK/init" "$WORK/ppo-s2-1gpu" "$RES/ppo-moved.json"))"
  cp "$WORK"/ppo-s2-1gpu/metrics.jsonl "$RES/ppo-1gpu-metrics.jsonl"; cp "$WORK"/ppo-s2-2gpu/metrics.jsonl "$RES/ppo-2gpu-metrics.jsonl"
  ;;

throughput)
  # One PPO update step (actor + critic: forward, backward, AdamW with fp32
  # master weights) on a Qwen2.5-0.5B-shaped model in bfloat16 (random
  # weights; vocabulary 151936), BATCH sequences of SEQ tokens (PROMPT of them
  # prompt), MICRO per pass; kbtrain first, then scripts/gpu/ppo_step_reference.py.
  # SMOKE=1: a tiny float32 model on the CPU (checks the script, not a figure).
  BATCH=${BATCH:-16}; SEQ=${SEQ:-1024}; PROMPT=${PROMPT:-512}; MICRO=${MICRO:-4}; STEPS=${STEPS:-5}; WARM=2
  DEV=cuda; DT=bfloat16
  if [ "${SMOKE:-0}" = 1 ]; then
    DEV=cpu; DT=float32; BATCH=4; SEQ=64; PROMPT=32; MICRO=2; STEPS=2
    write_config "$WORK/cfg.json" 64 128 2 4 2 802 float32
  else
    write_config "$WORK/cfg.json" 896 4864 24 14 2 151936 bfloat16
  fi
  log "random checkpoint of the shape ($DT)"
  "$KBTRAIN" init-model --config "$WORK/cfg.json" --tokenizer-from "$TOKDIR" --out "$WORK/m" --dtype "$DT"
  synthetic_trajectories "$WORK/traj.jsonl" "$BATCH" "$PROMPT" $((SEQ - PROMPT))
  log "kbtrain ppo: $((STEPS + WARM)) steps"
  "$KBTRAIN" ppo "$WORK/traj.jsonl" --model "$WORK/m" --critic "$WORK/m" --out "$WORK/out" --device "$DEV" \
    --dtype "$DT" --batch-size "$BATCH" --micro-batch "$MICRO" --epochs $((STEPS + WARM)) --lr 1e-6 \
    --no-shuffle > "$RES/kbtrain-summary.json"
  cp "$WORK/out/metrics.jsonl" "$RES/kbtrain-metrics.jsonl"
  log "plain PyTorch reference"
  python3 "$ROOT/scripts/gpu/ppo_step_reference.py" --config "$WORK/cfg.json" --batch "$BATCH" --seq "$SEQ" \
    --prompt "$PROMPT" --micro-batch "$MICRO" --steps "$STEPS" --warmup "$WARM" --device "$DEV" --dtype "$DT" \
    > "$RES/reference.json"
  python3 - "$RES" "$WARM" <<'PY'
import json, statistics, sys
res, warm = sys.argv[1], int(sys.argv[2])
rows = [json.loads(l) for l in open(f"{res}/kbtrain-metrics.jsonl")][warm:]
k_tps = statistics.median(r["tokens_per_s"] for r in rows)
k_s = statistics.median(r["seconds"] for r in rows)
ref = json.load(open(f"{res}/reference.json"))
print(f"== throughput: PPO update step (actor+critic fwd+bwd+AdamW), {ref['params_actor'] / 1e6:.1f}M-parameter Qwen2 shape, {ref['dtype']}, "
      f"{ref['batch']} x {ref['seq']} tokens, micro-batch {ref['micro_batch']}")
print(f"{'implementation':<28}{'tokens/s':>12}{'step s (median)':>18}")
print(f"{'kbtrain (C++ LibTorch)':<28}{k_tps:>12.0f}{k_s:>18.3f}")
print(f"{'PyTorch (Python) reference':<28}{ref['tokens_per_s']:>12.0f}{ref['step_s_median']:>18.3f}")
print(f"kbtrain / reference = {k_tps / ref['tokens_per_s']:.2f}x   (torch {ref['torch']}, "
      f"{ref['params_actor'] / 1e6:.1f}M parameters per model)")
PY
  ;;

learn)
  # The toy task family (docs/kbtrain.md): a random-init Qwen2 of HIDDEN x
  # LAYERS is first taught by rft on DEMOS demonstrations, in chunks of
  # RFT_CHUNK steps, until its greedy pass rate on the held-out tasks reaches
  # RFT_TARGET (or RFT_MAX_CHUNKS chunks; this stopping rule uses the
  # expression evaluator, which is cheap): partly competent on purpose, so
  # that what follows has room. Then up to ITERS iterations of: rollout on
  # training seeds (TASKS tasks x SAMPLES answers, temperature 1) -> ALGO
  # (ppo: critic from value-pretrain on the first rollout; or grpo) ->
  # evaluation on EVAL held-out seeds (never trained on): greedy, and
  # EVAL_SAMPLES answers per task at temperature 1 (the policy PPO
  # optimises). No demonstration is used after rft: any gain in the ppo rows
  # comes from the reward. After each evaluation, heldout.jsonl (a record per
  # stage: held-out greedy and T=1 reward and pass rate, and the reward of the
  # training rollout that stage's policy sampled on fresh seeds) and its
  # chart heldout.html are rewritten, so a run stopped by a time limit still
  # leaves its curve.
  # ENV=kbcheck scores every answer (training rollouts and the table's
  # evaluations) with the real environment: the answer's kernel built by
  # nvcc into a fixed forward.cpp and verified on the GPU against the task's
  # bundle (`kbtrain toy tasks` + `kbsynth import`, made here first);
  # ENV=expr (default) with the expression evaluator.
  # ENV_DEVICE: where answers are verified (default DEV; cuda:1 on a 2-GPU
  # machine keeps the verifiers off the policy's GPU).
  # TRAIN_POOL=fixed: every iteration samples the same TASKS training tasks
  # (with ENV=kbcheck the verdict cache then spares answers seen before);
  # fresh (default): new seeds each iteration.
  # LEARN_BUDGET_S: no new iteration starts after this many seconds.
  # LEARN_DIR=DIR keeps the run's state there (checkpoints, rollouts,
  # evaluations, bundles, verdicts) and makes the step resumable: run the
  # same command again (e.g. in the next device call) and finished stages are
  # skipped. Without it the state lives in a temporary directory.
  # START_FROM=DIR skips init and rft (a checkpoint of an earlier run);
  # KEEP_RFT=DIR keeps this run's rft checkpoint there for that.
  HIDDEN=${HIDDEN:-256}; LAYERS=${LAYERS:-4}; DEMOS=${DEMOS:-4000}; RFT_CHUNK=${RFT_CHUNK:-20}
  RFT_TARGET=${RFT_TARGET:-0.3}; RFT_MAX_CHUNKS=${RFT_MAX_CHUNKS:-8}; ALGO=${ALGO:-ppo}
  ITERS=${ITERS:-8}; TASKS=${TASKS:-256}; SAMPLES=${SAMPLES:-8}; EVAL=${EVAL:-256}; EVAL_SAMPLES=${EVAL_SAMPLES:-4}
  PPO_LR=${PPO_LR:-3e-5}; EPOCHS=${EPOCHS:-2}; CRITIC_LR=${CRITIC_LR:-1e-4}; LAMBDA=${LAMBDA:-0.95}; KL_COEF=${KL_COEF:-0.1}
  DEV=${DEV:-cuda}; ENV=${ENV:-expr}; ENV_JOBS=${ENV_JOBS:-12}; LEARN_BUDGET_S=${LEARN_BUDGET_S:-100000}
  TRAIN_POOL=${TRAIN_POOL:-fresh}; ENV_DEVICE=${ENV_DEVICE:-$DEV}
  L="${LEARN_DIR:-$WORK}"; mkdir -p "$L"
  first_seed() { if [ "$TRAIN_POOL" = fixed ]; then echo 10000; else echo $((10000 + $1 * TASKS)); fi; }
  trained() { [ -f "$1/train_summary.json" ]; }  # kbtrain writes it last
  # run_json FILE CMD...: CMD's stdout to FILE, unless FILE is there from an earlier run.
  run_json() { local f=$1; shift; [ -s "$f" ] && return 0; "$@" > "$f.tmp" && mv "$f.tmp" "$f"; }
  HELD=1000000
  T0=$(date +%s)
  if [ ! -f "$L/init/config.json" ]; then
    write_config "$L/cfg.json" "$HIDDEN" $((HIDDEN * 11 / 4)) "$LAYERS" 4 2 802 float32
    "$KBTRAIN" init-model --config "$L/cfg.json" --tokenizer-from "$TOKDIR" --out "$L/init" --seed 1
  fi
  [ -s "$L/demos.jsonl" ] || "$KBTRAIN" toy demos --first-seed 0 --last-seed $((DEMOS - 1)) --out "$L/demos.jsonl" > /dev/null
  ENV_ARGS=(--env expr)
  if [ "$ENV" = kbcheck ]; then
    if [ ! -f "$L/bundles/import-report.json" ]; then
      # Bundles of every task the run will see: held-out, then each iteration's training seeds.
      "$KBTRAIN" toy tasks --first-seed $HELD --last-seed $((HELD + EVAL - 1)) --out "$L/toy" > /dev/null
      for k in $(seq 1 "$ITERS"); do
        FIRST=$(first_seed "$k")
        "$KBTRAIN" toy tasks --first-seed $FIRST --last-seed $((FIRST + TASKS - 1)) --out "$L/toy" > /dev/null
      done
      "$BUILD/tools/kbsynth/kbsynth" import "$L/toy" -o "$L/bundles" > "$RES/import.log" 2>&1 \
        || { tail -5 "$RES/import.log"; exit 1; }
    fi
    log "bundles: $(ls "$L/bundles/toy" | wc -l) toy tasks captured ($(( $(date +%s) - T0 )) s)"
    ENV_ARGS=(--env kbcheck --bundles "$L/bundles/toy" --env-device "$ENV_DEVICE" --env-jobs "$ENV_JOBS"
              --env-work-dir "$L/solutions" --env-verdict-cache "$L/verdicts.jsonl")
  fi
  row() {  # label eval-json... -> one table row
    python3 - "$@" <<'PY' | tee -a "$RES/table.tsv"
import json, sys
label, files = sys.argv[1], sys.argv[2:]
cells = [label]
for f in files:
    r = json.load(open(f))
    cells += [f"{r['mean_reward']:+.3f}", f"{r['pass_rate']:.3f}"]
    env = r.get("environment")
    if env:
        cells.append(f"{env['distinct']} distinct ({env.get('cached', 0)} cached), {env['compile_errors']} compile errors, {env['correct']} correct, {env['seconds']:.0f} s")
    else:
        cells.append(json.dumps(r["reasons"]))
print("\t".join(cells))
PY
  }
  evaluate() {  # model label -> a table row (greedy, then sampled)
    run_json "$L/eval-$2.json" "$KBTRAIN" toy rollout --model "$1" --first-seed $HELD --last-seed $((HELD + EVAL - 1)) \
      --temperature 0 --max-new-tokens 96 --device "$DEV" --mode eval --out "$L/eval-$2.jsonl" "${ENV_ARGS[@]}"
    local files=("$L/eval-$2.json")
    if [ "$EVAL_SAMPLES" -gt 0 ]; then
      run_json "$L/eval-t1-$2.json" "$KBTRAIN" toy rollout --model "$1" --first-seed $HELD --last-seed $((HELD + EVAL - 1)) \
        --temperature 1 --samples "$EVAL_SAMPLES" --sampling-seed 777 --max-new-tokens 96 --device "$DEV" --mode eval \
        --out "$L/eval-t1-$2.jsonl" "${ENV_ARGS[@]}"
      files+=("$L/eval-t1-$2.json")
    fi
    # Not copied to $RES: the device tool returns at most 8 files, and
    # table.tsv and heldout.jsonl carry their figures.
    row "$2" "${files[@]}"
    heldout_curves
  }
  heldout_curves() {  # $RES/heldout.jsonl (a record per evaluated stage) and heldout.html, from $L's files
    python3 - "$L" "$ALGO" "$ITERS" > "$RES/heldout.jsonl" <<'PY'
import json, os, sys
L, algo, iters = sys.argv[1], sys.argv[2], int(sys.argv[3])
for step, label in enumerate(["rft"] + [f"{algo}-{k}" for k in range(1, iters + 1)]):
    if not os.path.exists(f"{L}/eval-{label}.json"):
        break
    rec = {"stage": label, "step": step}
    for key, name in (("greedy", f"eval-{label}.json"), ("t1", f"eval-t1-{label}.json")):
        if os.path.exists(f"{L}/{name}"):
            r = json.load(open(f"{L}/{name}"))
            rec[f"heldout_{key}_mean_reward"], rec[f"heldout_{key}_pass_rate"] = r["mean_reward"], r["pass_rate"]
    # The next iteration's training rollout was sampled by this stage's policy on fresh seeds.
    if os.path.exists(f"{L}/rollout-{step + 1}.json"):
        r = json.load(open(f"{L}/rollout-{step + 1}.json"))
        rec["rollout_mean_reward"], rec["rollout_pass_rate"] = r["mean_reward"], r["pass_rate"]
    print(json.dumps(rec))
PY
    "$KBTRAIN" plot "$RES/heldout.jsonl" --out "$RES/heldout.html" \
      --title "toy task family ($ENV): held-out reward per stage (0 = rft, k = after $ALGO iteration k)" 2>/dev/null || true
  }
  rft_pass() {  # model label -> PASS (greedy, expression evaluator: the stopping rule only)
    run_json "$L/rft-eval-$2.json" "$KBTRAIN" toy rollout --model "$1" --first-seed $HELD --last-seed $((HELD + EVAL - 1)) \
      --temperature 0 --max-new-tokens 96 --device "$DEV" --mode eval --out "$L/rft-eval-$2.jsonl"
    PASS=$(python3 -c "import json;print(json.load(open('$L/rft-eval-$2.json'))['pass_rate'])")
    log "$2: held-out greedy pass rate $PASS (expression evaluator)"
  }
  : > "$RES/training-rollouts.txt"
  printf 'stage\tgreedy reward\tgreedy pass\tgreedy scoring\tT=1 reward\tT=1 pass\tT=1 scoring\n' | tee "$RES/table.tsv"
  POLICY="$L/init"; METRICS=(); PASS=0
  if [ -n "${START_FROM:-}" ]; then  # an rft checkpoint of an earlier run: skip rft
    POLICY="$START_FROM"; RFT_MAX_CHUNKS=0
  fi
  for c in $(seq 1 "$RFT_MAX_CHUNKS"); do
    trained "$L/rft-$c" || "$KBTRAIN" rft "$L/demos.jsonl" --model "$POLICY" --out "$L/rft-$c" --device "$DEV" \
      --batch-size 64 --micro-batch 64 --lr 1e-3 --warmup-steps 5 --max-steps "$RFT_CHUNK" --seed "$c" --no-progress \
      > /dev/null
    METRICS+=("$L/rft-$c/metrics.jsonl")
    POLICY="$L/rft-$c"
    rft_pass "$POLICY" "rft-$c"
    python3 -c "import sys; sys.exit(0 if $PASS >= $RFT_TARGET else 1)" && break
  done
  if [ -n "${KEEP_RFT:-}" ] && [ -z "${START_FROM:-}" ]; then rm -rf "$KEEP_RFT"; cp -r "$POLICY" "$KEEP_RFT"; fi
  evaluate "$POLICY" "rft"
  CRITIC=""; REF="$POLICY"  # the k3 KL term (KL_COEF) keeps the policy near its rft self
  KL=(--kl-coef "$KL_COEF" --reference "$REF")
  for k in $(seq 1 "$ITERS"); do
    if ! trained "$L/it-$k" && [ $(( $(date +%s) - T0 )) -gt "$LEARN_BUDGET_S" ]; then
      log "LEARN_BUDGET_S=$LEARN_BUDGET_S spent: stopping before iteration $k (LEARN_DIR resumes here)"; break
    fi
    FIRST=$(first_seed "$k")
    if ! trained "$L/it-$k"; then
      run_json "$L/rollout-$k.json" "$KBTRAIN" toy rollout --model "$POLICY" --first-seed $FIRST \
        --last-seed $((FIRST + TASKS - 1)) --samples "$SAMPLES" --temperature 1 --max-new-tokens 96 --device "$DEV" \
        --sampling-seed "$k" --out "$L/roll-$k.jsonl" "${ENV_ARGS[@]}"
      if [ "$ALGO" = ppo ] && [ -z "$CRITIC" ] && ! trained "$L/critic0"; then
        "$KBTRAIN" value-pretrain "$L/roll-$k.jsonl" --model "$POLICY" --out "$L/critic0" --device "$DEV" \
          --batch-size 64 --micro-batch 64 --epochs 3 --lr "$CRITIC_LR" --lambda "$LAMBDA" --no-progress > /dev/null
      fi
      [ "$ALGO" = ppo ] && [ -z "$CRITIC" ] && CRITIC="$L/critic0"
      if [ "$ALGO" = ppo ]; then
        "$KBTRAIN" ppo "$L/roll-$k.jsonl" --model "$POLICY" --critic "$CRITIC" --out "$L/it-$k" --device "$DEV" \
          --batch-size 64 --micro-batch 64 --epochs "$EPOCHS" --lr "$PPO_LR" --critic-lr "$CRITIC_LR" --lambda "$LAMBDA" \
          "${KL[@]}" --no-progress > /dev/null
      else
        "$KBTRAIN" grpo "$L/roll-$k.jsonl" --model "$POLICY" --out "$L/it-$k" --device "$DEV" \
          --batch-size 64 --micro-batch 64 --epochs "$EPOCHS" --lr "$PPO_LR" "${KL[@]}" --no-progress > /dev/null
      fi
    fi
    python3 -c "import json;r=json.load(open('$L/rollout-$k.json'));print(f\"  iteration $k training rollout (T=1, $TRAIN_POOL seeds): mean reward {r['mean_reward']:+.3f}, pass {r['pass_rate']:.3f}, {r.get('environment', '')}\")" \
      | tee -a "$RES/training-rollouts.txt" >&2
    [ "$ALGO" = ppo ] && CRITIC="$L/it-$k/critic"
    [ -f "$L/critic0/train_summary.json" ] && [ "$k" = 1 ] && METRICS+=("$L/critic0/metrics.jsonl")
    METRICS+=("$L/it-$k/metrics.jsonl")
    POLICY="$L/it-$k"
    evaluate "$POLICY" "$ALGO-$k"
  done
  "$KBTRAIN" plot "${METRICS[@]}" --out "$RES/curves.html" --title "toy task family ($ENV): rft then $ALGO" 2>/dev/null || true
  echo "== learn ($ENV scoring): held-out ($EVAL tasks) after each stage, greedy and $EVAL_SAMPLES samples at T=1;" \
       "reward +1 correct, -1 otherwise; this invocation $(( $(date +%s) - T0 )) s"
  column -t -s $'\t' "$RES/table.tsv" 2>/dev/null || cat "$RES/table.tsv"
  cat "$RES/training-rollouts.txt" 2>/dev/null || true
  ;;
envdiag)
  # Where the toy environment's time goes (--env kbcheck): one toy answer
  # built by nvcc and verified 3 times on cuda:0 (kbcheck's phases: worker
  # start-up, the reference worker's), and what CUDA, cuBLAS and cuDNN cost
  # to start in a fresh process (the candidate worker makes all three).
  D="$WORK/diag"; mkdir -p "$D/sol/kernels"
  "$KBTRAIN" toy tasks --first-seed 0 --last-seed 0 --out "$D/toy" > /dev/null
  "$BUILD/tools/kbsynth/kbsynth" import "$D/toy" -o "$D/b" > "$RES/import.log" 2>&1 || { tail -5 "$RES/import.log"; exit 1; }
  python3 - "$ROOT/lib/toy/environment.cpp" "$D/sol" <<'PY'
import re, sys
src, sol = open(sys.argv[1]).read(), sys.argv[2]
get = lambda name: re.search(name + r' = R"\((.*?)\)";', src, re.S).group(1)
open(f"{sol}/forward.cpp", "w").write(get("kForwardCuda"))
kernel = "__global__ void k(const float* x, float* y, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) y[i] = x[i] + 7.0f;\n}"
open(f"{sol}/kernels/answer.cu", "w").write("#include <cuda_runtime.h>\n\n" + kernel + "\n" + get("kLaunchCuda"))
PY
  KBCHECK="$BUILD/tools/kbcheck/kbcheck"
  for k in 1 2 3; do
    /usr/bin/time -f "verify $k: %e s wall, %U s user, %S s sys (kbcheck and its workers)" \
      "$KBCHECK" verify "$D/b/toy/toy-0" "$D/sol" --device cuda:0 --json "$RES/verify-$k.json" -q || true
  done
  python3 - "$RES" <<'PY'
import json, sys
for k in (1, 2, 3):
    r = json.load(open(f"{sys.argv[1]}/verify-{k}.json"))
    v = r["stages"]["verify"]["report"] or {}
    w = v.get("worker", {})
    print(f"verify {k}: {r['status']}, build {r['stages']['build']['seconds']:.2f} s, verify {v.get('seconds', 0):.2f} s;"
          f" candidate wall {w.get('wall_seconds', 0):.2f} s cpu {w.get('cpu_seconds', 0):.2f} s phases {json.dumps(w.get('phases'))};"
          f" reference wait {v.get('reference_seconds', 0):.2f} s phases {json.dumps(v.get('reference_phases'))}")
PY
  python3 - <<'PY'
import ctypes, time, resource
def cpu(): r = resource.getrusage(resource.RUSAGE_SELF); return r.ru_utime + r.ru_stime
t, c = time.perf_counter(), cpu(); import torch; print(f"import torch: {time.perf_counter() - t:.2f} s wall {cpu() - c:.2f} s cpu")
for what, fn in [("CUDA context (first tensor)", lambda: torch.zeros(1, device="cuda:0")),
                 ("cuBLAS (first matmul)", lambda: torch.ones(8, 8, device="cuda:0") @ torch.ones(8, 8, device="cuda:0")),
                 ("cuDNN handle (cudnnCreate)", lambda: ctypes.CDLL("libcudnn.so.9").cudnnCreate(ctypes.byref(ctypes.c_void_p())))]:
    t, c = time.perf_counter(), cpu(); fn(); torch.cuda.synchronize()
    print(f"{what}: {time.perf_counter() - t:.2f} s wall {cpu() - c:.2f} s cpu")
PY
  ;;
*)
  echo "unknown step '$STEP' (ddp, throughput, learn, envdiag)"; exit 2 ;;
esac
