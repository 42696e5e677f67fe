// The LLM composer's client: one OpenAI-compatible chat-completions POST
// (a vLLM server, or any /v1/chat/completions endpoint) through lib/chat, with
// bounded retries and a cap on spend. Small on purpose; a general agent
// client lives elsewhere (lib/agent).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/json.h"
#include "synth/compose.h"

namespace kb::synth {

struct LlmOptions {
  std::string base_url;  // ".../v1"; POSTs go to base_url + "/chat/completions"
  std::string model;
  std::string api_key;   // sent as "Authorization: Bearer <key>" when not empty; never recorded
  double temperature = 0.7;
  int max_tokens = 2048;     // per completion
  int max_attempts = 4;      // per task: first try + retries
  double timeout_s = 120;    // per request
  double backoff_s = 1.0;    // before retry n: backoff_s * 2^(n-1), at most 30 s
  int64_t budget_tokens = 2'000'000;  // prompt + completion tokens over the whole run (0: no cap)
  double price_in = 0, price_out = 0; // USD per million prompt / completion tokens
  double budget_usd = 0;              // 0: no cap in dollars
};

// Fills empty fields from the environment: OPENAI_BASE_URL (or
// OPENAI_API_BASE, else http://127.0.0.1:8000/v1), OPENAI_MODEL, and the key
// from the variable named key_env (default OPENAI_API_KEY).
void llmOptionsFromEnv(LlmOptions& o, const std::string& key_env = "OPENAI_API_KEY");

struct LlmSpend {
  int64_t requests = 0, prompt_tokens = 0, completion_tokens = 0;
  double usd(const LlmOptions& o) const {
    return (static_cast<double>(prompt_tokens) * o.price_in + static_cast<double>(completion_tokens) * o.price_out) / 1e6;
  }
  Json json() const;
};

// A configuration error that retrying cannot fix (HTTP 401, 403, 404): the
// run stops.
class LlmFatal : public Error {
 public:
  using Error::Error;
};

struct LlmResult {
  bool ok = false;
  std::string code;     // the Python program
  std::string reason;   // when !ok: budget_exhausted, retries_exhausted, bad_request
  std::string message;
  int attempts = 0;
  LlmSpend usage;              // of this task
  std::vector<Json> attempt_log;  // one {"attempt", "outcome", "http_status", "message"} per try
  Json json() const;
};

class LlmClient {
 public:
  explicit LlmClient(LlmOptions o);
  ~LlmClient();
  LlmClient(const LlmClient&) = delete;
  LlmClient& operator=(const LlmClient&) = delete;

  // One completion that must contain a KernelBench program, retried on
  // transport errors, timeouts, HTTP 429/5xx, malformed bodies and replies
  // without a program. Throws LlmFatal on 401/403/404.
  LlmResult completeProgram(const std::string& system, const std::string& user);

  // Spend so far (including spend carried over from an earlier run).
  const LlmSpend& spent() const { return spent_; }
  void carryOver(const LlmSpend& s);
  // Whether another request fits the budget (counting max_tokens for its completion).
  bool withinBudget(std::string* why = nullptr) const;
  const LlmOptions& options() const { return o_; }

 private:
  LlmOptions o_;
  LlmSpend spent_;
};

// The program in a completion: the first ```python (or ```) fenced block, or
// the whole text when it has no fence. Empty when there is nothing.
std::string extractProgram(const std::string& content);
// Why a text is not a KernelBench program ("" when it looks like one).
std::string programProblem(const std::string& code);

// The prompts that ask a model to fuse a sampled chain (the paper's composer).
std::string llmSystemPrompt();
std::string llmUserPrompt(const Composed& chain, const Catalog& catalog);

}  // namespace kb::synth
