#include "llm/chat_template.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "core/error.h"
#include "kb_config.h"

namespace fs = std::filesystem;
using namespace kb::llm;

namespace {

const fs::path kData = fs::path(KB_SOURCE_ROOT) / "testdata" / "policy";

std::vector<kb::chat::Message> messagesOf(const kb::Json& list) {
  std::vector<kb::chat::Message> out;
  for (const auto& m : list) out.push_back(kb::chat::messageFromJson(m));
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
    for (const kb::chat::Message& m : messages) {
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
  std::vector<kb::chat::Message> m = {{.role = "user", .content = "hi"}};
  EXPECT_EQ(tmpl.render(m, nullptr, true),
            "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
            "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
  tmpl.default_system.reset();
  EXPECT_EQ(tmpl.render(m, nullptr, true), "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_THROW(kb::chat::messageFromJson(kb::Json{{"role", "robot"}, {"content", "x"}}), kb::Error);
}

TEST(ChatTemplate, ParsesAssistantToolCalls) {
  kb::chat::Message m = parseAssistantMessage(
      "Let me build it.\n<tool_call>\n{\"name\": \"compile\", \"arguments\": {\"flags\": \"-O3\"}}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"profile\", \"arguments\": {}}\n</tool_call><|im_end|>");
  EXPECT_EQ(m.role, "assistant");
  EXPECT_EQ(m.content, "Let me build it.");
  ASSERT_EQ(m.tool_calls.size(), 2u);
  EXPECT_EQ(m.tool_calls[0].name, "compile");
  EXPECT_EQ(m.tool_calls[0].arguments, "{\"flags\": \"-O3\"}");  // as the model wrote it
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

  kb::chat::Message plain = parseAssistantMessage("just text<|im_end|>");
  EXPECT_EQ(plain.content, "just text");
  EXPECT_TRUE(plain.tool_calls.empty());
  kb::chat::Message bad = parseAssistantMessage("<tool_call>\n{\"name\": oops}\n</tool_call>");
  ASSERT_EQ(bad.tool_calls.size(), 1u);
  EXPECT_NE(bad.tool_calls[0].error.find("not valid JSON"), std::string::npos);
  kb::chat::Message open = parseAssistantMessage("<tool_call>\n{\"name\": \"x\", \"arguments\": {}}");
  ASSERT_EQ(open.tool_calls.size(), 1u);
  EXPECT_EQ(open.tool_calls[0].error, "unterminated <tool_call>");
}

TEST(ChatTemplate, PythonJsonDumps) {
  kb::Json j = kb::Json::parse(R"({"b": [1, 2.5, "é\n"], "a": {"x": null, "y": true}, "e": {}, "f": []})");
  EXPECT_EQ(kb::chat::pythonJsonDumps(j), "{\"b\": [1, 2.5, \"é\\n\"], \"a\": {\"x\": null, \"y\": true}, \"e\": {}, \"f\": []}");
}

}  // namespace

// ---- The checkpoint's own template (issue 18: a Llama checkpoint was
// rendered as ChatML with Qwen's system prompt). ----------------------------

namespace {

const fs::path kTemplates = fs::path(KB_SOURCE_ROOT) / "tests" / "policy" / "chat_templates";

std::string readFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A checkpoint directory as transformers writes one: config.json and a
// tokenizer_config.json whose "chat_template" holds the template.
class CheckpointDir : public ::testing::Test {
 protected:
  void SetUp() override {
    root = fs::temp_directory_path() / ("kb-chat-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(root);
  }
  void TearDown() override { fs::remove_all(root); }

  fs::path make(const std::string& name, const kb::Json& chat_template, const std::string& model_type) {
    const fs::path dir = root / name;
    fs::create_directories(dir);
    kb::Json tc = {{"tokenizer_class", "PreTrainedTokenizerFast"}};
    if (name.rfind("llama", 0) == 0) tc.update({{"bos_token", "<|begin_of_text|>"}, {"eos_token", "<|eot_id|>"}});
    if (name.rfind("mistral", 0) == 0)
      tc.update({{"bos_token", {{"content", "<s>"}, {"special", true}}}, {"eos_token", "</s>"}});
    if (!chat_template.is_null()) tc["chat_template"] = chat_template;
    kb::writeJsonFile(dir / "tokenizer_config.json", tc);
    kb::writeJsonFile(dir / "config.json", {{"model_type", model_type}});
    return dir;
  }
  fs::path makeFromFixture(const std::string& name) {
    const std::string type = name.rfind("llama", 0) == 0 ? "llama" : name.rfind("mistral", 0) == 0 ? "mistral" : "qwen2";
    return make(name, readFile(kTemplates / (name + ".jinja")), type);
  }

  fs::path root;
};

}  // namespace

// Every case of tests/policy/chat_templates/expected.json (rendered by Jinja2
// as transformers does, make_expected.py) renders the same from C++, or is
// refused where the template raises.
TEST_F(CheckpointDir, TemplatesOfEachFamilyMatchJinja) {
  const kb::Json cases = kb::readJsonFile(kTemplates / "expected.json");
  ASSERT_GE(cases.size(), 20u);
  std::map<std::string, ChatTemplate> loaded;
  size_t rendered = 0, refused = 0;
  for (const kb::Json& c : cases) {
    const std::string name = c["template"];
    if (!loaded.count(name)) loaded[name] = ChatTemplate::fromCheckpoint(makeFromFixture(name));
    const ChatTemplate& t = loaded[name];
    ASSERT_FALSE(t.unavailable) << name << ": " << t.unavailable.value_or("");
    const auto messages = messagesOf(c["messages"]);
    if (c.contains("error")) {
      EXPECT_THROW(t.render(messages, nullptr, c["add_generation_prompt"]), kb::UsageError) << name;
      ++refused;
    } else {
      EXPECT_EQ(t.render(messages, nullptr, c["add_generation_prompt"]), c["text"].get<std::string>())
          << name << " " << c["messages"].dump();
      ++rendered;
    }
  }
  EXPECT_EQ(loaded.at("qwen2").family, ChatFamily::ChatML);
  EXPECT_EQ(loaded.at("qwen2").default_system, "You are a helpful assistant.");
  EXPECT_EQ(loaded.at("llama3").family, ChatFamily::Llama3);
  EXPECT_FALSE(loaded.at("llama3").llama_date_header);
  EXPECT_TRUE(loaded.at("llama3.1").llama_date_header);
  EXPECT_EQ(loaded.at("llama3.1").endOfTurn(), "<|eot_id|>");
  EXPECT_EQ(loaded.at("mistral-v0.2").family, ChatFamily::Mistral);
  EXPECT_FALSE(loaded.at("mistral-v0.2").mistral_v3);
  EXPECT_TRUE(loaded.at("mistral-v0.3").mistral_v3);
  EXPECT_EQ(loaded.at("mistral-v0.3").endOfTurn(), "</s>");
  EXPECT_GE(rendered, 20u);
  EXPECT_GE(refused, 2u);
}

// The bundled Qwen2 fixture keeps its template in chat_template.jinja: Qwen2.5's.
TEST(ChatTemplate, QwenCheckpointGivesQwenChatML) {
  const ChatTemplate t = ChatTemplate::fromCheckpoint(kData / "qwen2-tiny" / "tokenizer.json");
  ASSERT_FALSE(t.unavailable) << *t.unavailable;
  EXPECT_EQ(t.family, ChatFamily::ChatML);
  EXPECT_EQ(t.default_system, ChatTemplate().default_system);
  EXPECT_TRUE(t.supports_tools);
  const kb::Json c = kb::readJsonFile(kData / "chat_expected.json")[4];
  EXPECT_EQ(t.render(messagesOf(c["messages"]), c["tools"], c["add_generation_prompt"]), c["text"].get<std::string>());
}

// A Llama checkpoint without a template is never rendered as ChatML: the
// template is unavailable, and rendering says why.
TEST(ChatTemplate, CheckpointWithoutTemplateIsRefused) {
  const ChatTemplate t = ChatTemplate::fromCheckpoint(kData / "llama-tiny");
  ASSERT_TRUE(t.unavailable);
  EXPECT_NE(t.unavailable->find("no chat template"), std::string::npos) << *t.unavailable;
  EXPECT_NE(t.unavailable->find("llama"), std::string::npos) << *t.unavailable;
  try {
    t.render({{.role = "user", .content = "hi"}}, nullptr, true);
    ADD_FAILURE() << "rendered without a template";
  } catch (const kb::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("no chat template"), std::string::npos);
  }
}

TEST_F(CheckpointDir, UnknownLayoutsAreRefusedNotGuessed) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"{% for m in messages %}{{ m['content'] }}{% endfor %}", "unrecognised chat template"},
      {"{{ '<|im_start|>' + m.role }}{% if m.reasoning_content %}<think>{% endif %}", "thinking"},
      {"{{ bos_token + '[INST] <<SYS>>\\n' + system + '\\n<</SYS>>\\n\\n' }}", "Llama 2"},
      {"{{ '[SYSTEM_PROMPT]' + s + '[/SYSTEM_PROMPT]' + '[INST]' + u + '[/INST]' }}", "[SYSTEM_PROMPT]"}};
  for (size_t i = 0; i < bad.size(); ++i) {
    const ChatTemplate t = ChatTemplate::fromCheckpoint(make("x" + std::to_string(i), bad[i].first, "llama"));
    ASSERT_TRUE(t.unavailable) << bad[i].first;
    EXPECT_NE(t.unavailable->find(bad[i].second), std::string::npos) << *t.unavailable;
    EXPECT_THROW(t.render({{.role = "user", .content = "hi"}}, nullptr, true), kb::UsageError);
  }
}

