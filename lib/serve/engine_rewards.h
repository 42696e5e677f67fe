// The reward endpoints in the RL engines' own request and response shapes
// (docs/kbserve.md "Rewards for engines"): OpenRLHF's remote reward model
// ({query, prompts, labels} -> {rewards, scores, extra_logs}) and slime's
// remote_rm ({prompt, response, label} -> a number). The solution is taken
// from the model's response text as kbrollout takes it from a reply: its
// <tool_call> blocks, write_file and edit_file applied through the agent's
// toolbox to a fresh workspace; a reply without such calls may give its
// files as fenced code blocks. Each becomes an evaluation of the service
// (queued, journaled, scheduled like any other).
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/json.h"

namespace kb::serve {

class Service;

struct ResponseSolution {
  std::map<std::string, std::string> files;  // relative to the solution directory
  std::string source;                        // "tool_calls", "fenced_blocks" or "none"
  std::vector<std::string> notes;            // calls refused or ignored, and why
};

// The solution in `response`, applied to a workspace laid out under
// `scratch` for the task at `task_dir` (removed afterwards).
ResponseSolution solutionFromResponse(const std::string& response, const std::filesystem::path& task_dir,
                                      const std::filesystem::path& guide, const std::filesystem::path& interface_header,
                                      const std::filesystem::path& scratch);

struct EngineRewardOptions {
  std::filesystem::path guide, interface_header;
  std::string scheme;          // "": milestone on CUDA tasks, correctness on CPU tasks
  double wait_seconds = 3600;  // for the batch's evaluations
};

// Throws RequestError (400 malformed, 404 unknown task) and RetryLater (503
// when a sample's evaluation ended infra_error or could not be scored: the
// engines retry a failed call, and a fault must never become a reward).
Json openrlhfReward(Service& service, const Json& body, const EngineRewardOptions& options);
Json slimeReward(Service& service, const Json& body, const EngineRewardOptions& options);

}  // namespace kb::serve
