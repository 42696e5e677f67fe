// kbtrain's flags shared by the training stages: addTrainFlags for every
// stage (data, model, output, optimizer, batching, stopping), and
// addPolicyGradientFlags for ppo and grpo (lib/rl/trainer.h's options).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "rl/trainer.h"

namespace kb::rl {

void addTrainFlags(CLI::App* app, TrainOptions& o, const std::string& model_help);
void addPolicyGradientFlags(CLI::App* app, PolicyGradientOptions& p, bool ppo);

}  // namespace kb::rl
