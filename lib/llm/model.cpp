#include "llm/model.h"

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <cstring>
#include <set>

#include "core/error.h"
#include "core/json.h"
#include "llm/safetensors.h"

namespace fs = std::filesystem;

namespace kb::llm {

// ---------------------------------------------------------------------------
// dtypes and devices

at::ScalarType parseTorchDtype(const std::string& name) {
  if (name == "float32" || name == "fp32" || name == "float") return at::kFloat;
  if (name == "bfloat16" || name == "bf16") return at::kBFloat16;
  if (name == "float16" || name == "fp16" || name == "half") return at::kHalf;
  throw UsageError("unsupported dtype '" + name + "' (float32, bfloat16 or float16)");
}

std::string torchDtypeName(at::ScalarType dtype) {
  switch (dtype) {
    case at::kFloat: return "float32";
    case at::kBFloat16: return "bfloat16";
    case at::kHalf: return "float16";
    default: return std::string(c10::toString(dtype));
  }
}

at::Device parseDevice(const std::string& name) {
  try {
    at::Device d(name);
    if (d.is_cuda() && !at::hasCUDA())
      throw UsageError("device '" + name + "' asked for, but this build or machine has no CUDA");
    if (!d.is_cpu() && !d.is_cuda()) throw UsageError("unsupported device '" + name + "' (cpu or cuda[:N])");
    return d;
  } catch (const c10::Error&) {
    throw UsageError("invalid device '" + name + "' (cpu, cuda or cuda:N)");
  }
}

namespace {

at::ScalarType scalarTypeOf(DType d) {
  switch (d) {
    case DType::F64: return at::kDouble;
    case DType::F32: return at::kFloat;
    case DType::F16: return at::kHalf;
    case DType::BF16: return at::kBFloat16;
    case DType::I64: return at::kLong;
    case DType::I32: return at::kInt;
    case DType::I16: return at::kShort;
    case DType::I8: return at::kChar;
    case DType::U8: return at::kByte;
    case DType::Bool: return at::kBool;
  }
  return at::kFloat;
}

DType dtypeOf(at::ScalarType s) {
  switch (s) {
    case at::kDouble: return DType::F64;
    case at::kFloat: return DType::F32;
    case at::kHalf: return DType::F16;
    case at::kBFloat16: return DType::BF16;
    case at::kLong: return DType::I64;
    case at::kInt: return DType::I32;
    case at::kShort: return DType::I16;
    case at::kChar: return DType::I8;
    case at::kByte: return DType::U8;
    case at::kBool: return DType::Bool;
    default: throw Error("cannot store dtype " + std::string(c10::toString(s)) + " in safetensors");
  }
}

}  // namespace

at::Tensor tensorFromBytes(std::string_view bytes, const std::string& safetensors_dtype,
                           const std::vector<int64_t>& shape) {
  at::Tensor t = at::empty(shape, at::TensorOptions().dtype(scalarTypeOf(parseDType(safetensors_dtype))));
  if (static_cast<size_t>(t.nbytes()) != bytes.size())
    throw Error("tensor of shape " + shapeString(shape) + " " + safetensors_dtype + " needs " +
                std::to_string(t.nbytes()) + " bytes, got " + std::to_string(bytes.size()));
  if (!bytes.empty()) std::memcpy(t.data_ptr(), bytes.data(), bytes.size());
  return t;
}

void writeTensors(const fs::path& path, const std::vector<std::pair<std::string, at::Tensor>>& tensors) {
  std::vector<at::Tensor> keep;
  std::vector<TensorBytes> views;
  for (const auto& [name, t] : tensors) {
    at::Tensor c = t.detach().to(at::kCPU).contiguous();
    keep.push_back(c);
    views.push_back({name, dtypeOf(c.scalar_type()), c.sizes().vec(), c.data_ptr()});
  }
  writeSafetensors(path, views);
}

std::vector<std::pair<std::string, at::Tensor>> readTensors(const fs::path& path) {
  SafetensorsFile file(path);
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (const auto& [name, info] : file.tensors())
    out.emplace_back(name, tensorFromBytes(file.bytes(name), std::string(dtypeName(info.dtype)), info.shape));
  return out;
}

// ---------------------------------------------------------------------------
// Rotary frequencies (transformers' rope init functions, same float32 ops)

namespace {

std::pair<at::Tensor, double> rotaryFrequencies(const ModelConfig& c) {
  const RopeConfig& r = c.rope;
  const int64_t dim = c.head_dim;
  // inv_freq[i] = 1 / theta^(2i / dim)
  at::Tensor exponents = at::arange(0, dim, 2, at::kLong).to(at::kFloat) / static_cast<double>(dim);
  at::Tensor inv_freq = 1.0 / at::pow(r.theta, exponents);
  double attention_scaling = 1.0;
  if (r.type == "linear") {
    inv_freq = inv_freq / r.factor;
  } else if (r.type == "llama3") {
    // Llama 3.1: long wavelengths slowed by `factor`, short ones kept, a smooth
    // blend between low_freq_wavelen and high_freq_wavelen.
    const double old_len = static_cast<double>(r.original_max_position_embeddings);
    const double low_freq_wavelen = old_len / r.low_freq_factor;
    const double high_freq_wavelen = old_len / r.high_freq_factor;
    at::Tensor wavelen = 2 * M_PI / inv_freq;
    at::Tensor llama = at::where(wavelen > low_freq_wavelen, inv_freq / r.factor, inv_freq);
    at::Tensor smooth = (old_len / wavelen - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
    at::Tensor smoothed = (1 - smooth) * llama / r.factor + smooth * llama;
    at::Tensor medium = (wavelen >= high_freq_wavelen).logical_and(wavelen <= low_freq_wavelen);
    inv_freq = at::where(medium, smoothed, llama);
  } else if (r.type == "yarn") {
    // YaRN: interpolate low frequencies by `factor`, keep high ones, ramp
    // between the dimensions that complete beta_fast and beta_slow turns.
    const double base = r.theta, factor = r.factor;
    const double original = static_cast<double>(r.original_max_position_embeddings);
    attention_scaling = r.attention_factor > 0 ? r.attention_factor
                        : factor <= 1          ? 1.0
                                               : 0.1 * std::log(factor) + 1.0;
    auto correction_dim = [&](double rotations) {
      return (dim * std::log(original / (rotations * 2 * M_PI))) / (2 * std::log(base));
    };
    double low = correction_dim(r.beta_fast), high = correction_dim(r.beta_slow);
    if (r.truncate) {
      low = std::floor(low);
      high = std::ceil(high);
    }
    low = std::max(low, 0.0);
    high = std::min(high, static_cast<double>(dim - 1));
    if (low == high) high += 0.001;
    at::Tensor pos_freqs = at::pow(base, exponents);
    at::Tensor extrapolation = 1.0 / pos_freqs;
    at::Tensor interpolation = 1.0 / (factor * pos_freqs);
    at::Tensor ramp = ((at::arange(dim / 2, at::kFloat) - low) / (high - low)).clamp(0, 1);
    at::Tensor extrapolation_factor = 1 - ramp;
    inv_freq = interpolation * (1 - extrapolation_factor) + extrapolation * extrapolation_factor;
  }
  return {inv_freq, attention_scaling};
}

// ---------------------------------------------------------------------------
// The blocks

at::Tensor linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
  return bias.defined() ? at::linear(x, weight, bias) : at::linear(x, weight);
}

// RMSNorm: x / sqrt(mean(x^2) + eps) * weight, computed in float32.
at::Tensor rmsNorm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  at::Tensor x32 = x.to(at::kFloat);
  at::Tensor variance = x32.pow(2).mean(-1, /*keepdim=*/true);
  return weight * (x32 * at::rsqrt(variance + eps)).to(x.scalar_type());
}

// Rotary embedding: each pair (x_i, x_{i+D/2}) is rotated by position * inv_freq[i].
at::Tensor rotateHalf(const at::Tensor& x) {
  const int64_t half = x.size(-1) / 2;
  return at::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
}

at::Tensor applyRotary(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  return x * cos + rotateHalf(x) * sin;
}

// softmax(q k^T / sqrt(D) where allowed, else -inf) v.
// q [B, H, T, D]; k, v [B, KV, S, D]; allowed [B, 1, T, S]. Query head h
// reads key/value head h / (H / KV) (grouped-query attention).
at::Tensor attention(const at::Tensor& q, at::Tensor k, at::Tensor v, const at::Tensor& allowed,
                     bool use_sdpa) {
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), D = q.size(3);
  const int64_t KV = k.size(1), rep = H / KV;
  at::Tensor qq = q, mask = allowed;
  if (rep > 1 && T == 1) {
    // Decoding: the rep query heads of a key/value head become rep query rows
    // against that head, so the cache is read without copying it.
    qq = q.reshape({B, KV, rep, D});
  } else if (rep > 1) {
    // Prefill: repeat each key/value head for its query heads.
    k = k.repeat_interleave(rep, /*dim=*/1);
    v = v.repeat_interleave(rep, /*dim=*/1);
  }
  at::Tensor y;
  if (use_sdpa) {
    y = at::scaled_dot_product_attention(qq, k, v, mask);
  } else {
    at::Tensor scores = at::matmul(qq, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(D));
    scores = scores.masked_fill(mask.logical_not(), -std::numeric_limits<double>::infinity());
    at::Tensor probs = at::softmax(scores.to(at::kFloat), -1).to(q.scalar_type());
    y = at::matmul(probs, v);
  }
  return y.reshape({B, H, T, D});
}

}  // namespace

