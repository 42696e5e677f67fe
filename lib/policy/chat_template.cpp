#include "policy/chat_template.h"

#include <cmath>

#include "core/error.h"

namespace kb::policy {

namespace {

constexpr std::string_view kToolsHeader =
    "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>";
constexpr std::string_view kToolsFooter =
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments "
    "within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, "
    "\"arguments\": <args-json-object>}\n</tool_call>";

void dumpPython(const Json& v, std::string& out) {
  if (v.is_object()) {
    out += '{';
    bool first = true;
    for (const auto& [k, x] : v.items()) {
      if (!first) out += ", ";
      first = false;
      out += Json(k).dump(-1, ' ', false, Json::error_handler_t::replace);
      out += ": ";
      dumpPython(x, out);
    }
    out += '}';
  } else if (v.is_array()) {
    out += '[';
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) out += ", ";
      dumpPython(v[i], out);
    }
    out += ']';
  } else if (v.is_number_float()) {
    double d = v.get<double>();
    if (std::isnan(d)) out += "NaN";
    else if (std::isinf(d)) out += d > 0 ? "Infinity" : "-Infinity";
    else out += v.dump();
  } else {
    out += v.dump(-1, ' ', false, Json::error_handler_t::replace);
  }
}

std::string renderToolCall(const ToolCall& call) {
  std::string s = "<tool_call>\n{\"name\": \"" + call.name + "\", \"arguments\": ";
  s += call.arguments.is_string() ? call.arguments.get<std::string>() : pythonJsonDumps(call.arguments);
  return s + "}\n</tool_call>";
}

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

}  // namespace

std::string pythonJsonDumps(const Json& value) {
  std::string out;
  dumpPython(value, out);
  return out;
}

ChatMessage chatMessageFromJson(const Json& j) {
  if (!j.is_object()) throw Error("chat message is not a JSON object: " + j.dump());
  ChatMessage m;
  if (!j.contains("role") || !j["role"].is_string()) throw Error("chat message without a role: " + j.dump());
  m.role = j["role"].get<std::string>();
  if (m.role != "system" && m.role != "user" && m.role != "assistant" && m.role != "tool")
    throw Error("chat message role '" + m.role + "' is not system, user, assistant or tool");
  if (j.contains("content") && j["content"].is_string()) m.content = j["content"].get<std::string>();
  else if (j.contains("content") && !j["content"].is_null())
    throw Error("chat message content must be a string: " + j.dump());
  if (j.contains("tool_calls") && j["tool_calls"].is_array()) {
    for (const auto& tc : j["tool_calls"]) {
      const Json& f = tc.contains("function") ? tc["function"] : tc;
      ToolCall call;
      if (!f.contains("name") || !f["name"].is_string()) throw Error("tool call without a name: " + tc.dump());
      call.name = f["name"].get<std::string>();
      if (f.contains("arguments")) call.arguments = f["arguments"];
      m.tool_calls.push_back(std::move(call));
    }
  }
  return m;
}

Json chatMessageToJson(const ChatMessage& m) {
  Json j = {{"role", m.role}, {"content", m.content}};
  if (!m.tool_calls.empty()) {
    Json calls = Json::array();
    for (const auto& c : m.tool_calls) {
      Json f = {{"name", c.name}, {"arguments", c.arguments}};
      if (!c.error.empty()) f["error"] = c.error;
      calls.push_back({{"type", "function"}, {"function", f}});
    }
    j["tool_calls"] = calls;
  }
  return j;
}

