// The agent's policy endpoint: an OpenAI-compatible chat-completions server
// (lib/chat does the HTTP, retries and parsing), with tool (function)
// calling, sampling parameters, and the token ids and log-probabilities that
// vLLM and SGLang can return. docs/kbrollout.md ("Policy endpoint") lists
// what is sent and read.
#pragma once

#include <string>

#include "agent/policy.h"
#include "chat/client.h"

namespace kb::agent {

// timeout_seconds, connect_timeout_seconds, max_attempts, backoff_* and
// extra_body as lib/chat documents them.
using ClientConfig = chat::Config;

// Fills the unset fields from the environment: base URL from OPENAI_BASE_URL
// (else KB_POLICY_URL), key from OPENAI_API_KEY, model from KB_MODEL (else
// OPENAI_MODEL). Throws kb::UsageError when no base URL or model is known.
ClientConfig configFromEnvironment(ClientConfig config);

class OpenAIClient : public Policy {
 public:
  explicit OpenAIClient(ClientConfig config);
  PolicyResponse complete(const std::vector<Json>& messages, const std::vector<ToolSpec>& tools,
                          const SamplingParams& sampling) override;
  Json describe() const override;

  // The request body complete() sends (exposed for tests and --dry-run).
  Json requestBody(const std::vector<Json>& messages, const std::vector<ToolSpec>& tools,
                   const SamplingParams& sampling) const;

  const ClientConfig& config() const { return config_; }

 private:
  ClientConfig config_;
};

// Parses a chat.completion response body. Throws PolicyError (retryable)
// when it is not JSON, has no choices[0].message, or carries an "error".
PolicyResponse parseChatCompletion(const std::string& body);

}  // namespace kb::agent
