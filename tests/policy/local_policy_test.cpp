// The local policy behind chat::Policy (kbrollout --local-model): messages
// and tools in, an assistant turn with sampled token ids, log-probs and the
// prompt's ids out, on the tiny Qwen2 fixture.
#include <gtest/gtest.h>

#include <cstdlib>

#include "llm/policy.h"

using namespace kb;

TEST(LocalPolicy, FillsTokensLogprobsAndPrompt) {
  llm::LocalPolicyOptions o;
  o.model_dir = std::string(std::getenv("KB_SOURCE_ROOT")) + "/testdata/policy/qwen2-tiny";
  std::unique_ptr<chat::Policy> p = llm::loadLocalPolicy(o);
  std::vector<chat::Message> messages;
  for (const Json& m : Json::array(
           {{{"role", "system"}, {"content", "You write CUDA."}},
            {{"role", "user"}, {"content", "Compile it."}},
            {{"role", "assistant"}, {"content", ""},
             {"tool_calls", {{{"id", "c1"}, {"type", "function"}, {"function", {{"name", "compile"}, {"arguments", "{}"}}}}}}},
            {{"role", "tool"}, {"tool_call_id", "c1"}, {"content", "ok"}}}))
    messages.push_back(chat::messageFromJson(m));
  std::vector<chat::ToolSpec> tools = {{"compile", "build the solution", {{"type", "object"}}}};
  chat::SamplingParams s;
  s.max_tokens = 8;
  s.seed = 3;
  chat::Completion r = p->complete(messages, tools, s);
  ASSERT_FALSE(r.token_ids.empty());
  EXPECT_LE(r.token_ids.size(), 8u);
  EXPECT_EQ(r.logprobs.size(), r.token_ids.size());
  for (double lp : r.logprobs) EXPECT_LE(lp, 0.0);
  EXPECT_GT(r.prompt_token_ids.size(), 10u);
  EXPECT_EQ(r.prompt_tokens, static_cast<int64_t>(r.prompt_token_ids.size()));
  EXPECT_TRUE(r.finish_reason == "length" || r.finish_reason == "stop" || r.finish_reason == "tool_calls");
  EXPECT_EQ(p->describe()["kind"], "local");
  // Same seed, same answer.
  EXPECT_EQ(p->complete(messages, tools, s).token_ids, r.token_ids);
}
