// Checkpoints of a training run, so that a stopped run (SIGINT, SIGTERM, a
// lost machine after --checkpoint-every) continues where it was
// (docs/kbtrain.md "Checkpoints, stopping and resuming"). <out>/checkpoint:
//
//   state.json                      stage, completed steps, the options that must match on
//                                   resume ("key"), the last metrics record, the stage's scalars
//   model/                          the trained model (a policy checkpoint; value-pretrain: the critic)
//   critic/                         ppo: the critic
//   optimizer.safetensors           AdamW of the model: m, v, float32 master copies, step count
//   critic_optimizer.safetensors    ppo
//   tables-rank<R>.safetensors      each process's per-token quantities fixed before the
//                                   steps (ppo/grpo: log pi_old, log pi_ref, advantages,
//                                   returns, V_old; value-pretrain: the epoch's targets)
//
// The shuffle is a function of --seed and the step, and a step draws no other
// random numbers, so the step counter is the whole random state. A checkpoint
// is written into checkpoint.tmp/ and renamed over the old one, so a crash
// while writing leaves the previous checkpoint.
#pragma once

#include <ATen/ATen.h>

#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/json.h"
#include "rl/distributed.h"
#include "rl/optimizer.h"
#include "rl/train_common.h"
#include "rl/trainer.h"

namespace kb::rl {

std::filesystem::path checkpointDir(const TrainOptions& o);

// What a resumed run starts from.
struct ResumePoint {
  bool active = false;
  size_t step = 0;  // completed optimizer steps
  std::filesystem::path dir;
  Json state;  // state.json
};

// With o.resume: reads and checks <out>/checkpoint (stage, options, world
// size); without: refuses an --out that holds an unfinished run's
// checkpoint. Throws kb::UsageError.
ResumePoint openResume(const TrainOptions& o, const std::string& stage, int world_size);

// A resumed run's checkpoint must lie within this run's `steps` steps;
// throws kb::UsageError naming both otherwise.
void checkResumeFits(const ResumePoint& resume, size_t steps);

using NamedTables = std::vector<std::pair<std::string, TokenTable*>>;

// Saves the run's state after `completed` steps: every process writes its
// tables, rank 0 the model(s) (`write_models(dir)`), the optimizer state(s)
// and state.json, then swaps the directory in. Collective (all processes).
void writeCheckpoint(const TrainOptions& o, Distributed& d, const std::string& stage, size_t completed,
                     size_t steps, const Json& last, const Json& scalars, const NamedTables& tables,
                     const std::vector<std::pair<std::string, const AdamW*>>& optimizers,
                     const std::function<void(const std::filesystem::path&)>& write_models);

void loadOptimizer(AdamW& optimizer, const std::filesystem::path& file);
void loadTables(const std::filesystem::path& dir, int rank, const Dataset& d, const NamedTables& tables);

// Whether any process was asked to stop (one collective per call).
bool stopAgreed(const TrainOptions& o, Distributed& d, const at::Device& device);

// After a finished run: the checkpoint is no longer needed (rank 0).
void removeCheckpoint(const TrainOptions& o, const Distributed& d);

// The summary fields of a stopped or resumed run.
void addCheckpointFields(Json& summary, const TrainOptions& o, const ResumePoint& resume, bool stopped,
                         size_t completed);

}  // namespace kb::rl
