#include "toy/rollout.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>

#include "agent/trajectory.h"
#include "core/error.h"
#include "llm/model.h"
#include "llm/policy.h"
#include "toy/episode.h"
#include "toy/task.h"

namespace fs = std::filesystem;

namespace kb::toy {

namespace {

// A batch generation as the reply the loop records (what LocalPolicy::complete
// gives, but the text kept whole: a toy answer is not parsed for tool calls).
chat::Completion toyReply(const llm::Generation& g, std::vector<int32_t> prompt_ids, const Json& policy) {
  chat::Completion c;
  c.content = g.text;
  c.has_content = true;
  c.finish_reason = g.finish_reason == "length" ? "length" : "stop";
  c.token_ids.assign(g.token_ids.begin(), g.token_ids.end());
  c.logprobs.assign(g.logprobs.begin(), g.logprobs.end());
  c.prompt_token_ids.assign(prompt_ids.begin(), prompt_ids.end());
  c.prompt_tokens = static_cast<int64_t>(prompt_ids.size());
  c.completion_tokens = static_cast<int64_t>(g.token_ids.size());
  c.model = policy.value("model", "");
  return c;
}

}  // namespace

Json runToyRollout(const ToyRolloutOptions& o) {
  if (o.last_seed < o.first_seed) throw UsageError("toy rollout: the last seed is before the first");
  if (o.env != "expr" && o.env != "kbcheck") throw UsageError("toy rollout: --env is expr or kbcheck, not " + o.env);
  std::unique_ptr<ToyEnvironment> env;
  if (o.env == "kbcheck") {  // every bundle is there before any answer is sampled
    if (o.env_options.bundles.empty()) throw UsageError("toy rollout: --env kbcheck needs --bundles");
    toyEnvDevices(o.env_options.device);
    for (uint64_t s = o.first_seed; s <= o.last_seed; ++s) toyBundleDir(o.env_options.bundles, makeToyTask(s));
    env = makeKbcheckToyEnvironment(o.env_options);
  } else {
    env = makeExprToyEnvironment();
  }
  auto policy = llm::loadLocalPolicy({.model_dir = o.model, .device = o.device, .dtype = o.dtype,
                                         .max_batch_size = o.max_batch});
  const Json described = policy->describe();
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
  // Every rollout's one policy call, in one batch (generateBatch); then each
  // rollout runs through the loop with its reply, the environment having
  // scored the batch's answers together where that is cheaper (kbcheck: one
  // reference worker per task).
  const std::vector<llm::Generation> out = policy->generateChat(convs, nullptr, sp);
  std::vector<std::string> answers;
  for (const llm::Generation& g : out) answers.push_back(g.text);
  env->prepare(tasks, answers);

  if (fs::exists(o.out)) fs::remove(o.out);  // overwritten, not resumed
  agent::TrajectoryWriter writer(o.out);
  const agent::RolloutOptions options = toyRolloutOptions(sp, o.mode);
  double sum = 0, passed = 0, scored = 0;
  std::map<std::string, int> reasons;
  for (size_t i = 0; i < out.size(); ++i) {
    const std::vector<int32_t> prompt_ids =
        policy->chatTemplate().encode(policy->tokenizer(), convs[i], nullptr, true).ids;
    const Json t = runToyEpisode(tasks[i], sample_of[i], toyReply(out[i], prompt_ids, described), described, *env,
                                 options);
    const Json& reward = t["reward"];
    if (reward["value"].is_number()) {
      sum += reward["value"].get<double>();
      passed += reward["correct"].get<bool>();
      ++scored;
    }
    const std::string check = t["final"]["check"].get<std::string>();
    reasons[check.substr(0, check.find(':'))]++;
    writer.append(t);
  }
  const double n = std::max(scored, 1.0);
  Json r = Json::object();
  for (auto& [k, v] : reasons) r[k] = v;
  Json result = {{"tasks", o.last_seed - o.first_seed + 1}, {"samples", out.size()}, {"mean_reward", sum / n},
                 {"pass_rate", passed / n}, {"reasons", r}, {"env", o.env}, {"out", o.out.string()}};
  if (o.env == "kbcheck") result["environment"] = env->stats();
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
  // Each demonstration is a rollout whose reply is the canonical kernel
  // (no token ids: kbtrain tokenizes it with the chat template), scored by
  // the evaluator.
  std::unique_ptr<ToyEnvironment> env = makeExprToyEnvironment();
  const Json demonstrator = {{"kind", "demonstration"}, {"model", "toyDemonstration"}};
  chat::SamplingParams sp;
  sp.temperature = 0;
  const agent::RolloutOptions options = toyRolloutOptions(sp, "demo");
  if (fs::exists(out)) fs::remove(out);  // overwritten
  agent::TrajectoryWriter writer(out);
  for (uint64_t s = first; s <= last; ++s) {
    const ToyTask t = makeToyTask(s);
    chat::Completion reply;
    reply.content = toyDemonstration(t);
    reply.has_content = true;
    reply.finish_reason = "stop";
    writer.append(runToyEpisode(t, 0, reply, demonstrator, *env, options));
  }
  return {{"tasks", last - first + 1}, {"out", out.string()}};
}

}  // namespace kb::toy
