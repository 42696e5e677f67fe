// The local policy: a LibTorch model in this process behind lib/chat's
// chat::Policy (kbrollout --local-model: messages and tools in, the next
// assistant turn with its sampled token ids, log-probabilities and the
// prompt's token ids out), and the token-level generation kbpolicy and
// kbtrain use. No torch types here, so a tool can include it cheaply;
// loadLocalPolicy() is implemented over LibTorch in local_policy.cpp.
// docs/policy-model.md documents every field.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "chat/messages.h"
#include "core/json.h"
#include "llm/chat_template.h"
#include "llm/tokenizer.h"

namespace kb::llm {

// Sampling: chat::SamplingParams (temperature, top_p, top_k, max_tokens,
// stop_token_ids, seed, stop_requested).

// One sampled continuation of a prompt of token ids.
struct Generation {
  std::vector<int32_t> token_ids;  // generated tokens, the stop token included when one ended it
  // log p(token) for each generated token under the distribution sampled
  // from before truncation: log_softmax(logits / temperature) (temperature 0:
  // log_softmax(logits)). Same length as token_ids.
  std::vector<float> logprobs;
  std::string text;           // decode(token_ids) without the final stop token
  std::string finish_reason;  // "stop" (a stop token), "length" (max_tokens) or "interrupted"
};

class LocalPolicy : public chat::Policy {
 public:
  // One generation per prompt (token ids, no padding), in order.
  virtual std::vector<Generation> generate(const std::vector<std::vector<int32_t>>& prompts,
                                           const chat::SamplingParams& params) = 0;

  virtual const Tokenizer& tokenizer() const = 0;
  virtual const ChatTemplate& chatTemplate() const = 0;
  // The stop tokens used when SamplingParams::stop_token_ids is empty.
  virtual std::vector<int32_t> defaultStopTokenIds() const = 0;
  // The checkpoint directory, as given.
  virtual std::string modelDir() const = 0;
  // e.g. "local Qwen2ForCausalLM /models/qwen2.5-0.5b (cuda:0, bfloat16)"
  virtual std::string detail() const = 0;

  // Renders each conversation with the chat template and a generation prompt,
  // adds the template's end-of-turn token (<|im_end|>, <|eot_id|>, </s>) to
  // the stop tokens (given, else the defaults) when the tokenizer has it, and
  // generates. Throws kb::UsageError when the checkpoint has no usable
  // template. parseAssistantMessage() splits a generation's text into content
  // and tool calls.
  std::vector<Generation> generateChat(const std::vector<std::vector<chat::Message>>& conversations,
                                       const Json& tools, const chat::SamplingParams& params);

  // chat::Policy: one conversation through generateChat; the text parsed
  // into content and tool calls (ids "call_N"; arguments as compact JSON);
  // finish_reason "tool_calls" when there are calls, else "stop" or
  // "length"; token ids, log-probabilities, the prompt's ids and their
  // counts. Calls are serialised: parallel rollouts take turns on the model.
  chat::Completion complete(const std::vector<chat::Message>& messages, const std::vector<chat::ToolSpec>& tools,
                            const chat::SamplingParams& sampling) override;
  // {"kind": "local", "model": <model dir>, "detail": detail()}
  Json describe() const override;

 private:
  std::mutex mu_;
  std::atomic<int64_t> calls_{0};
};

struct LocalPolicyOptions {
  std::filesystem::path model_dir{};       // config.json + *.safetensors (+ tokenizer.json)
  std::filesystem::path tokenizer_path{};  // default: model_dir/tokenizer.json
  // The chat template is the checkpoint's (ChatTemplate::fromCheckpoint of
  // model_dir); a model without one still generates from token ids.
  std::string device = "cpu";            // "cpu", "cuda", "cuda:1"
  std::string dtype = "auto";            // "auto" (the config's), "float32", "bfloat16", "float16"
  int64_t max_batch_size = 64;           // larger batches are generated in chunks
};

// Loads the model and tokenizer; throws kb::Error / kb::UsageError with the
// file and tensor at fault.
std::unique_ptr<LocalPolicy> loadLocalPolicy(const LocalPolicyOptions& options);

}  // namespace kb::llm
