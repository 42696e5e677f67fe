#include "localagent/local_agent_policy.h"

#include <atomic>
#include <chrono>
#include <mutex>

namespace kb::agent {

namespace {

class LocalAgentPolicy : public Policy {
 public:
  LocalAgentPolicy(std::unique_ptr<policy::Policy> local, std::string name)
      : local_(std::move(local)), name_(std::move(name)) {}

  PolicyResponse complete(const std::vector<Json>& messages, const std::vector<ToolSpec>& tools,
                          const SamplingParams& sampling) override {
    const auto start = std::chrono::steady_clock::now();
    std::vector<policy::ChatMessage> conv;
    try {
      for (const Json& m : messages) conv.push_back(policy::chatMessageFromJson(m));
    } catch (const Error& e) {
      throw PolicyError(std::string("local policy: ") + e.what(), /*retryable=*/false);
    }
    Json tool_json = nullptr;
    if (!tools.empty()) {
      tool_json = Json::array();
      for (const ToolSpec& t : tools)
        tool_json.push_back({{"type", "function"},
                             {"function", {{"name", t.name}, {"description", t.description}, {"parameters", t.parameters}}}});
    }
    policy::SamplingParams p;
    p.temperature = sampling.temperature;
    p.top_p = sampling.top_p;
    p.max_new_tokens = sampling.max_tokens;
    if (sampling.seed) p.seed = static_cast<uint64_t>(*sampling.seed);
    policy::Completion c;
    std::vector<int32_t> prompt;
    {
      std::lock_guard<std::mutex> lock(mu_);
      prompt = local_->chatTemplate().encode(local_->tokenizer(), conv, tool_json, true).ids;
      c = local_->generateChat({conv}, tool_json, p).at(0);
    }
    const policy::ChatMessage parsed = policy::parseAssistantMessage(c.text);
    PolicyResponse r;
    r.content = parsed.content;
    for (const policy::ToolCall& tc : parsed.tool_calls) {
      ToolCall call;
      call.id = "call_" + std::to_string(++counter_);
      call.name = tc.name;
      call.arguments = tc.error.empty() ? tc.arguments.dump()
                       : tc.arguments.is_string() ? tc.arguments.get<std::string>()
                                                  : tc.arguments.dump();
      r.tool_calls.push_back(std::move(call));
    }
    r.finish_reason = c.finish_reason == "length" ? "length" : !r.tool_calls.empty() ? "tool_calls" : "stop";
    r.token_ids.assign(c.token_ids.begin(), c.token_ids.end());
    r.logprobs.assign(c.logprobs.begin(), c.logprobs.end());
    r.prompt_token_ids.assign(prompt.begin(), prompt.end());
    r.prompt_tokens = static_cast<int64_t>(prompt.size());
    r.completion_tokens = static_cast<int64_t>(c.token_ids.size());
    r.model = name_;
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return r;
  }

  Json describe() const override { return {{"kind", "local"}, {"model", name_}, {"detail", local_->describe()}}; }

 private:
  std::unique_ptr<policy::Policy> local_;
  std::string name_;
  std::mutex mu_;
  std::atomic<int64_t> counter_{0};
};

}  // namespace

std::unique_ptr<Policy> wrapLocalPolicy(std::unique_ptr<policy::Policy> local, const std::string& name) {
  return std::make_unique<LocalAgentPolicy>(std::move(local), name);
}

std::unique_ptr<Policy> makeLocalAgentPolicy(const policy::LocalPolicyOptions& options) {
  return wrapLocalPolicy(policy::loadLocalPolicy(options), options.model_dir.string());
}

}  // namespace kb::agent
