#include "agent/presampled_policy.h"

#include <string>
#include <utility>

namespace kb::agent {

PresampledPolicy::PresampledPolicy(std::vector<chat::Completion> replies, Json description)
    : replies_(std::move(replies)), description_(std::move(description)) {}

chat::Completion PresampledPolicy::complete(const std::vector<chat::Message>&, const std::vector<chat::ToolSpec>&,
                                            const chat::SamplingParams&) {
  std::lock_guard<std::mutex> lock(mu_);
  if (next_ >= replies_.size())
    throw chat::PolicyError("presampled policy: no reply left after " + std::to_string(replies_.size()),
                           /*retryable=*/false);
  return replies_[next_++];
}

}  // namespace kb::agent