std::vector<std::pair<std::string, bool>> ChatTemplate::segments(const std::vector<ChatMessage>& messages,
                                                                 const Json& tools,
                                                                 bool add_generation_prompt) const {
  std::vector<std::pair<std::string, bool>> out;
  auto emit = [&](std::string text, bool assistant) {
    if (text.empty()) return;
    if (!out.empty() && out.back().second == assistant) out.back().first += text;
    else out.emplace_back(std::move(text), assistant);
  };
  const bool has_tools = tools.is_array() && !tools.empty();
  const bool first_is_system = !messages.empty() && messages[0].role == "system";
  // System turn (with the tool list when there are tools).
  if (has_tools) {
    std::string s = "<|im_start|>system\n";
    s += first_is_system ? messages[0].content : default_system.value_or("");
    s += kToolsHeader;
    for (const auto& tool : tools) s += "\n" + pythonJsonDumps(tool);
    s += kToolsFooter;
    s += "<|im_end|>\n";
    emit(s, false);
  } else if (first_is_system) {
    emit("<|im_start|>system\n" + messages[0].content + "<|im_end|>\n", false);
  } else if (default_system) {
    emit("<|im_start|>system\n" + *default_system + "<|im_end|>\n", false);
  }
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (m.role == "system" && i == 0) continue;
    if (m.role == "user" || m.role == "system") {
      emit("<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n", false);
    } else if (m.role == "assistant") {
      // The header and the newline after <|im_end|> are not assistant output.
      emit("<|im_start|>assistant\n", false);
      std::string body = m.content;
      for (size_t k = 0; k < m.tool_calls.size(); ++k) {
        if (k > 0 || !m.content.empty()) body += "\n";
        body += renderToolCall(m.tool_calls[k]);
      }
      emit(body + "<|im_end|>", true);
      emit("\n", false);
    } else if (m.role == "tool") {
      std::string s;
      if (i == 0 || messages[i - 1].role != "tool") s += "<|im_start|>user";
      s += "\n<tool_response>\n" + m.content + "\n</tool_response>";
      if (i + 1 == messages.size() || messages[i + 1].role != "tool") s += "<|im_end|>\n";
      emit(s, false);
    } else {
      throw Error("chat message role '" + m.role + "' is not system, user, assistant or tool");
    }
  }
  if (add_generation_prompt) emit("<|im_start|>assistant\n", false);
  return out;
}

std::string ChatTemplate::render(const std::vector<ChatMessage>& messages, const Json& tools,
                                 bool add_generation_prompt) const {
  std::string text;
  for (const auto& [s, assistant] : segments(messages, tools, add_generation_prompt)) text += s;
  return text;
}

ChatEncoding ChatTemplate::encode(const Tokenizer& tokenizer, const std::vector<ChatMessage>& messages,
                                  const Json& tools, bool add_generation_prompt) const {
  ChatEncoding enc;
  for (const auto& [text, assistant] : segments(messages, tools, add_generation_prompt)) {
    std::vector<int32_t> ids = tokenizer.encode(text, /*add_special_tokens=*/false);
    enc.ids.insert(enc.ids.end(), ids.begin(), ids.end());
    enc.loss_mask.insert(enc.loss_mask.end(), ids.size(), assistant ? 1 : 0);
  }
  return enc;
}

ChatMessage parseAssistantMessage(std::string_view text) {
  ChatMessage m;
  m.role = "assistant";
  std::string_view rest = text;
  if (rest.size() >= 10 && rest.substr(rest.size() - 10) == "<|im_end|>") rest.remove_suffix(10);
  constexpr std::string_view open = "<tool_call>", close = "</tool_call>";
  size_t first = rest.find(open);
  m.content = std::string(rest.substr(0, first));
  if (first == std::string_view::npos) return m;
  while (!m.content.empty() && (m.content.back() == '\n' || m.content.back() == ' ')) m.content.pop_back();
  size_t pos = first;
  while (pos != std::string_view::npos) {
    size_t body = pos + open.size();
    size_t end = rest.find(close, body);
    std::string inner = trim(rest.substr(body, end == std::string_view::npos ? std::string_view::npos : end - body));
    ToolCall call;
    try {
      Json j = Json::parse(inner);
      if (!j.is_object() || !j.contains("name") || !j["name"].is_string()) {
        call.error = "tool call is not an object with a string \"name\"";
      } else {
        call.name = j["name"].get<std::string>();
        call.arguments = j.contains("arguments") ? j["arguments"] : Json::object();
      }
    } catch (const Json::exception& e) {
      call.error = std::string("tool call is not valid JSON: ") + e.what();
    }
    if (!call.error.empty()) call.arguments = inner;
    if (end == std::string_view::npos && call.error.empty()) call.error = "unterminated <tool_call>";
    m.tool_calls.push_back(std::move(call));
    if (end == std::string_view::npos) break;
    pos = rest.find(open, end + close.size());
  }
  return m;
}

}  // namespace kb::policy
