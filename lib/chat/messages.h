// The LLM message model, once for every caller: the OpenAI chat layout of
// messages and tool calls, the sampling parameters, a completion (the next
// assistant turn with its tokens and log-probabilities), and the Policy
// interface a rollout asks for that turn. Three policies implement it: the
// HTTP client of an OpenAI-compatible server (agent::OpenAIClient, over
// lib/chat's client.h), the replay policy (agent::ReplayPolicy) and the local
// LibTorch model (lib/llm's LocalPolicy). Torch- and curl-free
// (kb_chat_messages), so lib/llm's text side can use it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/json.h"

namespace kb::chat {

// One tool the model may call, as the OpenAI "tools" array describes it.
// Every field has a default, so designated initializers may leave any out.
struct ToolSpec {
  std::string name{};
  std::string description{};
  Json parameters{};  // JSON Schema of the arguments object
};

struct ToolCall {
  std::string id{};         // the server's id ("call_..."), one made up, or "" (a parsed local message)
  std::string name{};
  std::string arguments{};  // the arguments' JSON text as the model wrote it (may be invalid)
  // Set by a parser of model text (lib/llm's parseAssistantMessage) when
  // the call could not be read; `arguments` then holds the raw text.
  std::string error{};
};

struct Message {
  std::string role{};  // "system", "user", "assistant" or "tool"
  std::string content{};
  std::vector<ToolCall> tool_calls{};  // assistant only
  std::string tool_call_id{};          // tool only: the call it answers
};

struct SamplingParams {
  double temperature = 1.0;  // 0: greedy (argmax)
  double top_p = 1.0;        // nucleus: keep the smallest set of tokens with mass >= top_p
  int64_t top_k = 0;         // keep the k most likely tokens; 0: all (local model only)
  int64_t max_tokens = 8192;     // per response
  std::optional<uint64_t> seed;  // sent when set; unset: a fresh random seed
  bool logprobs = true;          // ask a server for log-probabilities of sampled tokens
  // Local model only: generation stops after any of these; empty: the
  // model's eos ids (generation_config.json, else config.json).
  std::vector<int32_t> stop_token_ids;
  // Local model only: polled once per decoding step; when it returns true,
  // generation ends and the unfinished rows get finish_reason "interrupted".
  std::function<bool()> stop_requested;
  // The rollout's sample index k within its task (runRollout sets it from
  // RolloutSpec::sample). Never sent; the replay policy picks its variant
  // with it (lib/agent/replay_policy.h).
  int sample = 0;
};

// The next assistant turn.
struct Completion {
  std::string content;                 // assistant text ("" when none)
  bool has_content = false;            // a server's choices[0].message.content was a string
  std::string reasoning;               // "reasoning_content" / "reasoning" where given
  std::vector<ToolCall> tool_calls;
  std::string finish_reason;           // "stop", "tool_calls", "length", ...
  std::vector<int64_t> token_ids;      // sampled tokens, when known
  std::vector<double> logprobs;        // one per sampled token, when known
  std::vector<int64_t> prompt_token_ids;  // the prompt as tokenised, when known
  int64_t prompt_tokens = -1;          // usage, -1 when not reported
  int64_t completion_tokens = -1;
  std::string model;                   // as the server names it
  std::string response_id;
  double seconds = 0.0;                // wall time, retries and back-off included
  int attempts = 1;                    // requests sent for this completion
  std::vector<std::string> retry_errors;  // why each failed attempt failed
};

// OpenAI layout: {"role", ["tool_call_id"], "content", ["tool_calls": [{"id",
// "type": "function", "function": {"name", "arguments"}}]]}.
Json messageToJson(const Message& m);
Json messagesToJson(const std::vector<Message>& messages);
// The reverse. "arguments" may be a JSON string (the OpenAI layout) or a JSON
// value, kept as Python's json.dumps writes it (what a chat template renders).
// Throws kb::Error for a message that is not one (no or an unknown role,
// content not a string, a tool call without a name).
Message messageFromJson(const Json& j);
// [{"type": "function", "function": {"name", "description", "parameters"}}]
Json toolsToJson(const std::vector<ToolSpec>& tools);
// The assistant message to append to the conversation.
Message assistantMessage(const Completion& c);

// JSON as Python's json.dumps(value, ensure_ascii=False) writes it (", " and
// ": " separators), which is what a chat template's `tojson` produces.
std::string pythonJsonDumps(const Json& value);

// A policy that could not answer. `retryable` tells a caller whether asking
// again later might help; the HTTP client has already retried by then.
class PolicyError : public ServiceError {
 public:
  using ServiceError::ServiceError;
};

// The policy: given the conversation so far and the tools on offer, the next
// assistant turn and, where known, the sampled token ids and their
// log-probabilities (RL needs both).
class Policy {
 public:
  virtual ~Policy() = default;
  // Throws PolicyError. Thread-safe: parallel rollouts share one policy.
  virtual Completion complete(const std::vector<Message>& messages, const std::vector<ToolSpec>& tools,
                              const SamplingParams& sampling) = 0;
  // What a trajectory records about this policy (kind, model, endpoint;
  // never a key).
  virtual Json describe() const = 0;
};

}  // namespace kb::chat
