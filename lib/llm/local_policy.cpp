// The local policy: a LibTorch model and its tokenizer in this process.
#include <random>
#include <sstream>

#include "core/error.h"
#include "llm/model.h"
#include "llm/policy.h"
#include "llm/sampler.h"

namespace fs = std::filesystem;

namespace kb::llm {

namespace {

class TorchPolicy : public LocalPolicy {
 public:
  TorchPolicy(Model model, Tokenizer tokenizer, const LocalPolicyOptions& options)
      : model_(std::move(model)),
        tokenizer_(std::move(tokenizer)),
        template_(ChatTemplate::fromCheckpoint(options.model_dir)),
        options_(options) {
    for (int64_t id : readEosTokenIds(options.model_dir, model_.config))
      default_stop_.push_back(static_cast<int32_t>(id));
    if (tokenizer_.vocabSize() > model_.config.vocab_size)
      throw Error(options.model_dir.string() + ": the tokenizer has " + std::to_string(tokenizer_.vocabSize()) +
                  " tokens, more than the model's vocab_size " + std::to_string(model_.config.vocab_size));
  }

  std::vector<Generation> generate(const std::vector<std::vector<int32_t>>& prompts,
                                   const chat::SamplingParams& params) override {
    chat::SamplingParams p = params;
    if (p.stop_token_ids.empty()) p.stop_token_ids = default_stop_;
    const uint64_t seed = p.seed ? *p.seed : std::random_device{}() * 0x9E3779B97F4A7C15ULL ^ std::random_device{}();
    at::Generator gen = makeGenerator(model_.device(), seed);
    std::vector<Generation> out;
    const size_t chunk = static_cast<size_t>(std::max<int64_t>(1, options_.max_batch_size));
    for (size_t begin = 0; begin < prompts.size(); begin += chunk) {
      if (begin > 0 && p.stop_requested && p.stop_requested()) break;  // interrupted: later chunks not started
      std::vector<std::vector<int32_t>> part(prompts.begin() + begin,
                                             prompts.begin() + std::min(prompts.size(), begin + chunk));
      for (Generation& c : generateBatch(model_, part, p, gen, &tokenizer_)) out.push_back(std::move(c));
    }
    return out;
  }

  const Tokenizer& tokenizer() const override { return tokenizer_; }
  const ChatTemplate& chatTemplate() const override { return template_; }
  std::vector<int32_t> defaultStopTokenIds() const override { return default_stop_; }

  std::string modelDir() const override { return options_.model_dir.string(); }

  std::string detail() const override {
    std::ostringstream s;
    s << "local " << model_.config.architecture << " " << options_.model_dir.string() << " ("
      << model_.device().str() << ", " << torchDtypeName(model_.dtype()) << ")";
    return s.str();
  }

 private:
  Model model_;
  Tokenizer tokenizer_;
  ChatTemplate template_;
  LocalPolicyOptions options_;
  std::vector<int32_t> default_stop_;
};

}  // namespace

std::unique_ptr<LocalPolicy> loadLocalPolicy(const LocalPolicyOptions& options) {
  Model model = loadModel(options.model_dir, {options.device, options.dtype});
  const fs::path tok = options.tokenizer_path.empty() ? options.model_dir / "tokenizer.json" : options.tokenizer_path;
  return std::make_unique<TorchPolicy>(std::move(model), Tokenizer::fromFile(tok), options);
}

}  // namespace kb::llm
