#include "policy/chat_template.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "kb_config.h"

namespace fs = std::filesystem;
using namespace kb::policy;

namespace {

const fs::path kData = fs::path(KB_SOURCE_ROOT) / "testdata" / "policy";

std::vector<ChatMessage> messagesOf(const kb::Json& list) {
  std::vector<ChatMessage> out;
  for (const auto& m : list) out.push_back(chatMessageFromJson(m));
  return out;
}

// Our rendering equals transformers' apply_chat_template with the Jinja
// template (system/user/assistant/tool turns, tools, tool calls), and so do
// the token ids.
TEST(ChatTemplate, MatchesTheJinjaReference) {
  Tokenizer tok = Tokenizer::fromFile(kData / "qwen2-tiny");
  ChatTemplate tmpl;
  kb::Json cases = kb::readJsonFile(kData / "chat_expected.json");
  ASSERT_EQ(cases.size(), 8u);
  for (size_t i = 0; i < cases.size(); ++i) {
    const kb::Json& c = cases[i];
    auto messages = messagesOf(c["messages"]);
    const bool gen = c["add_generation_prompt"];
    EXPECT_EQ(tmpl.render(messages, c["tools"], gen), c["text"].get<std::string>()) << "case " << i;
    ChatEncoding enc = tmpl.encode(tok, messages, c["tools"], gen);
    EXPECT_EQ(enc.ids, c["ids"].get<std::vector<int32_t>>()) << "case " << i;
    EXPECT_EQ(enc.loss_mask.size(), enc.ids.size());
  }
}

// The mask marks exactly the assistant's tokens: each assistant turn's body
// and its closing <|im_end|>, nothing else.
TEST(ChatTemplate, LossMaskMarksExactlyTheAssistantTokens) {
  Tokenizer tok = Tokenizer::fromFile(kData / "qwen2-tiny");
  ChatTemplate tmpl;
  const int32_t im_end = tok.tokenToId("<|im_end|>");
  kb::Json cases = kb::readJsonFile(kData / "chat_expected.json");
  for (size_t i = 0; i < cases.size(); ++i) {
    auto messages = messagesOf(cases[i]["messages"]);
    ChatEncoding enc = tmpl.encode(tok, messages, cases[i]["tools"], cases[i]["add_generation_prompt"]);
    // Expected spans: the assistant turns rendered alone.
    std::vector<std::string> want;
    for (const ChatMessage& m : messages) {
      if (m.role != "assistant") continue;
      std::string body = m.content;
      std::string full = tmpl.render({m}, nullptr, false);
      // render({m}) = system turn + "<|im_start|>assistant\n" + body + "<|im_end|>\n"
      size_t start = full.rfind("<|im_start|>assistant\n") + std::string("<|im_start|>assistant\n").size();
      want.push_back(full.substr(start, full.size() - start - 1));
    }
    std::vector<std::string> got;
    std::vector<int32_t> span;
    for (size_t k = 0; k <= enc.ids.size(); ++k) {
      if (k < enc.ids.size() && enc.loss_mask[k]) {
        span.push_back(enc.ids[k]);
      } else if (!span.empty()) {
        EXPECT_EQ(span.back(), im_end) << "case " << i << ": a masked span must end with <|im_end|>";
        got.push_back(tok.decode(span));
        span.clear();
      }
    }
    EXPECT_EQ(got, want) << "case " << i;
  }
}

TEST(ChatTemplate, DefaultSystemAndPlainChatML) {
  ChatTemplate tmpl;
  std::vector<ChatMessage> m = {{"user", "hi", {}}};
  EXPECT_EQ(tmpl.render(m, nullptr, true),
            "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
            "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
  tmpl.default_system.reset();
  EXPECT_EQ(tmpl.render(m, nullptr, true), "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_THROW(chatMessageFromJson(kb::Json{{"role", "robot"}, {"content", "x"}}), kb::Error);
}

TEST(ChatTemplate, ParsesAssistantToolCalls) {
  ChatMessage m = parseAssistantMessage(
      "Let me build it.\n<tool_call>\n{\"name\": \"compile\", \"arguments\": {\"flags\": \"-O3\"}}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"profile\", \"arguments\": {}}\n</tool_call><|im_end|>");
  EXPECT_EQ(m.role, "assistant");
  EXPECT_EQ(m.content, "Let me build it.");
  ASSERT_EQ(m.tool_calls.size(), 2u);
  EXPECT_EQ(m.tool_calls[0].name, "compile");
  EXPECT_EQ(m.tool_calls[0].arguments, (kb::Json{{"flags", "-O3"}}));
  EXPECT_TRUE(m.tool_calls[0].error.empty());
  EXPECT_EQ(m.tool_calls[1].name, "profile");
  // Rendering the parsed message gives back the generated text.
  ChatTemplate tmpl;
  std::string full = tmpl.render({m}, nullptr, false);
  EXPECT_NE(full.find("<|im_start|>assistant\nLet me build it.\n<tool_call>\n{\"name\": \"compile\", "
                      "\"arguments\": {\"flags\": \"-O3\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"profile\", "
                      "\"arguments\": {}}\n</tool_call><|im_end|>\n"),
            std::string::npos)
      << full;

  ChatMessage plain = parseAssistantMessage("just text<|im_end|>");
  EXPECT_EQ(plain.content, "just text");
  EXPECT_TRUE(plain.tool_calls.empty());
  ChatMessage bad = parseAssistantMessage("<tool_call>\n{\"name\": oops}\n</tool_call>");
  ASSERT_EQ(bad.tool_calls.size(), 1u);
  EXPECT_NE(bad.tool_calls[0].error.find("not valid JSON"), std::string::npos);
  ChatMessage open = parseAssistantMessage("<tool_call>\n{\"name\": \"x\", \"arguments\": {}}");
  ASSERT_EQ(open.tool_calls.size(), 1u);
  EXPECT_EQ(open.tool_calls[0].error, "unterminated <tool_call>");
}

TEST(ChatTemplate, PythonJsonDumps) {
  kb::Json j = kb::Json::parse(R"({"b": [1, 2.5, "é\n"], "a": {"x": null, "y": true}, "e": {}, "f": []})");
  EXPECT_EQ(pythonJsonDumps(j), "{\"b\": [1, 2.5, \"é\\n\"], \"a\": {\"x\": null, \"y\": true}, \"e\": {}, \"f\": []}");
}

}  // namespace
