// The adapter that lets a kbrollout agent talk to the in-process LibTorch
// policy (lib/policy's Policy) instead of an HTTP server: OpenAI messages in,
// the ChatML template and sampling of lib/policy, the assistant message,
// tool calls, sampled token ids, their log-probabilities and the prompt's
// token ids out (docs/kbrollout.md "Local policy").
#pragma once

#include <memory>

#include "agent/policy.h"
#include "policy/policy.h"

namespace kb::agent {

// Loads the model (throws kb::UsageError / kb::Error as loadLocalPolicy).
// Calls are serialised: rollouts running in parallel take turns on the model.
std::unique_ptr<Policy> makeLocalAgentPolicy(const policy::LocalPolicyOptions& options);

// The same over an already loaded policy (tests).
std::unique_ptr<Policy> wrapLocalPolicy(std::unique_ptr<policy::Policy> local, const std::string& name);

}  // namespace kb::agent
