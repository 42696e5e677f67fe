// The agent's policy endpoint: an OpenAI-compatible chat-completions server
// (lib/chat does the HTTP, retries and parsing), with tool (function)
// calling, sampling parameters, and the token ids and log-probabilities that
// vLLM and SGLang can return. docs/kbrollout.md ("Policy endpoint") lists
// what is sent and read.
#pragma once

#include <string>

#include "chat/client.h"
#include "chat/messages.h"

namespace kb::agent {

// timeout_seconds, connect_timeout_seconds, max_attempts, backoff_* and
// extra_body as lib/chat documents them.
using ClientConfig = chat::Config;

// Fills the unset fields from the environment: base URL from OPENAI_BASE_URL
// (else KB_POLICY_URL), key from OPENAI_API_KEY, model from KB_MODEL (else
// OPENAI_MODEL). Throws kb::UsageError when no base URL or model is known.
ClientConfig configFromEnvironment(ClientConfig config);

// The policy behind an HTTP endpoint (chat::Policy, lib/chat/messages.h).
class OpenAIClient : public chat::Policy {
 public:
  explicit OpenAIClient(ClientConfig config);
  chat::Completion complete(const std::vector<chat::Message>& messages, const std::vector<chat::ToolSpec>& tools,
                            const chat::SamplingParams& sampling) override;
  Json describe() const override;

  // The request body complete() sends (exposed for tests).
  Json requestBody(const std::vector<chat::Message>& messages, const std::vector<chat::ToolSpec>& tools,
                   const chat::SamplingParams& sampling) const;

  const ClientConfig& config() const { return config_; }

 private:
  ClientConfig config_;
};

// Parses a chat.completion response body. Throws chat::PolicyError
// (retryable) when it is not JSON, has no choices[0].message, or carries an
// "error".
chat::Completion parseChatCompletion(const std::string& body);

}  // namespace kb::agent