// ---------------------------------------------------------------------------
// Forward

at::Tensor Model::hidden(const at::Tensor& input_ids, const at::Tensor& attention_mask, KVCache* cache) const {
  const ModelConfig& c = config;
  const int64_t B = input_ids.size(0), T = input_ids.size(1);
  const int64_t H = c.num_attention_heads, KV = c.num_key_value_heads, D = c.head_dim;
  const auto long_opts = at::TensorOptions().dtype(at::kLong).device(device());
  at::Tensor ids = input_ids.to(device(), at::kLong);
  at::Tensor mask = attention_mask.defined() ? attention_mask.to(device(), at::kBool)
                                             : at::ones({B, T}, long_opts.dtype(at::kBool));
  const int64_t past = cache ? cache->length : 0;
  const int64_t S = past + T;
  if (cache && S > cache->capacity)
    throw Error("KV cache full: " + std::to_string(S) + " positions, capacity " + std::to_string(cache->capacity));

  // Rotary positions count the real tokens before each token in its row.
  at::Tensor offset = cache ? cache->next_position : at::zeros({B}, long_opts);
  at::Tensor positions = (offset.unsqueeze(1) + mask.to(at::kLong).cumsum(1) - 1).clamp_min(0);  // [B, T]

  // Which keys each query may attend: earlier-or-same slots holding real
  // tokens; a padding query attends to itself only (keeps its row finite).
  at::Tensor key_mask = mask;
  if (cache) {
    cache->key_mask.narrow(1, past, T).copy_(mask);
    key_mask = cache->key_mask.narrow(1, 0, S);
  }
  at::Tensor q_slot = at::arange(past, S, long_opts).unsqueeze(1);  // [T, 1]
  at::Tensor k_slot = at::arange(0, S, long_opts).unsqueeze(0);     // [1, S]
  at::Tensor allowed = (k_slot <= q_slot).unsqueeze(0).logical_and(
      key_mask.unsqueeze(1).logical_or((k_slot == q_slot).unsqueeze(0)));  // [B, T, S]
  allowed = allowed.unsqueeze(1);                                          // [B, 1, T, S]

  // cos/sin of position * inv_freq, [B, 1, T, D].
  at::Tensor freqs = positions.to(at::kFloat).unsqueeze(-1) * inv_freq.to(device());  // [B, T, D/2]
  at::Tensor angles = at::cat({freqs, freqs}, -1);
  at::Tensor cos = (angles.cos() * attention_scaling).to(dtype()).unsqueeze(1);
  at::Tensor sin = (angles.sin() * attention_scaling).to(dtype()).unsqueeze(1);

  at::Tensor x = at::embedding(embed_tokens, ids);  // [B, T, C]
  for (size_t l = 0; l < layers.size(); ++l) {
    const LayerWeights& L = layers[l];
    // Attention block.
    at::Tensor n = rmsNorm(x, L.input_layernorm, c.rms_norm_eps);
    at::Tensor q = linear(n, L.q_proj, L.q_bias).view({B, T, H, D}).transpose(1, 2);   // [B, H, T, D]
    at::Tensor k = linear(n, L.k_proj, L.k_bias).view({B, T, KV, D}).transpose(1, 2);  // [B, KV, T, D]
    at::Tensor v = linear(n, L.v_proj, L.v_bias).view({B, T, KV, D}).transpose(1, 2);
    q = applyRotary(q, cos, sin);
    k = applyRotary(k, cos, sin);
    if (cache) {
      cache->k[l].narrow(2, past, T).copy_(k);
      cache->v[l].narrow(2, past, T).copy_(v);
      k = cache->k[l].narrow(2, 0, S);
      v = cache->v[l].narrow(2, 0, S);
    }
    at::Tensor y = attention(q, k, v, allowed, use_sdpa);  // [B, H, T, D]
    y = y.transpose(1, 2).reshape({B, T, H * D});
    x = x + linear(y, L.o_proj, L.o_bias);
    // MLP block (SwiGLU).
    at::Tensor m = rmsNorm(x, L.post_attention_layernorm, c.rms_norm_eps);
    at::Tensor gate = at::silu(linear(m, L.gate_proj, L.gate_bias));
    x = x + linear(gate * linear(m, L.up_proj, L.up_bias), L.down_proj, L.down_bias);
  }
  if (cache) {
    cache->length = S;
    cache->next_position = offset + mask.to(at::kLong).sum(1);
  }
  return rmsNorm(x, norm, c.rms_norm_eps);
}

