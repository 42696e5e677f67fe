#include "train_flags.h"

#include <cstdint>

#include "../cli_parse.h"

namespace kb::rl {

void addTrainFlags(CLI::App* app, TrainOptions& o, const std::string& model_help) {
  app->add_option("trajectories", o.trajectories, "trajectory JSONL files (kbrollout's output, docs/trajectory-format.md)")
      ->required()
      ->check(CLI::ExistingFile);
  app->add_option("--model", o.model, model_help)->required();
  app->add_option("-o,--out", o.out,
                  "checkpoint directory to write (config.json + model.safetensors + tokenizer files); locked "
                  "while the run lasts (a second run into it is refused)")
      ->required();
  app->add_option("--tokenizer", o.tokenizer, "tokenizer.json (default: <model>/tokenizer.json)");
  app->add_option("--metrics", o.metrics, "metrics JSONL, one record per optimizer step (default: <out>/metrics.jsonl)");
  app->add_option("--device", o.device,
                  "cpu, cuda (with WORLD_SIZE > 1 each process takes cuda:LOCAL_RANK) or cuda:N")
      ->capture_default_str()
      ->check(kb::tools::deviceValidator());
  app->add_option("--dtype", o.dtype, "auto (the checkpoint's), float32 or bfloat16; the optimizer keeps float32 "
                                      "master weights for bfloat16")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "float32", "bfloat16", "float16"}));
  app->add_option("--backend", o.backend, "data-parallel backend: auto (nccl on cuda, gloo on cpu), gloo, nccl")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "gloo", "nccl"}));
  app->add_option("--lr", o.lr, "AdamW learning rate (peak, after warm-up)")->capture_default_str();
  app->add_option("--warmup-steps", o.warmup_steps, "linear warm-up from 0 over this many steps")->capture_default_str();
  app->add_option("--weight-decay", o.weight_decay, "AdamW decoupled weight decay")->capture_default_str();
  app->add_option("--beta1", o.beta1, "AdamW first-moment decay")->capture_default_str();
  app->add_option("--beta2", o.beta2, "AdamW second-moment decay")->capture_default_str();
  app->add_option("--adam-eps", o.adam_eps, "AdamW epsilon (added to the root of the second moment)")
      ->capture_default_str();
  app->add_option("--max-grad-norm", o.max_grad_norm, "clip the global gradient norm to this (0: no clipping)")
      ->capture_default_str();
  app->add_option("--batch-size", o.batch_size, "trajectories per optimizer step, all processes together")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  app->add_option("--micro-batch", o.micro_batch,
                  "sequences per forward/backward pass in each process; gradients accumulate over them")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  app->add_option("--epochs", o.epochs, "passes over the trajectories")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  app->add_option("--max-steps", o.max_steps, "stop after this many optimizer steps (0: no limit)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  app->add_option("--checkpoint-every", o.checkpoint_every,
                  "write <out>/checkpoint after every N optimizer steps (0: only when stopped by SIGINT/SIGTERM)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  app->add_flag("--resume", o.resume,
                "continue the stopped run whose checkpoint is in <out>/checkpoint (weights, optimizer state, step); "
                "give the same trajectories and options");
  app->add_option("--seed", o.seed, "shuffling seed (the same on every process)")->capture_default_str();
  app->add_option("--shards", o.shards,
                  "episode e goes to shard e % shards, shard s to process s % WORLD_SIZE; micro-batches stay "
                  "within a shard, so runs with the same --shards give the same weights for any WORLD_SIZE "
                  "dividing it (0: WORLD_SIZE)")
      ->capture_default_str();
  app->add_option("--grad-dtype", o.grad_dtype,
                  "gradient accumulation buffers: auto (float64 for float32 models, else float32), float64, float32")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "float64", "float32"}));
  app->add_flag("!--no-shuffle", o.shuffle, "keep the file order");
  app->add_option("--max-length", o.max_length, "cut sequences longer than this many tokens (0: no limit)")
      ->capture_default_str();
  app->add_flag("!--retokenize", o.use_recorded_tokens,
                "ignore recorded token ids and encode every conversation with the chat template");
  app->add_flag("!--no-progress", o.progress, "no per-step line on stderr");
  app->add_option("--unprofiled-correct-reward", o.unprofiled_correct_reward,
                  "reward for a correct solution that could not be timed (reward.value null, excluded "
                  "profile_not_available); unset: such trajectories have no reward");
}

void addPolicyGradientFlags(CLI::App* app, PolicyGradientOptions& p, bool ppo) {
  app->add_option("--eps-low", p.eps_low, "clip ratio below at 1 - eps_low")->capture_default_str();
  app->add_option("--eps-high", p.eps_high, "clip ratio above at 1 + eps_high (clip-higher, DAPO)")
      ->capture_default_str();
  app->add_option("--kl-coef", p.kl_coef, "weight of the k3 KL to --reference in the loss (0: no KL term)")
      ->capture_default_str();
  app->add_option("--reference", p.reference, "reference policy checkpoint for the KL term (e.g. the RFT model)");
  app->add_option("--old-logprobs", p.old_logprobs,
                  "recompute: log pi_old from the model before any update (exact on-policy start); recorded: the "
                  "rollout's sampled log-probs (ratios then include the rollout/trainer mismatch)")
      ->capture_default_str()
      ->check(CLI::IsMember({"recompute", "recorded"}));
  if (ppo) {
    app->add_option("--critic", p.critic, "critic checkpoint (value-pretrain's --out; a policy checkpoint starts "
                                          "the value head at 0)")
        ->required();
    app->add_option("--critic-out", p.critic_out, "where the updated critic goes (default <out>/critic)");
    app->add_option("--critic-lr", p.critic_lr, "critic learning rate (0: --lr)")->capture_default_str();
    app->add_option("--gamma", p.gamma, "GAE discount")->capture_default_str();
    app->add_option("--lambda", p.lambda, "GAE lambda")->capture_default_str();
    app->add_option("--value-clip", p.value_clip, "clip V around the rollout's value by this (<= 0: no clipping)")
        ->capture_default_str();
    app->add_flag("!--no-whiten", p.whiten_advantages, "keep GAE advantages unnormalised");
  } else {
    app->add_flag("!--no-std", p.grpo_scale_by_std, "advantage = reward - group mean, not divided by the group std");
  }
}

}  // namespace kb::rl
