// An OpenAI-compatible chat-completions client over libcurl: tool (function)
// calling, sampling parameters, a timeout per request, retries with
// exponential back-off on 429, 5xx, transport errors and unreadable bodies,
// and the token ids and log-probabilities that vLLM and SGLang can return.
// docs/kbrollout.md ("Policy endpoint") lists what is sent and read.
#pragma once

#include <string>

#include "agent/policy.h"

namespace kb::agent {

struct ClientConfig {
  std::string base_url;  // e.g. http://127.0.0.1:8000/v1 (".../chat/completions" is appended)
  std::string model;
  std::string api_key;   // sent as "Authorization: Bearer"; empty: no header
  double timeout_seconds = 600.0;        // one request, connect to last byte
  double connect_timeout_seconds = 10.0;
  int max_attempts = 6;                  // requests per response, first included
  double backoff_initial_seconds = 1.0;  // doubled after each failure ...
  double backoff_max_seconds = 60.0;     // ... up to this, with +-25% jitter
  // Merged into every request body last (e.g. {"return_token_ids": true} for
  // vLLM, {"chat_template_kwargs": {...}}); may override any field.
  Json extra_body = Json::object();
};

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
