// Rollouts of the toy task family (toy_task.h) with the local policy, and
// its demonstrations: trajectory JSONL that kbtrain reads like kbrollout's.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "core/json.h"

namespace kb::rl {

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
};

// Samples, scores and writes; returns {tasks, samples, mean_reward,
// pass_rate, reasons{...}}.
Json runToyRollout(const ToyRolloutOptions& options);

// One demonstration trajectory per task (reward 1, no token ids: kbtrain
// tokenizes them with the chat template). Returns {tasks}.
Json writeToyDemonstrations(uint64_t first_seed, uint64_t last_seed, const std::filesystem::path& out);

// A random model of `config_path`'s shape with the tokenizer files of
// `tokenizer_dir`, written to `out` (for benchmarks and the toy run).
void writeRandomModel(const std::filesystem::path& config_path, const std::filesystem::path& tokenizer_dir,
                      const std::filesystem::path& out, const std::string& dtype, uint64_t seed);

}  // namespace kb::rl