at::Tensor Model::forward(const at::Tensor& input_ids, const at::Tensor& attention_mask, KVCache* cache,
                          bool last_only) const {
  at::Tensor h = hidden(input_ids, attention_mask, cache);
  if (last_only) h = h.select(1, h.size(1) - 1);
  return at::linear(h, lm_head);
}

KVCache Model::newCache(int64_t batch, int64_t capacity) const {
  KVCache cache;
  auto opts = at::TensorOptions().dtype(dtype()).device(device());
  for (int64_t l = 0; l < config.num_hidden_layers; ++l) {
    cache.k.push_back(at::zeros({batch, config.num_key_value_heads, capacity, config.head_dim}, opts));
    cache.v.push_back(at::zeros({batch, config.num_key_value_heads, capacity, config.head_dim}, opts));
  }
  cache.key_mask = at::zeros({batch, capacity}, opts.dtype(at::kBool));
  cache.next_position = at::zeros({batch}, opts.dtype(at::kLong));
  cache.capacity = capacity;
  return cache;
}

at::Tensor tokenLogprobs(const Model& model, const at::Tensor& input_ids, const at::Tensor& attention_mask) {
  at::Tensor logits = model.forward(input_ids, attention_mask);  // [B, T, V]
  const int64_t T = logits.size(1);
  at::Tensor logp = at::log_softmax(logits.narrow(1, 0, T - 1).to(at::kFloat), -1);
  at::Tensor next = input_ids.to(logits.device(), at::kLong).narrow(1, 1, T - 1).unsqueeze(-1);
  return logp.gather(-1, next).squeeze(-1);
}

