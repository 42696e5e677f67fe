// The training stages of kbtrain (DESIGN.md §1): rejection fine-tuning,
// value pretraining, PPO and GRPO. Each reads trajectory JSONL files and a
// model, writes a checkpoint, a metrics JSONL (one record per optimizer
// step) and a summary, and runs data-parallel when started torchrun-style.
// docs/kbtrain.md documents every option, metric and equation.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "rl/filters.h"

namespace kb::rl {

struct TrainOptions {
  std::vector<std::filesystem::path> trajectories;  // JSONL files
  std::filesystem::path model;      // the model to train (policy checkpoint; critic for value-pretrain)
  std::filesystem::path tokenizer;  // default: <model>/tokenizer.json
  std::filesystem::path out;        // checkpoint directory written at the end
  std::filesystem::path metrics;    // default: <out>/metrics.jsonl
  std::string device = "cpu";       // cpu, cuda (each process takes cuda:LOCAL_RANK), cuda:N
  std::string dtype = "auto";       // auto (the checkpoint's), float32, bfloat16
  std::string backend = "auto";     // auto: nccl on cuda, gloo on cpu
  double lr = 1e-5;
  double weight_decay = 0.0;
  double beta1 = 0.9, beta2 = 0.999, adam_eps = 1e-8;
  int64_t warmup_steps = 0;
  double max_grad_norm = 1.0;
  int64_t batch_size = 16;   // episodes per optimizer step, all processes together
  int64_t micro_batch = 4;   // sequences per forward/backward pass (per process)
  int64_t epochs = 1;        // passes over the episodes
  int64_t max_steps = 0;     // stop after this many optimizer steps (0: no limit)
  // Episode e belongs to shard e % shards, shard s to process s % WORLD_SIZE;
  // micro-batches never mix shards. Runs with the same shards give the same
  // weights for any WORLD_SIZE dividing it. 0: shards = WORLD_SIZE.
  int64_t shards = 0;
  std::string grad_dtype = "auto";  // gradient accumulation: auto, float64, float32 (gradients.h)
  uint64_t seed = 0;         // shuffling
  bool shuffle = true;
  size_t max_length = 0;     // cut longer sequences (0: no limit)
  bool use_recorded_tokens = true;
  // A correct solution that kbrollout could not time has reward.value null
  // (excluded "profile_not_available"); when set, such a trajectory gets this
  // reward instead of being left out (1 = the paper's "correct, not faster").
  std::optional<double> unprofiled_correct_reward;
  bool progress = true;      // a line per step on stderr (rank 0)
  // Checkpoints (docs/kbtrain.md "Checkpoints, stopping and resuming"):
  // <out>/checkpoint is written after every checkpoint_every-th step (0:
  // never) and after the step during which stop_requested() turned true
  // (SIGINT / SIGTERM in kbtrain); the run then returns with "stopped": true.
  // resume: continue from <out>/checkpoint (weights, optimizer state, step,
  // the per-token tables fixed at the start); the options that shape the run
  // must match (checked, kb::UsageError otherwise).
  int64_t checkpoint_every = 0;
  bool resume = false;
  std::function<bool()> stop_requested;
};

struct RftOptions {
  TrainOptions train;
  FilterOptions filters;
};

struct ValuePretrainOptions {
  TrainOptions train;  // train.model: a critic or a policy checkpoint (head starts at 0)
  double gamma = 1.0, lambda = 0.95;
  double value_clip = 0.0;  // > 0: clipped value loss around the step's starting values
};

struct PolicyGradientOptions {
  TrainOptions train;
  std::string estimator = "gae";  // "gae" (PPO with a critic) or "grpo"
  double eps_low = 0.2, eps_high = 0.28;
  double kl_coef = 0.0;                  // > 0: needs `reference`
  std::filesystem::path reference;       // reference policy for the k3 KL term
  std::string old_logprobs = "recompute";  // "recompute" (the model before the update) or "recorded"
  // PPO
  std::filesystem::path critic;          // critic to start from (value-pretrain's output)
  std::filesystem::path critic_out;      // default <out>/critic
  double gamma = 1.0, lambda = 0.95;
  double value_clip = 0.2;               // <= 0: unclipped value loss
  double critic_lr = 0.0;                // 0: train.lr
  bool whiten_advantages = true;         // PPO: (A - mean) / std over all action tokens
  // GRPO
  bool grpo_scale_by_std = true;
};

// Each returns the run summary (also written to <out>/train_summary.json by
// rank 0): the data counts, the filter counts (rft), the steps, the final
// metrics; "stopped": true (and "checkpoint") when stop_requested ended it
// early, "resumed_from_step" when it continued a checkpoint. Throws
// kb::UsageError for bad input, kb::Error otherwise.
Json runRft(const RftOptions& options);
Json runValuePretrain(const ValuePretrainOptions& options);
Json runPolicyGradient(const PolicyGradientOptions& options);

}  // namespace kb::rl
