// The in-process policy interface of kbrollout: prompts in (token ids or chat
// conversations), sampled completions out (token ids, per-token
// log-probabilities, text). No torch types here, so a tool can include it
// cheaply; loadLocalPolicy() is implemented over LibTorch in
// local_policy.cpp. docs/policy-model.md documents every field.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "policy/chat_template.h"
#include "policy/tokenizer.h"

namespace kb::policy {

struct SamplingParams {
  double temperature = 1.0;  // 0: greedy (argmax)
  double top_p = 1.0;        // nucleus: keep the smallest set of tokens with mass >= top_p
  int64_t top_k = 0;         // keep the k most likely tokens; 0: all
  int64_t max_new_tokens = 256;
  // Generation stops after any of these; empty: the model's eos ids
  // (generation_config.json, else config.json).
  std::vector<int32_t> stop_token_ids;
  std::optional<uint64_t> seed;  // unset: a fresh random seed per call
  // Polled once per decoding step; when it returns true, generation ends and
  // the unfinished rows get finish_reason "interrupted" (kbpolicy's SIGINT).
  std::function<bool()> stop_requested;
};

struct Completion {
  std::vector<int32_t> token_ids;  // generated tokens, the stop token included when one ended it
  // log p(token) for each generated token under the distribution sampled
  // from before truncation: log_softmax(logits / temperature) (temperature 0:
  // log_softmax(logits)). Same length as token_ids.
  std::vector<float> logprobs;
  std::string text;           // decode(token_ids) without the final stop token
  std::string finish_reason;  // "stop" (a stop token), "length" (max_new_tokens) or "interrupted"
};

class Policy {
 public:
  virtual ~Policy() = default;

  // One completion per prompt (token ids, no padding), in order.
  virtual std::vector<Completion> generate(const std::vector<std::vector<int32_t>>& prompts,
                                           const SamplingParams& params) = 0;

  virtual const Tokenizer& tokenizer() const = 0;
  virtual const ChatTemplate& chatTemplate() const = 0;
  // The stop tokens used when SamplingParams::stop_token_ids is empty.
  virtual std::vector<int32_t> defaultStopTokenIds() const = 0;
  // e.g. "local Qwen2ForCausalLM /models/qwen2.5-0.5b (cuda:0, bfloat16)"
  virtual std::string describe() const = 0;

  // Renders each conversation with the chat template and a generation prompt,
  // adds the template's end-of-turn token (<|im_end|>, <|eot_id|>, </s>) to
  // the stop tokens (given, else the defaults) when the tokenizer has it, and
  // generates. Throws kb::UsageError when the checkpoint has no usable template. parseAssistantMessage() splits a completion's text into
  // content and tool calls.
  std::vector<Completion> generateChat(const std::vector<std::vector<ChatMessage>>& conversations,
                                       const Json& tools, const SamplingParams& params);
};

struct LocalPolicyOptions {
  std::filesystem::path model_dir;       // config.json + *.safetensors (+ tokenizer.json)
  std::filesystem::path tokenizer_path;  // default: model_dir/tokenizer.json
  // The chat template is the checkpoint's (ChatTemplate::fromCheckpoint of
  // model_dir); a model without one still generates from token ids.
  std::string device = "cpu";            // "cpu", "cuda", "cuda:1"
  std::string dtype = "auto";            // "auto" (the config's), "float32", "bfloat16", "float16"
  int64_t max_batch_size = 64;           // larger batches are generated in chunks
};

// Loads the model and tokenizer; throws kb::Error / kb::UsageError with the
// file and tensor at fault.
std::unique_ptr<Policy> loadLocalPolicy(const LocalPolicyOptions& options);

}  // namespace kb::policy
