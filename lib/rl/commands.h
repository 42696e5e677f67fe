// What kbtrain says when a training stage (rft, value-pretrain, ppo, grpo)
// was stopped by SIGINT / SIGTERM: how far it got and the command that
// resumes it (docs/kbtrain.md).
#pragma once

#include <string>
#include <vector>

#include "core/json.h"

namespace kb::rl {

// "stopped by SIGINT after step S of N; checkpoint in DIR; resume with: ARGS
// --resume" (ARGS: the command line without --resume, each argument quoted
// where the shell needs it), or "...; no step was done, nothing to resume".
std::string stopMessage(const Json& summary, int signal, const std::vector<std::string>& args);

}  // namespace kb::rl
