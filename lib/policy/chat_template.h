// The ChatML chat template (Qwen2 / Qwen2.5 and other <|im_start|> models)
// with Qwen-style tool calls, written out in C++ rather than run as Jinja.
//
// A conversation renders as (docs/policy-model.md has the full text):
//
//   <|im_start|>system\n{system}[tools block]<|im_end|>\n
//   <|im_start|>user\n{content}<|im_end|>\n
//   <|im_start|>assistant\n{content}[\n<tool_call>\n{"name": ..., "arguments": ...}\n</tool_call>]<|im_end|>\n
//   <|im_start|>user\n<tool_response>\n{tool output}\n</tool_response><|im_end|>\n
//   [<|im_start|>assistant\n]            <- add_generation_prompt
//
// which is what Qwen2.5-Instruct's template produces. The loss mask marks
// exactly the tokens the assistant produces: each assistant turn's content,
// its tool calls and its closing <|im_end|>; never the "<|im_start|>assistant\n"
// header, the newline after <|im_end|>, or any other role's tokens.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.h"
#include "policy/tokenizer.h"

namespace kb::policy {

struct ToolCall {
  std::string name;
  Json arguments = Json::object();  // a JSON value; a string is rendered verbatim
  std::string error;  // set by parseAssistantMessage when the call is not valid JSON
};

struct ChatMessage {
  std::string role;  // "system", "user", "assistant" or "tool"
  std::string content;
  std::vector<ToolCall> tool_calls;  // assistant only
};

// {"role": ..., "content": ..., "tool_calls": [{"function": {"name", "arguments"}}]}
// (OpenAI layout; "arguments" may be an object or a JSON string).
ChatMessage chatMessageFromJson(const Json& j);
Json chatMessageToJson(const ChatMessage& m);

struct ChatEncoding {
  std::vector<int32_t> ids;
  std::vector<uint8_t> loss_mask;  // 1 for assistant tokens, same length as ids
};

class ChatTemplate {
 public:
  // Qwen2.5's default system prompt, used when the conversation has no system
  // message; std::nullopt leaves the system turn out (plain ChatML).
  std::optional<std::string> default_system =
      "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.";

  // The conversation as text. `tools` is a JSON array of tool schemas (as in
  // the OpenAI API: {"type": "function", "function": {...}}) or null.
  std::string render(const std::vector<ChatMessage>& messages, const Json& tools = nullptr,
                     bool add_generation_prompt = false) const;

  // Token ids and the loss mask. Each turn's pieces are tokenized on their
  // own (special tokens split out), so the mask boundary is exact.
  ChatEncoding encode(const Tokenizer& tokenizer, const std::vector<ChatMessage>& messages,
                      const Json& tools = nullptr, bool add_generation_prompt = false) const;

  // The rendered pieces in order, each flagged 1 if it is assistant output.
  std::vector<std::pair<std::string, bool>> segments(const std::vector<ChatMessage>& messages,
                                                     const Json& tools,
                                                     bool add_generation_prompt) const;
};

// Splits generated assistant text into content and <tool_call> blocks
// ({"name": ..., "arguments": ...} inside each); a trailing <|im_end|> is
// dropped. A block that is not valid JSON becomes a ToolCall with `error` set.
ChatMessage parseAssistantMessage(std::string_view text);

// JSON as Python's json.dumps(value, ensure_ascii=False) writes it (", " and
// ": " separators), which is what the template's `tojson` produces.
std::string pythonJsonDumps(const Json& value);

}  // namespace kb::policy
