#include "rl/toy_rollout.h"

#include <algorithm>
#include <fstream>
#include <map>

#include "core/error.h"
#include "llm/model.h"
#include "llm/policy.h"
#include "rl/toy_task.h"

namespace fs = std::filesystem;

namespace kb::rl {

Json runToyRollout(const ToyRolloutOptions& o) {
  if (o.last_seed < o.first_seed) throw UsageError("toy rollout: the last seed is before the first");
  if (o.env != "expr" && o.env != "kbcheck") throw UsageError("toy rollout: --env is expr or kbcheck, not " + o.env);
  if (o.env == "kbcheck") {  // every bundle is there before any answer is sampled
    if (o.env_options.bundles.empty()) throw UsageError("toy rollout: --env kbcheck needs --bundles");
    toyEnvDevices(o.env_options.device);
    for (uint64_t s = o.first_seed; s <= o.last_seed; ++s) toyBundleDir(o.env_options.bundles, makeToyTask(s));
  }
  auto policy = llm::loadLocalPolicy({.model_dir = o.model, .device = o.device, .dtype = o.dtype,
                                         .max_batch_size = o.max_batch});
  std::vector<ToyTask> tasks;
  std::vector<std::vector<chat::Message>> convs;
  std::vector<int> sample_of;
  for (uint64_t s = o.first_seed; s <= o.last_seed; ++s) {
    const ToyTask t = makeToyTask(s);
    std::vector<chat::Message> conv;
    for (const Json& m : toyPromptMessages(t)) conv.push_back(chat::messageFromJson(m));
    for (int k = 0; k < o.samples; ++k) {
      tasks.push_back(t);
      convs.push_back(conv);
      sample_of.push_back(k);
    }
  }
  chat::SamplingParams sp;
  sp.temperature = o.temperature;
  sp.max_tokens = o.max_new_tokens;
  sp.seed = o.sampling_seed;
  const std::vector<llm::Generation> out = policy->generateChat(convs, nullptr, sp);
  std::vector<ToyScore> scores;
  Json env_stats;
  if (o.env == "kbcheck") {
    std::vector<std::string> answers;
    for (const llm::Generation& c : out) answers.push_back(c.text);
    scores = scoreToyAnswersInEnvironment(tasks, answers, o.env_options, &env_stats);
  } else {
    for (size_t i = 0; i < out.size(); ++i) scores.push_back(scoreToyAnswer(tasks[i], out[i].text));
  }
  if (o.out.has_parent_path()) fs::create_directories(o.out.parent_path());
  std::ofstream file(o.out);
  if (!file) throw UsageError("cannot write " + o.out.string());
  double sum = 0, passed = 0, scored = 0;
  std::map<std::string, int> reasons;
  for (size_t i = 0; i < out.size(); ++i) {
    const llm::Generation& c = out[i];
    Json response = {{"finish_reason", c.finish_reason == "length" ? "length" : "stop"},
                     {"token_ids", c.token_ids},
                     {"logprobs", c.logprobs},
                     {"prompt_token_ids",
                      policy->chatTemplate().encode(policy->tokenizer(), convs[i], nullptr, true).ids}};
    Json t = toyTrajectory(tasks[i], sample_of[i], c.text, response, o.mode, scores[i]);
    if (!scores[i].excluded) {
      sum += scores[i].reward;
      passed += scores[i].correct;
      ++scored;
    }
    reasons[t["final"]["check"].get<std::string>().substr(0, t["final"]["check"].get<std::string>().find(':'))]++;
    file << t.dump() << '\n';
  }
  const double n = std::max(scored, 1.0);
  Json r = Json::object();
  for (auto& [k, v] : reasons) r[k] = v;
  Json result = {{"tasks", o.last_seed - o.first_seed + 1}, {"samples", out.size()}, {"mean_reward", sum / n},
                 {"pass_rate", passed / n}, {"reasons", r}, {"env", o.env}, {"out", o.out.string()}};
  if (o.env == "kbcheck") result["environment"] = env_stats;
  return result;
}

Json writeToyPrograms(uint64_t first, uint64_t last, const fs::path& dir) {
  if (last < first) throw UsageError("toy tasks: the last seed is before the first");
  fs::create_directories(dir);
  for (uint64_t s = first; s <= last; ++s) {
    const ToyTask t = makeToyTask(s);
    const fs::path file = dir / (t.id + ".py");
    std::ofstream f(file);
    f << "import torch\nimport torch.nn as nn\n\n\n"
         "class Model(nn.Module):\n"
         "    \"\"\"y = " << t.torch_expr << " (kbtrain's toy family, task seed " << s << ").\"\"\"\n\n"
         "    def __init__(self):\n        super().__init__()\n\n"
         "    def forward(self, x):\n        return " << t.torch_expr << "\n\n\n"
         "def get_inputs():\n    return [torch.randn(16384)]\n\n\n"
         "def get_init_inputs():\n    return []\n";
    if (!f) throw UsageError("cannot write " + file.string());
  }
  return {{"tasks", last - first + 1}, {"dir", dir.string()}};
}

Json writeToyDemonstrations(uint64_t first, uint64_t last, const fs::path& out) {
  if (last < first) throw UsageError("toy demos: the last seed is before the first");
  if (out.has_parent_path()) fs::create_directories(out.parent_path());
  std::ofstream file(out);
  if (!file) throw UsageError("cannot write " + out.string());
  for (uint64_t s = first; s <= last; ++s) {
    const ToyTask t = makeToyTask(s);
    file << toyTrajectory(t, 0, toyDemonstration(t), Json::object(), "demo").dump() << '\n';
  }
  return {{"tasks", last - first + 1}, {"out", out.string()}};
}

void writeRandomModel(const fs::path& config_path, const fs::path& tokenizer_dir, const fs::path& out,
                      const std::string& dtype, uint64_t seed) {
  const llm::ModelConfig config = llm::parseModelConfig(readJsonFile(config_path), config_path.string());
  llm::Model m = llm::randomModel(config, {.device = "cpu", .dtype = dtype}, seed);
  llm::saveModel(m, out, {.dtype = "", .copy_files_from = tokenizer_dir});
}

}  // namespace kb::rl
