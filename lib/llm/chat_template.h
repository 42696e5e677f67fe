// Chat templates, written out in C++ rather than run as Jinja. The template
// comes from the checkpoint (ChatTemplate::fromCheckpoint: chat_template.jinja,
// else tokenizer_config.json's "chat_template"), recognised as one of three
// families and rendered in that family's real format:
//
// ChatML (Qwen2 / Qwen2.5, <|im_start|>) with Qwen-style tool calls:
//   <|im_start|>system\n{system}[tools block]<|im_end|>\n
//   <|im_start|>user\n{content}<|im_end|>\n
//   <|im_start|>assistant\n{content}[\n<tool_call>\n{"name": ..., "arguments": ...}\n</tool_call>]<|im_end|>\n
//   <|im_start|>user\n<tool_response>\n{tool output}\n</tool_response><|im_end|>\n
//   [<|im_start|>assistant\n]            <- add_generation_prompt
// the default system prompt read from the template (Qwen2.5's "You are Qwen,
// created by Alibaba Cloud. ...", Qwen2's "You are a helpful assistant.", or none).
//
// Llama 3 (<|start_header_id|>):
//   {bos}<|start_header_id|>{role}<|end_header_id|>\n\n{content|trim}<|eot_id|>...
//   [<|start_header_id|>assistant<|end_header_id|>\n\n]
// with Llama 3.1+'s system turn ("Cutting Knowledge Date: December 2023\n
// Today Date: {date}\n\n{system}") when the template has it.
//
// Mistral ([INST]): {bos}[INST] {user} [/INST]{assistant}{eos} (v0.1/v0.2:
// no system turn), or {bos}[INST] {user}[/INST] {assistant|trim}{eos} with
// the system message before the last user turn (v0.3).
//
// A template of none of these (or a feature the renderer does not have:
// Qwen3 thinking, Llama/Mistral tool calls) is refused with an error naming
// the file, never rendered in another family's format. The loss mask marks
// exactly the tokens the assistant produces: each assistant turn's content,
// its tool calls and its end-of-turn token; never the role header or any
// other role's tokens. docs/policy-model.md has the full text.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chat/messages.h"
#include "core/json.h"
#include "llm/tokenizer.h"

namespace kb::llm {

// Messages are lib/chat's chat::Message (read with chat::messageFromJson); a
// tool call's arguments are rendered verbatim.

struct ChatEncoding {
  std::vector<int32_t> ids;
  std::vector<uint8_t> loss_mask;  // 1 for assistant tokens, same length as ids
};

enum class ChatFamily { ChatML, Llama3, Mistral };

class ChatTemplate {
 public:
  // The default-constructed template is Qwen2.5-Instruct's ChatML (tests and
  // tools that render without a checkpoint); a checkpoint's own template
  // comes from fromCheckpoint().
  ChatFamily family = ChatFamily::ChatML;

  // ChatML: the system prompt used when the conversation has no system
  // message; std::nullopt leaves the system turn out (plain ChatML).
  std::optional<std::string> default_system =
      "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.";
  bool supports_tools = true;  // ChatML with the <tool_call> block

  // Llama 3 and Mistral: the text the template writes for bos_token /
  // eos_token (tokenizer_config.json).
  std::string bos_token, eos_token;
  // Llama 3.1+: the system turn with the knowledge and today's date.
  bool llama_date_header = false;
  std::string date_string = "26 Jul 2024";
  // Mistral v0.3 layout (see above); false: v0.1/v0.2.
  bool mistral_v3 = false;

  // Where the template came from (e.g. "qwen2-tiny/chat_template.jinja"), for messages.
  std::string source = "built-in ChatML (Qwen2.5)";
  // Set when the checkpoint's template could not be used: rendering then
  // throws kb::UsageError with this reason (token-id generation still works).
  std::optional<std::string> unavailable;

  // The checkpoint's template (`dir` a model directory, or a tokenizer.json
  // inside one). Never throws for a missing or unrecognised template: the
  // result is `unavailable` with the reason, so that a model without one can
  // still be loaded and sampled from token ids.
  static ChatTemplate fromCheckpoint(const std::filesystem::path& dir);
  // The family and its settings from a template's Jinja text and the
  // checkpoint's tokenizer_config.json; throws kb::UsageError naming `where`
  // when the template is of no family rendered here.
  static ChatTemplate fromJinja(const std::string& jinja, const Json& tokenizer_config, const std::string& where);

  std::string familyName() const;  // "chatml", "llama3", "mistral"
  // The token that ends an assistant turn: <|im_end|>, <|eot_id|>, or eos_token.
  std::string endOfTurn() const;

  // The conversation as text. `tools` is a JSON array of tool schemas (as in
  // the OpenAI API: {"type": "function", "function": {...}}) or null.
  std::string render(const std::vector<chat::Message>& messages, const Json& tools = nullptr,
                     bool add_generation_prompt = false) const;

  // Token ids and the loss mask. Each turn's pieces are tokenized on their
  // own (special tokens split out), so the mask boundary is exact.
  ChatEncoding encode(const Tokenizer& tokenizer, const std::vector<chat::Message>& messages,
                      const Json& tools = nullptr, bool add_generation_prompt = false) const;

  // The rendered pieces in order, each flagged 1 if it is assistant output.
  std::vector<std::pair<std::string, bool>> segments(const std::vector<chat::Message>& messages,
                                                     const Json& tools,
                                                     bool add_generation_prompt) const;

 private:
  std::vector<std::pair<std::string, bool>> chatmlSegments(const std::vector<chat::Message>& messages,
                                                           const Json& tools, bool add_generation_prompt) const;
  std::vector<std::pair<std::string, bool>> llama3Segments(const std::vector<chat::Message>& messages,
                                                           bool add_generation_prompt) const;
  std::vector<std::pair<std::string, bool>> mistralSegments(const std::vector<chat::Message>& messages,
                                                            bool add_generation_prompt) const;
};

// Splits generated assistant text into content and <tool_call> blocks
// ({"name": ..., "arguments": ...} inside each); a trailing end-of-turn
// token (<|im_end|>, <|eot_id|>, </s>) is dropped. A call's arguments are
// the value written as Python's json.dumps writes it (chat::pythonJsonDumps,
// so rendering the message again gives the text back). A block that is not
// valid JSON becomes a ToolCall with `error` set and the block's text as
// `arguments`; a call with a name always holds valid JSON arguments.
chat::Message parseAssistantMessage(std::string_view text);

// {"role", "content", "tool_calls": [{"type": "function", "function":
// {"name", "arguments" (the JSON value; the text when the call has no name),
// ["error"]}}]}: a parsed assistant message as kbpolicy generate prints it.
Json parsedMessageJson(const chat::Message& m);

}  // namespace kb::llm
