#include "rl/critic.h"

#include "core/error.h"

namespace fs = std::filesystem;

namespace kb::rl {

at::Tensor Critic::values(const at::Tensor& input_ids, const at::Tensor& attention_mask) const {
  at::Tensor h = backbone.hidden(input_ids, attention_mask);  // [B, T, C]
  return at::linear(h, head_weight, head_bias).squeeze(-1).to(at::kFloat);
}

std::vector<at::Tensor> Critic::trainableParameters() const {
  std::vector<at::Tensor> out;
  for (auto& [name, t] : backbone.namedParameters())
    if (name != "lm_head.weight") out.push_back(t);
  out.push_back(head_weight);
  out.push_back(head_bias);
  return out;
}

Critic loadCritic(const fs::path& dir, const llm::LoadOptions& options) {
  Critic c;
  c.backbone = llm::loadModel(dir, options);
  const auto opts = c.backbone.embed_tokens.options();
  const fs::path head = dir / "value_head.safetensors";
  if (fs::exists(head)) {
    for (auto& [name, t] : llm::readTensors(head)) {
      if (name == "value_head.weight") c.head_weight = t.to(opts.device(), opts.dtype().toScalarType());
      else if (name == "value_head.bias") c.head_bias = t.to(opts.device(), opts.dtype().toScalarType());
    }
    if (!c.head_weight.defined() || !c.head_bias.defined() ||
        c.head_weight.sizes() != at::IntArrayRef({1, c.backbone.config.hidden_size}))
      throw Error(head.string() + ": needs value_head.weight [1, " + std::to_string(c.backbone.config.hidden_size) +
                  "] and value_head.bias [1]");
    c.head_loaded = true;
  } else {
    c.head_weight = at::zeros({1, c.backbone.config.hidden_size}, opts);
    c.head_bias = at::zeros({1}, opts);
  }
  return c;
}

void saveCritic(const Critic& c, const fs::path& dir, const llm::SaveOptions& options) {
  llm::saveModel(c.backbone, dir, options);
  const at::ScalarType dtype = options.dtype.empty() ? c.backbone.dtype() : llm::parseTorchDtype(options.dtype);
  llm::writeTensors(dir / "value_head.safetensors",
                       {{"value_head.weight", c.head_weight.to(dtype)}, {"value_head.bias", c.head_bias.to(dtype)}});
}

}  // namespace kb::rl
