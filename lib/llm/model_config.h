// The model's config.json (Hugging Face layout), read without torch.
//
// Covers the decoder-only families Qwen2 / Qwen2.5 (Qwen2ForCausalLM), Llama
// 2/3/3.1/3.2 (LlamaForCausalLM) and Mistral without a sliding window
// (MistralForCausalLM). Both spellings of transformers are read: v4's
// "torch_dtype" / "rope_theta" / "rope_scaling" and v5's "dtype" /
// "rope_parameters". Every field is documented in docs/policy-model.md.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/json.h"

namespace kb::llm {

struct RopeConfig {
  double theta = 10000.0;
  std::string type = "default";  // default | linear | llama3 | yarn
  double factor = 1.0;           // linear, llama3, yarn
  double low_freq_factor = 1.0;  // llama3
  double high_freq_factor = 4.0; // llama3
  int64_t original_max_position_embeddings = 0;  // llama3, yarn
  double beta_fast = 32.0;       // yarn
  double beta_slow = 1.0;        // yarn
  double attention_factor = 0.0; // yarn; 0 = derived from factor (0.1 ln(factor) + 1)
  bool truncate = true;          // yarn
};

struct ModelConfig {
  std::string architecture;  // "Qwen2ForCausalLM", "LlamaForCausalLM", "MistralForCausalLM"
  std::string model_type;    // "qwen2", "llama", "mistral"
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;
  int64_t head_dim = 0;  // hidden_size / num_attention_heads unless given
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;
  RopeConfig rope;
  bool tie_word_embeddings = false;
  bool qkv_bias = false;  // Qwen2: always; Llama: attention_bias
  bool o_bias = false;    // Llama: attention_bias
  bool mlp_bias = false;  // Llama: mlp_bias
  std::string dtype = "float32";  // the checkpoint's torch dtype name
  std::vector<int64_t> eos_token_ids;
  int64_t bos_token_id = -1;
  int64_t pad_token_id = -1;
  Json raw;  // the file as read, kept so a saved checkpoint keeps every field
};

// Parses and validates; throws kb::Error naming the file and the field, and
// naming the supported architectures when the architecture is not one.
ModelConfig parseModelConfig(const Json& json, const std::string& where = "config.json");
ModelConfig readModelConfig(const std::filesystem::path& dir);

// The eos ids of generation_config.json if the directory has one, else the
// config's; used as the default stop tokens.
std::vector<int64_t> readEosTokenIds(const std::filesystem::path& dir, const ModelConfig& config);

}  // namespace kb::llm