// transformers' list of named templates: the one named "default" is used.
TEST_F(CheckpointDir, NamedTemplatesUseTheDefault) {
  const kb::Json named = kb::Json::array(
      {{{"name", "tool_use"}, {"template", "{{ '<|im_start|>' }}"}},
       {{"name", "default"}, {"template", readFile(kTemplates / "llama3.1.jinja")}}});
  const ChatTemplate t = ChatTemplate::fromCheckpoint(make("llama-named", named, "llama"));
  ASSERT_FALSE(t.unavailable) << *t.unavailable;
  EXPECT_EQ(t.family, ChatFamily::Llama3);
}

// Llama 3: the loss mask covers the assistant's content and its <|eot_id|>,
// not the header; tools are refused (only ChatML's tool format is rendered).
TEST_F(CheckpointDir, LlamaLossMaskAndTools) {
  const ChatTemplate t = ChatTemplate::fromCheckpoint(makeFromFixture("llama3.1"));
  ASSERT_FALSE(t.unavailable);
  const Tokenizer tok = Tokenizer::fromFile(kData / "llama-tiny");
  const std::vector<kb::chat::Message> conv = {{.role = "system", .content = "S"}, {.role = "user", .content = "Write a kernel."},
                                         {.role = "assistant", .content = "Here it is."}, {.role = "user", .content = "Faster?"}};
  const ChatEncoding enc = t.encode(tok, conv, nullptr, true);
  ASSERT_EQ(enc.ids.size(), enc.loss_mask.size());
  std::vector<int32_t> masked;
  for (size_t i = 0; i < enc.ids.size(); ++i)
    if (enc.loss_mask[i]) masked.push_back(enc.ids[i]);
  EXPECT_EQ(tok.decode(masked), "Here it is.<|eot_id|>");
  EXPECT_EQ(enc.ids.front(), tok.tokenToId("<|begin_of_text|>"));
  EXPECT_EQ(tok.decode(enc.ids), t.render(conv, nullptr, true));
  const kb::Json tools = kb::Json::array({{{"type", "function"}, {"function", {{"name", "compile"}}}}});
  EXPECT_THROW(t.encode(tok, conv, tools, true), kb::UsageError);
  EXPECT_EQ(parseAssistantMessage("done<|eot_id|>").content, "done");
}
