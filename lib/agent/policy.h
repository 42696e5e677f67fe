// The policy an agent rollout talks to: given the conversation so far and the
// tools on offer, it returns the next assistant message (text and tool calls)
// and, where it knows them, the sampled token ids and their log-probabilities
// (RL needs both). Two kinds: an OpenAI-compatible HTTP endpoint (client.h)
// and in-process policies (the local LibTorch model of lib/policy).
// The local LibTorch policy (lib/policy) reaches this interface through
// lib/localagent's adapter; the replay policy (replay_policy.h) implements it
// directly. One message model for all of them is issue 19's open refactor.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/json.h"

namespace kb::agent {

// One tool the model may call, as the OpenAI "tools" array describes it.
struct ToolSpec {
  std::string name;
  std::string description;
  Json parameters;  // JSON Schema of the arguments object
};

struct SamplingParams {
  double temperature = 1.0;
  double top_p = 1.0;
  int max_tokens = 8192;          // per response
  std::optional<int64_t> seed;    // sent when set
  bool logprobs = true;           // ask for log-probabilities of sampled tokens
  // The rollout's sample index k within its task (runRollout sets it from
  // RolloutSpec::sample). Not sent to servers; the replay policy picks its
  // variant with it (replay_policy.h).
  int sample = 0;
};

struct ToolCall {
  std::string id;         // the server's id ("call_..."), or one we made up
  std::string name;
  std::string arguments;  // the JSON text as the model wrote it (may be invalid)
};

// One sampled token: its id when the server says it (-1 when not), its text,
// its log-probability (NaN when not given).
struct TokenInfo {
  int64_t id = -1;
  std::string text;
  double logprob = 0.0;
};

struct PolicyResponse {
  std::string content;                 // assistant text ("" when none)
  std::string reasoning;               // "reasoning_content" where the server gives it
  std::vector<ToolCall> tool_calls;
  std::string finish_reason;           // "stop", "tool_calls", "length", ...
  std::vector<int64_t> token_ids;      // sampled tokens, when known
  std::vector<double> logprobs;        // one per sampled token, when known
  std::vector<int64_t> prompt_token_ids;  // the prompt as tokenised, when known
  int64_t prompt_tokens = -1;          // usage, -1 when not reported
  int64_t completion_tokens = -1;
  double seconds = 0.0;                // wall time, retries and back-off included
  int attempts = 1;                    // requests sent for this response
  std::vector<std::string> retry_errors;  // why each failed attempt failed
  std::string model;                   // as the server names it
  std::string response_id;

  // The assistant message to append to the conversation (OpenAI format).
  Json assistantMessage() const;
};

// A policy that could not answer. `retryable` tells a caller whether asking
// again later might help; the HTTP client has already retried by then.
class PolicyError : public ServiceError {
 public:
  using ServiceError::ServiceError;
};

class Policy {
 public:
  virtual ~Policy() = default;
  // The next assistant turn. `messages` are OpenAI chat messages (role,
  // content, tool_calls, tool_call_id). Throws PolicyError. Thread-safe:
  // parallel rollouts share one policy.
  virtual PolicyResponse complete(const std::vector<Json>& messages,
                                  const std::vector<ToolSpec>& tools,
                                  const SamplingParams& sampling) = 0;
  // What the trajectory records about this policy (kind, model, endpoint;
  // never a key).
  virtual Json describe() const = 0;
};

}  // namespace kb::agent

namespace kb::agent {

// A process-wide stop request (SIGINT/SIGTERM): rollouts end at the next
// turn, and requests in flight are abandoned. Async-signal-safe to set.
void requestStop();
bool stopRequested();

}  // namespace kb::agent