// ---------------------------------------------------------------------------
// Parameters by checkpoint name

namespace {

// Each parameter: checkpoint name, the member it lives in, its shape.
struct Slot {
  std::string name;
  at::Tensor* tensor;
  std::vector<int64_t> shape;
};

std::vector<Slot> slots(Model& m) {
  const ModelConfig& c = m.config;
  const int64_t C = c.hidden_size, I = c.intermediate_size, V = c.vocab_size;
  const int64_t QD = c.num_attention_heads * c.head_dim, KD = c.num_key_value_heads * c.head_dim;
  std::vector<Slot> s;
  s.push_back({"model.embed_tokens.weight", &m.embed_tokens, {V, C}});
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    LayerWeights& L = m.layers[i];
    const std::string p = "model.layers." + std::to_string(i) + ".";
    s.push_back({p + "input_layernorm.weight", &L.input_layernorm, {C}});
    s.push_back({p + "self_attn.q_proj.weight", &L.q_proj, {QD, C}});
    if (c.qkv_bias) s.push_back({p + "self_attn.q_proj.bias", &L.q_bias, {QD}});
    s.push_back({p + "self_attn.k_proj.weight", &L.k_proj, {KD, C}});
    if (c.qkv_bias) s.push_back({p + "self_attn.k_proj.bias", &L.k_bias, {KD}});
    s.push_back({p + "self_attn.v_proj.weight", &L.v_proj, {KD, C}});
    if (c.qkv_bias) s.push_back({p + "self_attn.v_proj.bias", &L.v_bias, {KD}});
    s.push_back({p + "self_attn.o_proj.weight", &L.o_proj, {C, QD}});
    if (c.o_bias) s.push_back({p + "self_attn.o_proj.bias", &L.o_bias, {C}});
    s.push_back({p + "post_attention_layernorm.weight", &L.post_attention_layernorm, {C}});
    s.push_back({p + "mlp.gate_proj.weight", &L.gate_proj, {I, C}});
    if (c.mlp_bias) s.push_back({p + "mlp.gate_proj.bias", &L.gate_bias, {I}});
    s.push_back({p + "mlp.up_proj.weight", &L.up_proj, {I, C}});
    if (c.mlp_bias) s.push_back({p + "mlp.up_proj.bias", &L.up_bias, {I}});
    s.push_back({p + "mlp.down_proj.weight", &L.down_proj, {C, I}});
    if (c.mlp_bias) s.push_back({p + "mlp.down_proj.bias", &L.down_bias, {C}});
  }
  s.push_back({"model.norm.weight", &m.norm, {C}});
  if (!c.tie_word_embeddings) s.push_back({"lm_head.weight", &m.lm_head, {V, C}});
  return s;
}

