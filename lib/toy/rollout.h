// Rollouts of the toy task family (task.h) with the local policy, and
// its demonstrations: each one an episode of lib/agent's rollout loop
// (episode.h) judged by a toy environment (environment.h), written by
// lib/agent's TrajectoryWriter, so kbtrain reads them like kbrollout's.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "core/json.h"
#include "toy/environment.h"

namespace kb::toy {

struct ToyRolloutOptions {
  std::filesystem::path model;
  std::filesystem::path out;  // trajectory JSONL (overwritten)
  uint64_t first_seed = 0, last_seed = 63;  // tasks first..last inclusive
  int samples = 1;                          // answers per task
  double temperature = 1.0;
  int64_t max_new_tokens = 128;
  std::string device = "cpu", dtype = "auto";
  uint64_t sampling_seed = 0;
  int64_t max_batch = 256;
  std::string mode = "train";
  // How answers are scored: "expr" (the expression evaluator, task.h)
  // or "kbcheck" (the real build and verify, environment.h, with env_options).
  std::string env = "expr";
  ToyEnvOptions env_options;
};

// Samples every answer in one batch on the local policy (generateBatch),
// lets the environment score the batch where that is cheaper (kbcheck:
// one reference worker per task), runs each answer through the loop and
// writes the records (the file overwritten); returns {tasks, samples, mean_reward,
// pass_rate, reasons{...}, env, (kbcheck) environment{...}}. Answers the
// environment could not score (infra_error) carry no reward and are left
// out of mean_reward and pass_rate.
Json runToyRollout(const ToyRolloutOptions& options);

// One demonstration trajectory per task (reward 1, no token ids: kbtrain
// tokenizes them with the chat template). Returns {tasks}.
Json writeToyDemonstrations(uint64_t first_seed, uint64_t last_seed, const std::filesystem::path& out);

// The family's tasks first..last as KernelBench programs, `dir`/toy-<seed>.py
// (16384 float32 elements), which `kbsynth import DIR -o OUT` captures into
// task bundles OUT/<dir name>/toy-<seed>/ for --env kbcheck. Returns {tasks, dir}.
Json writeToyPrograms(uint64_t first_seed, uint64_t last_seed, const std::filesystem::path& dir);

}  // namespace kb::toy
