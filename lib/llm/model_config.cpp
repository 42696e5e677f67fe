#include "llm/model_config.h"

#include "core/error.h"

namespace fs = std::filesystem;

namespace kb::llm {

namespace {

constexpr const char* kSupported = "Qwen2ForCausalLM, LlamaForCausalLM, MistralForCausalLM";

int64_t requireInt(const Json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || !j[key].is_number_integer())
    throw Error(where + ": '" + key + "' must be an integer");
  int64_t v = j[key].get<int64_t>();
  if (v <= 0) throw Error(where + ": '" + key + "' must be positive, is " + std::to_string(v));
  return v;
}

double numberOr(const Json& j, const char* key, double fallback, const std::string& where) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  if (!j[key].is_number()) throw Error(where + ": '" + key + "' must be a number");
  return j[key].get<double>();
}

bool boolOr(const Json& j, const char* key, bool fallback) {
  if (!j.contains(key) || !j[key].is_boolean()) return fallback;
  return j[key].get<bool>();
}

std::string stringOr(const Json& j, const char* key, const std::string& fallback) {
  if (!j.contains(key) || !j[key].is_string()) return fallback;
  return j[key].get<std::string>();
}

std::vector<int64_t> idList(const Json& j) {
  if (j.is_number_integer()) return {j.get<int64_t>()};
  if (j.is_array()) {
    std::vector<int64_t> out;
    for (const auto& v : j)
      if (v.is_number_integer()) out.push_back(v.get<int64_t>());
    return out;
  }
  return {};
}

RopeConfig parseRope(const Json& j, int64_t max_pos, const std::string& where) {
  RopeConfig rope;
  // v5: "rope_parameters" holds theta and the scaling; v4: "rope_theta" and
  // an optional "rope_scaling" object.
  Json scaling = Json::object();
  if (j.contains("rope_parameters") && j["rope_parameters"].is_object()) {
    scaling = j["rope_parameters"];
    rope.theta = numberOr(scaling, "rope_theta", numberOr(j, "rope_theta", 10000.0, where), where);
  } else {
    rope.theta = numberOr(j, "rope_theta", 10000.0, where);
    if (j.contains("rope_scaling") && j["rope_scaling"].is_object()) scaling = j["rope_scaling"];
  }
  std::string type = "default";
  if (scaling.contains("rope_type") && scaling["rope_type"].is_string())
    type = scaling["rope_type"].get<std::string>();
  else if (scaling.contains("type") && scaling["type"].is_string())
    type = scaling["type"].get<std::string>();
  const std::string ctx = where + ": rope scaling '" + type + "'";
  if (type != "default" && type != "linear" && type != "llama3" && type != "yarn")
    throw Error(ctx + " is not supported (supported: default, linear, llama3, yarn)");
  rope.type = type;
  rope.factor = numberOr(scaling, "factor", 1.0, where);
  rope.low_freq_factor = numberOr(scaling, "low_freq_factor", 1.0, where);
  rope.high_freq_factor = numberOr(scaling, "high_freq_factor", 4.0, where);
  rope.original_max_position_embeddings = static_cast<int64_t>(
      numberOr(scaling, "original_max_position_embeddings", static_cast<double>(max_pos), where));
  rope.beta_fast = numberOr(scaling, "beta_fast", 32.0, where);
  rope.beta_slow = numberOr(scaling, "beta_slow", 1.0, where);
  rope.attention_factor = numberOr(scaling, "attention_factor", 0.0, where);
  if (scaling.contains("truncate") && scaling["truncate"].is_boolean())
    rope.truncate = scaling["truncate"].get<bool>();
  if (type != "default" && rope.factor <= 0) throw Error(ctx + ": factor must be positive");
  if (type == "llama3" && rope.high_freq_factor <= rope.low_freq_factor)
    throw Error(ctx + ": high_freq_factor must exceed low_freq_factor");
  if (rope.theta <= 0) throw Error(where + ": rope_theta must be positive");
  return rope;
}

}  // namespace

