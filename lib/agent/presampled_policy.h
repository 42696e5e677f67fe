// A policy whose replies were sampled beforehand: the first replies of many
// single-turn rollouts generated in one batch (kbtrain toy rollout batches
// them on the local policy, lib/llm's generateBatch), each then run through
// the one rollout loop (episode.h) with its own PresampledPolicy. complete()
// hands the replies out in order; asked for more, it fails as a policy that
// cannot answer (chat::PolicyError), so the rollout ends infra_error.
#pragma once

#include <mutex>
#include <vector>

#include "chat/messages.h"
#include "core/json.h"

namespace kb::agent {

class PresampledPolicy : public chat::Policy {
 public:
  // `description`: what the trajectory records as its policy (the policy
  // that sampled the replies).
  PresampledPolicy(std::vector<chat::Completion> replies, Json description);

  chat::Completion complete(const std::vector<chat::Message>& messages, const std::vector<chat::ToolSpec>& tools,
                            const chat::SamplingParams& sampling) override;
  Json describe() const override { return description_; }

 private:
  std::mutex mu_;
  std::vector<chat::Completion> replies_;
  size_t next_ = 0;
  Json description_;
};

}  // namespace kb::agent
