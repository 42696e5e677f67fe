// What the stages share (internal to lib/rl): the data set of episodes, the
// step schedule, the per-process share, micro-batches as tensors, and the
// per-step metric sums that processes add up.
#pragma once

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "core/json.h"
#include "llm/model.h"
#include "rl/distributed.h"
#include "rl/episode.h"
#include "rl/filters.h"
#include "rl/metrics.h"
#include "rl/gradients.h"
#include "rl/optimizer.h"
#include "rl/trainer.h"

namespace kb::rl {

struct Dataset {
  std::vector<Episode> episodes;
  size_t records = 0, unreadable_lines = 0, dropped_no_reward = 0, truncated = 0;
  size_t from_recorded = 0, from_template = 0, substituted_rewards = 0;
  FilterSummary filter;  // rft only
  bool filtered = false;
  Json toJson() const;
};

// Reads every file; with `filters` applies them (rft), with need_reward drops
// episodes without a reward (counted). Throws kb::UsageError when nothing is left.
Dataset loadDataset(const TrainOptions& o, const FilterOptions* filters, bool need_reward);

// Global episode indices of each optimizer step: `epochs` passes, each a
// (seeded) shuffle cut into chunks of batch_size. Same on every process.
std::vector<std::vector<size_t>> makeSchedule(size_t episodes, const TrainOptions& o);

// Which process works on which episode: episode e is in shard e % shards,
// shard s is processed by rank s % world_size (fixed for the run, so
// per-episode data computed once stays where it is used).
struct Sharding {
  size_t shards = 1;
  int rank = 0, world_size = 1;
  size_t shardOf(size_t episode) const { return episode % shards; }
  bool owns(size_t episode) const {
    return static_cast<int>(shardOf(episode) % static_cast<size_t>(world_size)) == rank;
  }
};
Sharding makeSharding(const TrainOptions& o, const Distributed& d);

struct SeqRef {
  size_t episode, sequence;
};

// Right-padded tensors for a few sequences. Per-token quantities are
// aligned to targets: column j-1 describes token ids[j] (predicted at j-1).
struct MicroBatch {
  std::vector<SeqRef> items;
  at::Tensor ids;        // [B, T] int64
  at::Tensor attention;  // [B, T] bool
  at::Tensor mask;       // [B, T-1] float32: 1 where ids[:, 1:] is an action token
  int64_t tokens = 0;    // real (non-padding) tokens
};
// Micro-batches of at most `size` sequences, cut within each group.
std::vector<MicroBatch> microBatches(const Dataset& d, const std::vector<std::vector<SeqRef>>& groups, int64_t size,
                                     const at::Device& device);

// The sequences of the given episodes that this process owns, one group per
// owned shard (in shard order), episodes in the order given.
std::vector<std::vector<SeqRef>> ownedSequences(const Dataset& d, const Sharding& sh,
                                                const std::vector<size_t>& episodes);

// Per-token values stored per sequence (token-aligned: entry j for ids[j]).
using TokenTable = std::vector<std::vector<std::vector<float>>>;  // [episode][sequence][token]
TokenTable emptyTable(const Dataset& d);
at::Tensor gatherTable(const TokenTable& t, const MicroBatch& mb, const at::Device& device);  // [B, T-1]
void scatterTable(TokenTable& t, const MicroBatch& mb, const at::Tensor& values);            // values [B, T-1]

// log pi(ids[:, j] | ids[:, :j]) for j >= 1: [B, T-1] float32, from logits [B, T, V].
at::Tensor targetLogprobs(const at::Tensor& logits, const at::Tensor& ids);

// The device of this process and the collective backend.
at::Device processDevice(const TrainOptions& o, const Distributed& d);
std::string backendFor(const TrainOptions& o);

// Named sums (and maxima) that all processes add up once per step.
class StepSums {
 public:
  void add(const std::string& name, double value);
  void max(const std::string& name, double value);
  double get(const std::string& name) const;
  void reduce(Distributed& d, const at::Device& device);  // sums and maxima over processes

 private:
  std::vector<std::string> names_, max_names_;
  std::vector<double> values_, max_values_;
};

// The mean reward and pass rate of the step's episodes (all processes' data is known everywhere).
void addRewardMetrics(Json& record, const Dataset& d, const std::vector<size_t>& episodes);

class Stopwatch {
 public:
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

void progress(const TrainOptions& o, const Distributed& d, const std::string& line);
void synchronize(const at::Device& device);
std::filesystem::path metricsPath(const TrainOptions& o);
Json optionsJson(const TrainOptions& o);

}  // namespace kb::rl

namespace kb::rl {

// GAE (advantages.h) per owned episode over its action tokens in order, with
// the episode's reward on the last one: fills adv and ret (= adv + value).
void gaeTables(const Dataset& d, const Sharding& sh, const TokenTable& values, double gamma, double lambda,
               TokenTable& adv, TokenTable& ret);

// Number of action tokens of the given episodes (all processes).
double actionTokens(const Dataset& d, const std::vector<size_t>& episodes);

// Zero-initialised named sums, in a fixed order (so processes agree).
StepSums zeroSums(const std::vector<std::string>& sums, const std::vector<std::string>& maxima);

// The explained-variance sums ev_n, ev_y, ev_yy, ev_r, ev_rr of returns vs
// values over the masked tokens, and the variance they give (null when flat).
void addValueSums(StepSums& sums, const at::Tensor& values, const at::Tensor& returns, const at::Tensor& mask);
Json explainedVariance(const StepSums& sums);

// The fields every stage's record ends with (grad_norm, action_tokens,
// tokens, tokens_per_s, seconds); then writes it and prints the progress line.
void finishStep(Json& record, const StepSums& sums, double action_tokens, double grad_norm, double seconds,
                MetricsWriter& metrics, const TrainOptions& o, const Distributed& d);

// AdamW settings of the common flags with learning rate `lr`.
AdamWOptions adamOptions(const TrainOptions& o, double lr);

// No-gradient passes over the owned sequences of `episodes`, into `table`:
// the critic's V(s_t), the policy's log pi(token).
struct Critic;
void criticValues(const Critic& critic, const Dataset& data, const Sharding& sh, const std::vector<size_t>& episodes,
                  int64_t micro, const at::Device& device, TokenTable& table);
void policyLogprobs(const llm::Model& model, const Dataset& data, const Sharding& sh,
                    const std::vector<size_t>& episodes, int64_t micro, const at::Device& device, TokenTable& table);

// The end of every optimizer step: sum the gradients over processes, clip
// their global norm, AdamW, clear them. Returns {norm before clipping, lr}.
struct Update {
  double grad_norm = 0, lr = 0;
};
Update applyUpdate(Distributed& d, Gradients& grads, AdamW& optimizer, double max_grad_norm);

}  // namespace kb::rl
