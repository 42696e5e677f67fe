// The decoder-only transformer of the Qwen2 / Llama families in LibTorch
// (ATen), loaded from and saved to Hugging Face checkpoints.
//
// Per layer (pre-norm residual blocks):
//   h   = x + o_proj(attention(rope(q_proj(n)), rope(k_proj(n)), v_proj(n)))   n = rms_norm(x)
//   out = h + down_proj(silu(gate_proj(m)) * up_proj(m))                        m = rms_norm(h)
// then logits = lm_head(rms_norm(out)). Attention is causal, grouped-query
// (each key/value head serves num_attention_heads / num_key_value_heads query
// heads) and skips padding. Weights are plain tensors named as in the
// checkpoint; model.cpp reads top to bottom. docs/policy-model.md has the
// equations and the tensor names.
#pragma once

#include <ATen/ATen.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "llm/model_config.h"

namespace kb::llm {

struct LayerWeights {
  at::Tensor input_layernorm;           // [C]
  at::Tensor q_proj, q_bias;            // [H*D, C], [H*D] (bias: Qwen2, Llama attention_bias)
  at::Tensor k_proj, k_bias;            // [KV*D, C], [KV*D]
  at::Tensor v_proj, v_bias;            // [KV*D, C], [KV*D]
  at::Tensor o_proj, o_bias;            // [C, H*D], [C] (bias: Llama attention_bias)
  at::Tensor post_attention_layernorm;  // [C]
  at::Tensor gate_proj, gate_bias;      // [I, C] (bias: Llama mlp_bias)
  at::Tensor up_proj, up_bias;          // [I, C]
  at::Tensor down_proj, down_bias;      // [C, I]
};

// Keys and values of every layer for a batch, preallocated to `capacity`
// positions. Slot j of row b holds a real token iff key_mask[b][j].
struct KVCache {
  std::vector<at::Tensor> k, v;  // per layer [B, KV, capacity, D]
  at::Tensor key_mask;           // [B, capacity] bool
  at::Tensor next_position;      // [B] int64: rotary position of each row's next token
  int64_t length = 0;            // slots filled
  int64_t capacity = 0;
};

struct LoadOptions {
  std::string device = "cpu";  // "cpu", "cuda", "cuda:N"
  std::string dtype = "auto";  // "auto" = the config's dtype; "float32", "bfloat16", "float16"
};

struct SaveOptions {
  std::string dtype = "";                        // "" = the model's dtype
  int64_t max_shard_bytes = 5LL * 1024 * 1024 * 1024;  // larger checkpoints are sharded with an index
  // Tokenizer and generation files (tokenizer.json, tokenizer_config.json,
  // generation_config.json, ...) are copied from here when it is set.
  std::filesystem::path copy_files_from;
};

class Model {
 public:
  ModelConfig config;
  at::Tensor embed_tokens;  // [V, C]
  std::vector<LayerWeights> layers;
  at::Tensor norm;     // [C]
  at::Tensor lm_head;  // [V, C]; the very tensor embed_tokens when tie_word_embeddings
  at::Tensor inv_freq;           // [D/2] float32, rotary frequencies after the config's scaling
  double attention_scaling = 1;  // rotary cos/sin factor (yarn; 1 otherwise)
  bool use_sdpa = true;  // at::scaled_dot_product_attention; false: the explicit math below
  std::vector<std::string> unused_tensors;  // checkpoint tensors the model does not use

  at::Device device() const { return embed_tokens.device(); }
  at::ScalarType dtype() const { return embed_tokens.scalar_type(); }

  // Logits [B, T, V] (or [B, V] for the last position only) for input_ids
  // [B, T] (int64). attention_mask [B, T] (1 real, 0 padding; undefined: all
  // real). Rotary positions count real tokens: position = (tokens before in
  // the row, cache included). With a cache, the new keys/values are appended
  // to it and attention covers everything cached.
  at::Tensor forward(const at::Tensor& input_ids, const at::Tensor& attention_mask = {},
                     KVCache* cache = nullptr, bool last_only = false) const;
  // The final-norm hidden states [B, T, C], same arguments.
  at::Tensor hidden(const at::Tensor& input_ids, const at::Tensor& attention_mask = {},
                    KVCache* cache = nullptr) const;

  KVCache newCache(int64_t batch, int64_t capacity) const;

  // (checkpoint name, tensor) for every parameter; lm_head.weight is left out
  // when tied (it is embed_tokens). The tensors share storage with the model.
  std::vector<std::pair<std::string, at::Tensor>> namedParameters() const;
  std::vector<at::Tensor> parameters() const;
  void setRequiresGrad(bool requires_grad);
};

// Reads config.json and the safetensors weights of `dir`. Errors name the
// file and the tensor: unsupported architecture, missing tensors (all listed),
// shape mismatches (expected and found).
Model loadModel(const std::filesystem::path& dir, const LoadOptions& options = {});

// Random weights for `config` (normal(0, 0.02), norms 1), for tests and benchmarks.
Model randomModel(const ModelConfig& config, const LoadOptions& options = {}, uint64_t seed = 0);

// Writes config.json (+ generation/tokenizer files) and model.safetensors or
// shards with model.safetensors.index.json, as transformers' save_pretrained.
void saveModel(const Model& model, const std::filesystem::path& dir, const SaveOptions& options = {});

// log p(input_ids[:, t+1] | input_ids[:, :t+1]) for t < T-1: [B, T-1] float32.
at::Tensor tokenLogprobs(const Model& model, const at::Tensor& input_ids,
                         const at::Tensor& attention_mask = {});

at::ScalarType parseTorchDtype(const std::string& name);  // "float32"/"fp32", "bfloat16"/"bf16", "float16"/"fp16"
std::string torchDtypeName(at::ScalarType dtype);         // "float32", "bfloat16", "float16"
at::Device parseDevice(const std::string& name);          // "cpu", "cuda", "cuda:1"

// Tensor <-> safetensors helpers (CPU copies).
at::Tensor tensorFromBytes(std::string_view bytes, const std::string& safetensors_dtype,
                           const std::vector<int64_t>& shape);
void writeTensors(const std::filesystem::path& path,
                  const std::vector<std::pair<std::string, at::Tensor>>& tensors);
std::vector<std::pair<std::string, at::Tensor>> readTensors(const std::filesystem::path& path);

}  // namespace kb::llm
