// Next-token sampling (temperature, top-k, top-p) and the batched generation
// loop with a KV cache, over LibTorch.
#pragma once

#include <ATen/ATen.h>

#include <vector>

#include "llm/model.h"
#include "llm/policy.h"

namespace kb::llm {

struct SampledTokens {
  at::Tensor tokens;    // [B] int64
  at::Tensor logprobs;  // [B] float32: log_softmax(logits / temperature) at the token
};

// One token per row of logits [B, V]. temperature <= 0 is greedy.
SampledTokens sampleNext(const at::Tensor& logits, const chat::SamplingParams& params, at::Generator& generator);

// A private generator on `device` seeded with `seed`.
at::Generator makeGenerator(const at::Device& device, uint64_t seed);

// Generates for each prompt: prompts are left-padded into one batch, prefilled
// in one forward pass, then decoded one token per step with the KV cache until
// every row has hit a stop token (params.stop_token_ids, used as given) or
// max_tokens. `tokenizer` (may be null) fills Generation::text.
std::vector<Generation> generateBatch(const Model& model, const std::vector<std::vector<int32_t>>& prompts,
                                      const chat::SamplingParams& params, at::Generator& generator,
                                      const Tokenizer* tokenizer = nullptr);

}  // namespace kb::llm