ModelConfig parseModelConfig(const Json& j, const std::string& where) {
  if (!j.is_object()) throw Error(where + ": not a JSON object");
  ModelConfig c;
  c.raw = j;
  if (j.contains("architectures") && j["architectures"].is_array() && !j["architectures"].empty() &&
      j["architectures"][0].is_string())
    c.architecture = j["architectures"][0].get<std::string>();
  c.model_type = stringOr(j, "model_type", "");
  if (c.architecture.empty()) {
    if (c.model_type == "qwen2") c.architecture = "Qwen2ForCausalLM";
    else if (c.model_type == "llama") c.architecture = "LlamaForCausalLM";
    else if (c.model_type == "mistral") c.architecture = "MistralForCausalLM";
  }
  if (c.architecture != "Qwen2ForCausalLM" && c.architecture != "LlamaForCausalLM" &&
      c.architecture != "MistralForCausalLM")
    throw Error(where + ": unsupported architecture '" +
                (c.architecture.empty() ? c.model_type : c.architecture) +
                "' (supported: " + kSupported + ")");

  c.vocab_size = requireInt(j, "vocab_size", where);
  c.hidden_size = requireInt(j, "hidden_size", where);
  c.intermediate_size = requireInt(j, "intermediate_size", where);
  c.num_hidden_layers = requireInt(j, "num_hidden_layers", where);
  c.num_attention_heads = requireInt(j, "num_attention_heads", where);
  c.num_key_value_heads = j.contains("num_key_value_heads") && !j["num_key_value_heads"].is_null()
                              ? requireInt(j, "num_key_value_heads", where)
                              : c.num_attention_heads;
  if (j.contains("head_dim") && !j["head_dim"].is_null()) {
    c.head_dim = requireInt(j, "head_dim", where);
  } else {
    if (c.hidden_size % c.num_attention_heads != 0)
      throw Error(where + ": hidden_size " + std::to_string(c.hidden_size) +
                  " is not a multiple of num_attention_heads " + std::to_string(c.num_attention_heads));
    c.head_dim = c.hidden_size / c.num_attention_heads;
  }
  if (c.head_dim % 2 != 0) throw Error(where + ": head_dim must be even for rotary embeddings");
  if (c.num_attention_heads % c.num_key_value_heads != 0)
    throw Error(where + ": num_attention_heads " + std::to_string(c.num_attention_heads) +
                " is not a multiple of num_key_value_heads " + std::to_string(c.num_key_value_heads));
  c.max_position_embeddings =
      j.contains("max_position_embeddings") ? requireInt(j, "max_position_embeddings", where) : 4096;
  c.rms_norm_eps = numberOr(j, "rms_norm_eps", 1e-6, where);
  c.rope = parseRope(j, c.max_position_embeddings, where);
  c.tie_word_embeddings = boolOr(j, "tie_word_embeddings", false);

  const std::string act = stringOr(j, "hidden_act", "silu");
  if (act != "silu")
    throw Error(where + ": hidden_act '" + act + "' is not supported (only silu, the SwiGLU MLP)");
  if (numberOr(j, "pretraining_tp", 1, where) != 1)
    throw Error(where + ": pretraining_tp other than 1 is not supported");

  if (c.architecture == "Qwen2ForCausalLM") {
    c.qkv_bias = true;  // Qwen2 has q/k/v biases and no o_proj bias
    if (boolOr(j, "use_sliding_window", false))
      throw Error(where + ": use_sliding_window=true is not supported (Qwen2 sliding-window attention)");
    if (j.contains("layer_types") && j["layer_types"].is_array())
      for (const auto& t : j["layer_types"])
        if (t != "full_attention")
          throw Error(where + ": layer type " + t.dump() + " is not supported (only full_attention)");
  } else {
    c.qkv_bias = c.o_bias = boolOr(j, "attention_bias", false);
    c.mlp_bias = boolOr(j, "mlp_bias", false);
    if (c.architecture == "MistralForCausalLM" && j.contains("sliding_window") &&
        !j["sliding_window"].is_null())
      throw Error(where + ": Mistral's sliding_window is not supported (set it to null)");
  }

  if (j.contains("torch_dtype") && j["torch_dtype"].is_string()) c.dtype = j["torch_dtype"];
  else if (j.contains("dtype") && j["dtype"].is_string()) c.dtype = j["dtype"];
  if (j.contains("eos_token_id")) c.eos_token_ids = idList(j["eos_token_id"]);
  if (j.contains("bos_token_id") && j["bos_token_id"].is_number_integer()) c.bos_token_id = j["bos_token_id"];
  if (j.contains("pad_token_id") && j["pad_token_id"].is_number_integer()) c.pad_token_id = j["pad_token_id"];
  return c;
}

ModelConfig readModelConfig(const fs::path& dir) {
  const fs::path path = dir / "config.json";
  if (!fs::exists(path)) throw UsageError(dir.string() + ": no config.json (not a model directory)");
  return parseModelConfig(readJsonFile(path), path.string());
}

std::vector<int64_t> readEosTokenIds(const fs::path& dir, const ModelConfig& config) {
  const fs::path path = dir / "generation_config.json";
  if (fs::exists(path)) {
    Json j = readJsonFile(path);
    if (j.contains("eos_token_id")) {
      auto ids = idList(j["eos_token_id"]);
      if (!ids.empty()) return ids;
    }
  }
  return config.eos_token_ids;
}

}  // namespace kb::llm