void finish(Model& m) {
  if (m.config.tie_word_embeddings) m.lm_head = m.embed_tokens;
  auto [inv_freq, scaling] = rotaryFrequencies(m.config);
  m.inv_freq = inv_freq.to(m.device());
  m.attention_scaling = scaling;
}

}  // namespace

std::vector<std::pair<std::string, at::Tensor>> Model::namedParameters() const {
  Model& self = const_cast<Model&>(*this);  // slots() only takes addresses
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (const Slot& s : slots(self)) out.emplace_back(s.name, *s.tensor);
  return out;
}

std::vector<at::Tensor> Model::parameters() const {
  std::vector<at::Tensor> out;
  for (auto& [name, t] : namedParameters()) out.push_back(t);
  return out;
}

void Model::setRequiresGrad(bool requires_grad) {
  for (auto& [name, t] : namedParameters()) t.set_requires_grad(requires_grad);
}

// ---------------------------------------------------------------------------
// Loading, random init, saving

Model loadModel(const fs::path& dir, const LoadOptions& options) {
  Model m;
  m.config = readModelConfig(dir);
  const at::ScalarType dtype = parseTorchDtype(options.dtype == "auto" ? m.config.dtype : options.dtype);
  const at::Device device = parseDevice(options.device);
  Checkpoint ckpt(dir);
  m.layers.resize(m.config.num_hidden_layers);
  std::vector<Slot> wanted = slots(m);

  std::vector<std::string> missing;
  for (const Slot& s : wanted)
    if (!ckpt.contains(s.name)) missing.push_back(s.name);
  if (!missing.empty()) {
    std::string list;
    for (size_t i = 0; i < missing.size() && i < 8; ++i) list += (i ? ", " : "") + missing[i];
    if (missing.size() > 8) list += ", ...";
    throw Error(dir.string() + ": " + std::to_string(missing.size()) + " of " + std::to_string(wanted.size()) +
                " tensors the " + m.config.architecture + " config needs are missing from the checkpoint: " + list);
  }
  std::set<std::string> used;
  for (const Slot& s : wanted) {
    const TensorInfo& info = ckpt.info(s.name);
    if (info.shape != s.shape)
      throw Error(ckpt.fileOf(s.name).string() + ": tensor '" + s.name + "' has shape " +
                  shapeString(info.shape) + ", the config needs " + shapeString(s.shape));
    if (info.dtype != DType::F32 && info.dtype != DType::BF16 && info.dtype != DType::F16 &&
        info.dtype != DType::F64)
      throw Error(ckpt.fileOf(s.name).string() + ": tensor '" + s.name + "' has dtype " +
                  std::string(dtypeName(info.dtype)) + " (quantized or integer weights are not supported)");
    at::Tensor t = tensorFromBytes(ckpt.bytes(s.name), std::string(dtypeName(info.dtype)), info.shape);
    *s.tensor = t.to(device, dtype);
    used.insert(s.name);
  }
  for (const std::string& name : ckpt.names())
    if (!used.count(name) && !(m.config.tie_word_embeddings && name == "lm_head.weight"))
      m.unused_tensors.push_back(name);
  finish(m);
  return m;
}

