#include "llm/chat_template.h"

#include <cmath>
#include <ctime>
#include <fstream>
#include <regex>
#include <sstream>

#include "core/error.h"
#include "core/json.h"

namespace kb::llm {

namespace {

constexpr std::string_view kToolsHeader =
    "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>";
constexpr std::string_view kToolsFooter =
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments "
    "within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, "
    "\"arguments\": <args-json-object>}\n</tool_call>";

std::string renderToolCall(const chat::ToolCall& call) {
  return "<tool_call>\n{\"name\": \"" + call.name + "\", \"arguments\": " + call.arguments + "}\n</tool_call>";
}

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

// Appends rendered text, merging neighbours of the same kind.
struct Emitter {
  std::vector<std::pair<std::string, bool>>& out;
  void operator()(std::string text, bool assistant) const {
    if (text.empty()) return;
    if (!out.empty() && out.back().second == assistant) out.back().first += text;
    else out.emplace_back(std::move(text), assistant);
  }
};

std::string readText(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw UsageError("cannot read " + p.string());
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A special token of tokenizer_config.json: a string or {"content": ...}.
std::string specialToken(const Json& config, const char* key) {
  if (!config.is_object() || !config.contains(key)) return "";
  const Json& v = config[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  return "";
}

// The few escapes a Jinja string literal of a template uses.
std::string unescapeJinja(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out += s[i];
      continue;
    }
    const char c = s[++i];
    out += c == 'n' ? '\n' : c == 't' ? '\t' : c;
  }
  return out;
}

// ChatML's default system prompt as the template writes it: `set
// default_system = '...'`, or a literal "<|im_start|>system\n...<|im_end|>"
// (Qwen2 and Qwen2.5 write it so); none: the template adds no system turn.
std::optional<std::string> chatmlDefaultSystem(const std::string& jinja) {
  std::smatch m;
  static const std::regex set_re(R"re(set\s+default_system\s*=\s*'([^']*)')re"),
      set_re2(R"re(set\s+default_system\s*=\s*"([^"]*)")re");
  if (std::regex_search(jinja, m, set_re) || std::regex_search(jinja, m, set_re2)) return unescapeJinja(m[1].str());
  const std::string open = "<|im_start|>system\\n", close = "<|im_end|>";
  for (size_t pos = jinja.find(open); pos != std::string::npos; pos = jinja.find(open, pos + 1)) {
    const size_t body = pos + open.size(), end = jinja.find(close, body);
    if (end == std::string::npos) break;
    const std::string text = jinja.substr(body, end - body);
    if (!text.empty() && text.find_first_of("'\"{}+") == std::string::npos) return unescapeJinja(text);
  }
  return std::nullopt;
}

std::string todayDate() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%d %b %Y", &tm);
  return buf;
}

}  // namespace

ChatTemplate ChatTemplate::fromJinja(const std::string& jinja, const Json& tokenizer_config, const std::string& where) {
  auto has = [&](std::string_view s) { return jinja.find(s) != std::string::npos; };
  ChatTemplate t;
  t.source = where;
  t.bos_token = specialToken(tokenizer_config, "bos_token");
  t.eos_token = specialToken(tokenizer_config, "eos_token");
  if (has("<|im_start|>")) {
    if (has("<think>") || has("reasoning_content"))
      throw UsageError(where + ": a ChatML template with thinking blocks (<think>, as Qwen3's) is not rendered here");
    t.family = ChatFamily::ChatML;
    t.default_system = chatmlDefaultSystem(jinja);
    t.supports_tools = has("<tool_call>") && has("You may call one or more functions to assist with the user query.");
    return t;
  }
  if (has("<|start_header_id|>")) {
    t.family = ChatFamily::Llama3;
    t.default_system.reset();
    t.supports_tools = false;
    t.llama_date_header = has("Cutting Knowledge Date");
    std::smatch m;
    static const std::regex date_re(R"(date_string\s*=\s*["']([^"']*)["'])");
    if (std::regex_search(jinja, m, date_re)) t.date_string = m[1].str();
    // Llama 3.2 asks for today's date (transformers' strftime_now).
    if (has("strftime_now")) t.date_string = todayDate();
    return t;
  }
  if (has("[INST]")) {
    if (has("<<SYS>>"))
      throw UsageError(where + ": a Llama 2 template ([INST] with <<SYS>>) is not rendered here");
    if (has("[SYSTEM_PROMPT]"))
      throw UsageError(where + ": this Mistral template layout ([SYSTEM_PROMPT], tekken) is not rendered here");
    t.family = ChatFamily::Mistral;
    t.default_system.reset();
    t.supports_tools = false;
    t.mistral_v3 = !(has("' [/INST]'") || has("\" [/INST]\""));
    if (t.eos_token.empty()) throw UsageError(where + ": a Mistral template needs tokenizer_config.json's eos_token");
    return t;
  }
  throw UsageError(where + ": unrecognised chat template (not ChatML <|im_start|>, Llama 3 <|start_header_id|> or "
                   "Mistral [INST]); refusing to render it in another format");
}

ChatTemplate ChatTemplate::fromCheckpoint(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::is_directory(path) ? path : path.parent_path();
  ChatTemplate t;
  t.source = dir.string();
  try {
    Json config = Json::object();
    if (fs::exists(dir / "tokenizer_config.json")) config = readJsonFile(dir / "tokenizer_config.json");
    std::string model_type;
    if (fs::exists(dir / "config.json")) {
      const Json c = readJsonFile(dir / "config.json");
      if (c.is_object() && c.contains("model_type") && c["model_type"].is_string()) model_type = c["model_type"];
    }
    std::string jinja, where;
    if (fs::exists(dir / "chat_template.jinja")) {
      jinja = readText(dir / "chat_template.jinja");
      where = (dir / "chat_template.jinja").string();
    } else if (config.is_object() && config.contains("chat_template")) {
      const Json& c = config["chat_template"];
      where = (dir / "tokenizer_config.json").string() + " chat_template";
      if (c.is_string()) {
        jinja = c.get<std::string>();
      } else if (c.is_array()) {  // named templates: [{"name": "default", "template": ...}, ...]
        for (const Json& named : c)
          if (named.is_object() && named.value("name", "") == "default" && named.contains("template") &&
              named["template"].is_string())
            jinja = named["template"].get<std::string>();
        if (jinja.empty()) throw UsageError(where + ": named chat templates without one named \"default\"");
      } else {
        throw UsageError(where + " is neither a string nor a list of named templates");
      }
    }
    if (jinja.empty())
      throw UsageError(dir.string() + " has no chat template (neither chat_template.jinja nor tokenizer_config.json's "
                       "\"chat_template\")" + (model_type.empty() ? "" : " for its " + model_type + " model") +
                       "; a base model has no chat format: add the template of the instruct model it comes from");
    return fromJinja(jinja, config, where);
  } catch (const Error& e) {
    t.unavailable = e.what();
    return t;
  } catch (const Json::exception& e) {
    t.unavailable = dir.string() + ": " + e.what();
    return t;
  }
}

std::string ChatTemplate::familyName() const {
  switch (family) {
    case ChatFamily::Llama3: return "llama3";
    case ChatFamily::Mistral: return "mistral";
    default: return "chatml";
  }
}

std::string ChatTemplate::endOfTurn() const {
  switch (family) {
    case ChatFamily::Llama3: return "<|eot_id|>";
    case ChatFamily::Mistral: return eos_token;
    default: return "<|im_end|>";
  }
}

// Llama 3: every turn "<|start_header_id|>{role}<|end_header_id|>\n\n{content|trim}<|eot_id|>";
// 3.1+ always opens with the system turn carrying the dates.
std::vector<std::pair<std::string, bool>> ChatTemplate::llama3Segments(const std::vector<chat::Message>& messages,
                                                                       bool add_generation_prompt) const {
  std::vector<std::pair<std::string, bool>> out;
  Emitter emit{out};
  size_t first = 0;
  if (llama_date_header) {
    const bool has_system = !messages.empty() && messages[0].role == "system";
    emit(bos_token + "<|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: " +
             date_string + "\n\n" + (has_system ? trim(messages[0].content) : std::string()) + "<|eot_id|>",
         false);
    first = has_system ? 1 : 0;
  } else if (!messages.empty()) {
    emit(bos_token, false);
  }
  for (size_t i = first; i < messages.size(); ++i) {
    const chat::Message& m = messages[i];
    const std::string header = "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n";
    if (m.role == "assistant") {
      emit(header, false);
      emit(trim(m.content) + "<|eot_id|>", true);
    } else {
      emit(header + trim(m.content) + "<|eot_id|>", false);
    }
  }
  if (add_generation_prompt) emit("<|start_header_id|>assistant<|end_header_id|>\n\n", false);
  return out;
}

// Mistral: user and assistant turns alternate after an optional system
// message. v0.1/v0.2: "[INST] {user} [/INST]" "{assistant}{eos}", no system.
// v0.3: "[INST] {user}[/INST]" " {assistant|trim}{eos}", the system message
// before the content of the last turn when that is the user's.
std::vector<std::pair<std::string, bool>> ChatTemplate::mistralSegments(const std::vector<chat::Message>& messages,
                                                                        bool add_generation_prompt) const {
  (void)add_generation_prompt;  // the prompt already ends with [/INST]
  std::vector<std::pair<std::string, bool>> out;
  Emitter emit{out};
  std::optional<std::string> system;
  size_t first = 0;
  if (!messages.empty() && messages[0].role == "system") {
    if (!mistral_v3)
      throw UsageError(source + ": this Mistral template has no system turn (only user and assistant roles)");
    system = messages[0].content;
    first = 1;
  }
  for (size_t i = first; i < messages.size(); ++i)
    if ((messages[i].role == "user") != ((i - first) % 2 == 0) ||
        (messages[i].role != "user" && messages[i].role != "assistant"))
      throw UsageError(source + ": after the optional system message, conversation roles must alternate "
                       "user/assistant/user/assistant/...");
  emit(bos_token, false);
  for (size_t i = first; i < messages.size(); ++i) {
    const chat::Message& m = messages[i];
    if (m.role == "user") {
      if (!mistral_v3) emit("[INST] " + m.content + " [/INST]", false);
      else if (i + 1 == messages.size() && system) emit("[INST] " + *system + "\n\n" + m.content + "[/INST]", false);
      else emit("[INST] " + m.content + "[/INST]", false);
    } else {
      emit((mistral_v3 ? " " + trim(m.content) : m.content) + eos_token, true);
    }
  }
  return out;
}

Json parsedMessageJson(const chat::Message& m) {
  Json j = {{"role", m.role}, {"content", m.content}};
  if (!m.tool_calls.empty()) {
    Json calls = Json::array();
    for (const auto& c : m.tool_calls) {
      Json f = {{"name", c.name}, {"arguments", c.name.empty() ? Json(c.arguments) : Json::parse(c.arguments)}};
      if (!c.error.empty()) f["error"] = c.error;
      calls.push_back({{"type", "function"}, {"function", f}});
    }
    j["tool_calls"] = calls;
  }
  return j;
}

std::vector<std::pair<std::string, bool>> ChatTemplate::segments(const std::vector<chat::Message>& messages,
                                                                 const Json& tools,
                                                                 bool add_generation_prompt) const {
  if (unavailable) throw UsageError(*unavailable);
  const bool has_tools = tools.is_array() && !tools.empty();
  if (family != ChatFamily::ChatML) {
    bool tool_turns = has_tools;
    for (const chat::Message& m : messages) tool_turns = tool_turns || m.role == "tool" || !m.tool_calls.empty();
    if (tool_turns)
      throw UsageError(source + ": tools and tool calls are not rendered for the " + familyName() +
                       " template (only ChatML's <tool_call> format is)");
  }
  if (family == ChatFamily::Llama3) return llama3Segments(messages, add_generation_prompt);
  if (family == ChatFamily::Mistral) return mistralSegments(messages, add_generation_prompt);
  return chatmlSegments(messages, tools, add_generation_prompt);
}

std::vector<std::pair<std::string, bool>> ChatTemplate::chatmlSegments(const std::vector<chat::Message>& messages,
                                                                       const Json& tools,
                                                                       bool add_generation_prompt) const {
  std::vector<std::pair<std::string, bool>> out;
  Emitter emit{out};
  const bool has_tools = tools.is_array() && !tools.empty();
  if (has_tools && !supports_tools)
    throw UsageError(source + ": this ChatML template has no tool block (<tool_call>); tools cannot be rendered");
  const bool first_is_system = !messages.empty() && messages[0].role == "system";
  // System turn (with the tool list when there are tools).
  if (has_tools) {
    std::string s = "<|im_start|>system\n";
    s += first_is_system ? messages[0].content : default_system.value_or("");
    s += kToolsHeader;
    for (const auto& tool : tools) s += "\n" + chat::pythonJsonDumps(tool);
    s += kToolsFooter;
    s += "<|im_end|>\n";
    emit(s, false);
  } else if (first_is_system) {
    emit("<|im_start|>system\n" + messages[0].content + "<|im_end|>\n", false);
  } else if (default_system) {
    emit("<|im_start|>system\n" + *default_system + "<|im_end|>\n", false);
  }
  for (size_t i = 0; i < messages.size(); ++i) {
    const chat::Message& m = messages[i];
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

std::string ChatTemplate::render(const std::vector<chat::Message>& messages, const Json& tools,
                                 bool add_generation_prompt) const {
  std::string text;
  for (const auto& [s, assistant] : segments(messages, tools, add_generation_prompt)) text += s;
  return text;
}

ChatEncoding ChatTemplate::encode(const Tokenizer& tokenizer, const std::vector<chat::Message>& messages,
                                  const Json& tools, bool add_generation_prompt) const {
  ChatEncoding enc;
  for (const auto& [text, assistant] : segments(messages, tools, add_generation_prompt)) {
    std::vector<int32_t> ids = tokenizer.encode(text, /*add_special_tokens=*/false);
    enc.ids.insert(enc.ids.end(), ids.begin(), ids.end());
    enc.loss_mask.insert(enc.loss_mask.end(), ids.size(), assistant ? 1 : 0);
  }
  return enc;
}

chat::Message parseAssistantMessage(std::string_view text) {
  chat::Message m;
  m.role = "assistant";
  std::string_view rest = text;
  for (std::string_view end : {std::string_view("<|im_end|>"), std::string_view("<|eot_id|>"), std::string_view("</s>")})
    if (rest.size() >= end.size() && rest.substr(rest.size() - end.size()) == end) {
      rest.remove_suffix(end.size());
      break;
    }
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
    chat::ToolCall call;
    try {
      // A model's text, or a client's (kbserve's reward endpoints): nesting
      // bounded before anything recurses over it (core/json.h).
      Json j = parseUntrustedJson(inner);
      if (j.is_discarded()) {
        call.error = "tool call is not valid JSON (or nests deeper than 64 levels)";
      } else if (!j.is_object() || !j.contains("name") || !j["name"].is_string()) {
        call.error = "tool call is not an object with a string \"name\"";
      } else {
        call.name = j["name"].get<std::string>();
        call.arguments = chat::pythonJsonDumps(j.contains("arguments") ? j["arguments"] : Json::object());
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

}  // namespace kb::llm
