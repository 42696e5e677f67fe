// The toy family (task.h) as a task family of lib/agent's rollout loop
// (agent/episode.h): the prompt is the task's two messages, there are no
// tools, the first reply is the answer, and the final check writes it as a
// solution directory that a ToyEnvironment (environment.h) compiles and then
// verifies. The record keeps the toy family's fields (docs/kbtrain.md):
// final.check, final.message, status, reward {scheme: {name: "toy"}, value,
// excluded, correct}, with final.stages as kbrollout records them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "agent/episode.h"
#include "toy/environment.h"
#include "toy/task.h"

namespace kb::toy {

class ToyEpisode : public agent::Episode {
 public:
  ToyEpisode(ToyTask task, ToyEnvironment& env) : task_(std::move(task)), env_(env) {}

  std::vector<chat::Message> prompt() override;
  std::vector<chat::ToolSpec> tools() override { return {}; }
  agent::Observation call(const chat::ToolCall& call) override;  // refused: the family has no tools
  std::optional<std::string> replyWithoutTools(const chat::Completion& reply) override;
  void judge(Json& record, const agent::RolloutOptions& options) override;
  std::string solutionHash() override { return ""; }

 private:
  ToyTask task_;
  ToyEnvironment& env_;
  std::string answer_;
};

// The loop's options for the toy family: one turn, the given sampling
// recorded as it was used (the batch's seed, same_seed).
agent::RolloutOptions toyRolloutOptions(const chat::SamplingParams& sampling, const std::string& mode);

// One toy rollout through the loop: `reply` (sampled beforehand, in a
// batch) is the policy's answer, `policy` what the record names.
Json runToyEpisode(const ToyTask& task, int sample, const chat::Completion& reply, const Json& policy,
                   ToyEnvironment& env, const agent::RolloutOptions& options);

}  // namespace kb::toy
