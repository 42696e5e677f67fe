// `kbtrain toy demos|tasks|rollout`: the toy task family of the learning
// demonstration (docs/kbtrain.md "The toy task family"), flags over
// lib/toy/task.h and lib/toy/rollout.h.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>

#include <CLI/CLI.hpp>

#include "toy/rollout.h"

namespace kb::toy {

struct ToyCli {
  CLI::App *toy = nullptr, *demos = nullptr, *tasks = nullptr, *rollout = nullptr;
  uint64_t first = 0, last = 63;
  std::filesystem::path out;
  ToyRolloutOptions rollout_options;
};

void addToyCommands(CLI::App& app, ToyCli& t);
// The exit status of the chosen toy subcommand; nullopt when another one was chosen.
std::optional<int> runToyCommands(ToyCli& t);

}  // namespace kb::toy
