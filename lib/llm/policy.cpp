#include "llm/policy.h"

#include <algorithm>
#include <chrono>

namespace kb::llm {

std::vector<Generation> LocalPolicy::generateChat(const std::vector<std::vector<chat::Message>>& conversations,
                                                  const Json& tools, const chat::SamplingParams& params) {
  std::vector<std::vector<int32_t>> prompts;
  for (const auto& conversation : conversations)
    prompts.push_back(chatTemplate().encode(tokenizer(), conversation, tools, /*add_generation_prompt=*/true).ids);
  chat::SamplingParams p = params;
  // The template's end of turn (<|im_end|>, <|eot_id|>, </s>) stops generation.
  const int32_t end_of_turn = tokenizer().tokenToId(chatTemplate().endOfTurn());
  if (p.stop_token_ids.empty()) p.stop_token_ids = defaultStopTokenIds();
  if (end_of_turn >= 0 &&
      std::find(p.stop_token_ids.begin(), p.stop_token_ids.end(), end_of_turn) == p.stop_token_ids.end())
    p.stop_token_ids.push_back(end_of_turn);
  return generate(prompts, p);
}

chat::Completion LocalPolicy::complete(const std::vector<chat::Message>& messages,
                                       const std::vector<chat::ToolSpec>& tools,
                                       const chat::SamplingParams& sampling) {
  const auto start = std::chrono::steady_clock::now();
  const Json tool_json = tools.empty() ? Json(nullptr) : chat::toolsToJson(tools);
  chat::SamplingParams p;  // what a server would be sent; the rest stays the model's
  p.temperature = sampling.temperature;
  p.top_p = sampling.top_p;
  p.max_tokens = sampling.max_tokens;
  p.seed = sampling.seed;
  Generation g;
  std::vector<int32_t> prompt;
  {
    std::lock_guard<std::mutex> lock(mu_);
    prompt = chatTemplate().encode(tokenizer(), messages, tool_json, true).ids;
    g = generateChat({messages}, tool_json, p).at(0);
  }
  const chat::Message parsed = parseAssistantMessage(g.text);
  chat::Completion r;
  r.content = parsed.content;
  for (chat::ToolCall call : parsed.tool_calls) {
    call.id = "call_" + std::to_string(++calls_);
    // A call with a name holds valid JSON: recorded compact, as a server sends it.
    if (!call.name.empty()) call.arguments = Json::parse(call.arguments).dump();
    call.error.clear();
    r.tool_calls.push_back(std::move(call));
  }
  r.finish_reason = g.finish_reason == "length" ? "length" : !r.tool_calls.empty() ? "tool_calls" : "stop";
  r.token_ids.assign(g.token_ids.begin(), g.token_ids.end());
  r.logprobs.assign(g.logprobs.begin(), g.logprobs.end());
  r.prompt_token_ids.assign(prompt.begin(), prompt.end());
  r.prompt_tokens = static_cast<int64_t>(prompt.size());
  r.completion_tokens = static_cast<int64_t>(g.token_ids.size());
  r.model = modelDir();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

Json LocalPolicy::describe() const { return {{"kind", "local"}, {"model", modelDir()}, {"detail", detail()}}; }

}  // namespace kb::llm