Model randomModel(const ModelConfig& config, const LoadOptions& options, uint64_t seed) {
  Model m;
  m.config = config;
  const at::ScalarType dtype = parseTorchDtype(options.dtype == "auto" ? config.dtype : options.dtype);
  const at::Device device = parseDevice(options.device);
  at::Generator gen = at::detail::createCPUGenerator(seed);
  m.layers.resize(config.num_hidden_layers);
  for (const Slot& s : slots(m)) {
    const bool is_norm = s.name.find("norm.weight") != std::string::npos;
    const bool is_bias = s.name.size() > 5 && s.name.compare(s.name.size() - 5, 5, ".bias") == 0;
    at::Tensor t = is_norm   ? at::ones(s.shape, at::kFloat)
                   : is_bias ? at::zeros(s.shape, at::kFloat)
                             : at::normal(0.0, 0.02, s.shape, gen, at::TensorOptions().dtype(at::kFloat));
    *s.tensor = t.to(device, dtype);
  }
  finish(m);
  return m;
}

void saveModel(const Model& model, const fs::path& dir, const SaveOptions& options) {
  const at::ScalarType dtype = options.dtype.empty() ? model.dtype() : parseTorchDtype(options.dtype);
  fs::create_directories(dir);
  // Old weight files would mix with the new ones: remove them.
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name == "model.safetensors.index.json" ||
        (name.rfind("model", 0) == 0 && entry.path().extension() == ".safetensors"))
      fs::remove(entry.path());
  }
  // Group the tensors into shards of at most max_shard_bytes (in order).
  std::vector<std::vector<std::pair<std::string, at::Tensor>>> shards(1);
  int64_t shard_bytes = 0, total = 0;
  for (auto& [name, t] : model.namedParameters()) {
    at::Tensor c = t.detach().to(at::kCPU, dtype).contiguous();
    const int64_t n = static_cast<int64_t>(c.nbytes());
    if (shard_bytes > 0 && shard_bytes + n > options.max_shard_bytes) {
      shards.emplace_back();
      shard_bytes = 0;
    }
    shards.back().emplace_back(name, c);
    shard_bytes += n;
    total += n;
  }
  if (shards.size() == 1) {
    writeTensors(dir / "model.safetensors", shards[0]);
  } else {
    Json weight_map = Json::object();
    char buf[64];
    for (size_t i = 0; i < shards.size(); ++i) {
      std::snprintf(buf, sizeof buf, "model-%05zu-of-%05zu.safetensors", i + 1, shards.size());
      writeTensors(dir / buf, shards[i]);
      for (const auto& [name, t] : shards[i]) weight_map[name] = buf;
    }
    writeJsonFile(dir / "model.safetensors.index.json",
                  Json{{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}});
  }
  // config.json: the one read, with the dtype of the saved weights.
  Json config = model.config.raw.is_object() ? model.config.raw : Json::object();
  bool has_dtype_key = false;
  for (const char* key : {"torch_dtype", "dtype"})
    if (config.contains(key)) {
      config[key] = torchDtypeName(dtype);
      has_dtype_key = true;
    }
  if (!has_dtype_key) config["torch_dtype"] = torchDtypeName(dtype);
  writeJsonFile(dir / "config.json", config);
  if (!options.copy_files_from.empty() && fs::exists(options.copy_files_from) &&
      !fs::equivalent(options.copy_files_from, dir)) {
    for (const char* f : {"generation_config.json", "tokenizer.json", "tokenizer_config.json",
                          "special_tokens_map.json", "vocab.json", "merges.txt", "added_tokens.json",
                          "chat_template.jinja"})
      if (fs::exists(options.copy_files_from / f))
        fs::copy_file(options.copy_files_from / f, dir / f, fs::copy_options::overwrite_existing);
  }
}

}  // namespace kb::llm
