// The critic: the policy architecture (lib/llm's Model, its lm_head
// unused) with a scalar value head on the final-norm hidden state,
//   V(s_t) = w . h_t + b            (w [1, C], b [1]).
// Saved as a policy checkpoint (config.json, model*.safetensors: readable by
// lib/llm's loader) plus value_head.safetensors ("value_head.weight",
// "value_head.bias"). Loading a directory without value_head.safetensors (a
// policy checkpoint, the paper's critic init) starts the head at zero.
#pragma once

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <filesystem>
#include <vector>

#include "llm/model.h"

namespace kb::rl {

struct Critic {
  llm::Model backbone;
  at::Tensor head_weight;  // [1, C], the backbone's dtype
  at::Tensor head_bias;    // [1]
  bool head_loaded = false;  // false: initialised at zero

  // V at every position: [B, T] float32.
  at::Tensor values(const at::Tensor& input_ids, const at::Tensor& attention_mask) const;
  // What training updates: the backbone without lm_head (when untied) + head.
  std::vector<at::Tensor> trainableParameters() const;
};

Critic loadCritic(const std::filesystem::path& dir, const llm::LoadOptions& options);
void saveCritic(const Critic& critic, const std::filesystem::path& dir, const llm::SaveOptions& options);

}  // namespace kb::rl
