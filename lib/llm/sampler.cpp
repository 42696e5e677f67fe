#include "llm/sampler.h"

#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <unordered_set>

#include "core/error.h"

namespace kb::llm {

at::Generator makeGenerator(const at::Device& device, uint64_t seed) {
  at::Generator gen = at::globalContext().defaultGenerator(device).clone();
  gen.set_current_seed(seed);
  return gen;
}

SampledTokens sampleNext(const at::Tensor& logits_in, const chat::SamplingParams& params, at::Generator& generator) {
  at::Tensor logits = logits_in.to(at::kFloat);  // [B, V]
  if (params.temperature <= 0) {
    at::Tensor tokens = logits.argmax(-1);
    at::Tensor logprobs = at::log_softmax(logits, -1).gather(-1, tokens.unsqueeze(-1)).squeeze(-1);
    return {tokens, logprobs};
  }
  const double neg_inf = -std::numeric_limits<double>::infinity();
  at::Tensor scaled = logits / params.temperature;
  at::Tensor logp = at::log_softmax(scaled, -1);  // what the reported log-probabilities are of
  at::Tensor filtered = scaled;
  const int64_t V = logits.size(-1);
  if (params.top_k > 0 && params.top_k < V) {
    // Keep the k largest logits of each row.
    at::Tensor kth = std::get<0>(at::topk(filtered, params.top_k, -1)).narrow(-1, params.top_k - 1, 1);
    filtered = filtered.masked_fill(filtered < kth, neg_inf);
  }
  if (params.top_p < 1.0) {
    // Keep the most likely tokens until their mass reaches top_p: a token
    // stays if the mass of the tokens ranked above it is below top_p (so the
    // most likely token always stays).
    auto [sorted, order] = at::sort(filtered, -1, /*descending=*/true);
    at::Tensor probs = at::softmax(sorted, -1);
    at::Tensor mass_above = probs.cumsum(-1) - probs;
    at::Tensor drop_sorted = mass_above >= params.top_p;
    at::Tensor drop = at::zeros_like(drop_sorted).scatter(-1, order, drop_sorted);
    filtered = filtered.masked_fill(drop, neg_inf);
  }
  at::Tensor probs = at::softmax(filtered, -1);
  at::Tensor tokens = at::multinomial(probs, 1, /*replacement=*/false, generator).squeeze(-1);
  at::Tensor logprobs = logp.gather(-1, tokens.unsqueeze(-1)).squeeze(-1);
  return {tokens, logprobs};
}

std::vector<Generation> generateBatch(const Model& model, const std::vector<std::vector<int32_t>>& prompts,
                                      const chat::SamplingParams& params, at::Generator& generator,
                                      const Tokenizer* tokenizer) {
  c10::InferenceMode inference;
  const int64_t B = static_cast<int64_t>(prompts.size());
  std::vector<Generation> out(B);
  if (B == 0) return out;
  if (params.max_tokens <= 0) {
    for (auto& c : out) c.finish_reason = "length";
    return out;
  }
  int64_t P = 0;
  for (size_t b = 0; b < prompts.size(); ++b) {
    if (prompts[b].empty()) throw UsageError("prompt " + std::to_string(b) + " is empty");
    for (int32_t id : prompts[b])
      if (id < 0 || id >= model.config.vocab_size)
        throw UsageError("prompt " + std::to_string(b) + " has token id " + std::to_string(id) +
                         " outside the vocabulary (" + std::to_string(model.config.vocab_size) + ")");
    P = std::max<int64_t>(P, static_cast<int64_t>(prompts[b].size()));
  }
  // Left padding: every row's last prompt token sits at column P-1.
  std::vector<int64_t> ids(B * P, 0);
  std::vector<uint8_t> mask(B * P, 0);
  for (int64_t b = 0; b < B; ++b) {
    const int64_t n = static_cast<int64_t>(prompts[b].size());
    for (int64_t t = 0; t < n; ++t) {
      ids[b * P + (P - n) + t] = prompts[b][t];
      mask[b * P + (P - n) + t] = 1;
    }
  }
  const at::Device device = model.device();
  at::Tensor input_ids = at::from_blob(ids.data(), {B, P}, at::kLong).to(device);
  at::Tensor attention_mask = at::from_blob(mask.data(), {B, P}, at::kByte).to(device, at::kBool);
  const std::unordered_set<int32_t> stop(params.stop_token_ids.begin(), params.stop_token_ids.end());

  KVCache cache = model.newCache(B, P + params.max_tokens);
  at::Tensor logits = model.forward(input_ids, attention_mask, &cache, /*last_only=*/true);  // [B, V]
  std::vector<bool> done(B, false);
  int64_t remaining = B;
  at::Tensor step_mask = at::ones({B, 1}, at::TensorOptions().dtype(at::kBool).device(device));
  for (int64_t step = 0; step < params.max_tokens && remaining > 0; ++step) {
    SampledTokens next = sampleNext(logits, params, generator);
    // One device-to-host copy per step: ids (exact in double) and log-probs.
    at::Tensor host = at::stack({next.tokens.to(at::kDouble), next.logprobs.to(at::kDouble)}).to(at::kCPU);
    const double* tok = host.data_ptr<double>();
    const double* lp = tok + B;
    for (int64_t b = 0; b < B; ++b) {
      if (done[b]) continue;
      Generation& c = out[b];
      const int32_t id = static_cast<int32_t>(tok[b]);
      c.token_ids.push_back(id);
      c.logprobs.push_back(static_cast<float>(lp[b]));
      if (stop.count(id)) {
        c.finish_reason = "stop";
      } else if (static_cast<int64_t>(c.token_ids.size()) == params.max_tokens) {
        c.finish_reason = "length";
      } else {
        continue;
      }
      done[b] = true;
      --remaining;
    }
    if (remaining == 0 || step + 1 == params.max_tokens) break;
    if (params.stop_requested && params.stop_requested()) {
      for (int64_t b = 0; b < B; ++b)
        if (!done[b]) out[b].finish_reason = "interrupted";
      break;
    }
    // Finished rows keep decoding (their tokens are ignored); the batch stays whole.
    logits = model.forward(next.tokens.unsqueeze(1), step_mask, &cache, /*last_only=*/true);
  }
  if (tokenizer) {
    for (Generation& c : out) {
      std::vector<int32_t> body = c.token_ids;
      if (c.finish_reason == "stop" && !body.empty()) body.pop_back();
      c.text = tokenizer->decode(body);
    }
  }
  return out;
}

}  // namespace kb::llm
