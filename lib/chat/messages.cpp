#include "chat/messages.h"

#include <cmath>

namespace kb::chat {
namespace {

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

}  // namespace

std::string pythonJsonDumps(const Json& value) {
  std::string out;
  dumpPython(value, out);
  return out;
}

Json messageToJson(const Message& m) {
  Json j;
  j["role"] = m.role;
  if (m.role == "tool") j["tool_call_id"] = m.tool_call_id;
  j["content"] = m.content;
  if (!m.tool_calls.empty()) {
    Json calls = Json::array();
    for (const ToolCall& c : m.tool_calls)
      calls.push_back({{"id", c.id},
                       {"type", "function"},
                       {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
    j["tool_calls"] = calls;
  }
  return j;
}

Json messagesToJson(const std::vector<Message>& messages) {
  Json out = Json::array();
  for (const Message& m : messages) out.push_back(messageToJson(m));
  return out;
}

Message messageFromJson(const Json& j) {
  if (!j.is_object()) throw Error("chat message is not a JSON object: " + j.dump());
  Message m;
  if (!j.contains("role") || !j["role"].is_string()) throw Error("chat message without a role: " + j.dump());
  m.role = j["role"].get<std::string>();
  if (m.role != "system" && m.role != "user" && m.role != "assistant" && m.role != "tool")
    throw Error("chat message role '" + m.role + "' is not system, user, assistant or tool");
  if (j.contains("content") && j["content"].is_string()) m.content = j["content"].get<std::string>();
  else if (j.contains("content") && !j["content"].is_null())
    throw Error("chat message content must be a string: " + j.dump());
  if (auto id = j.find("tool_call_id"); id != j.end() && id->is_string()) m.tool_call_id = *id;
  if (j.contains("tool_calls") && j["tool_calls"].is_array()) {
    for (const auto& tc : j["tool_calls"]) {
      const Json& f = tc.contains("function") ? tc["function"] : tc;
      ToolCall call;
      if (!f.contains("name") || !f["name"].is_string()) throw Error("tool call without a name: " + tc.dump());
      call.name = f["name"].get<std::string>();
      if (auto id = tc.find("id"); id != tc.end() && id->is_string()) call.id = *id;
      const Json args = f.contains("arguments") ? f["arguments"] : Json::object();
      call.arguments = args.is_string() ? args.get<std::string>() : pythonJsonDumps(args);
      m.tool_calls.push_back(std::move(call));
    }
  }
  return m;
}

Json toolsToJson(const std::vector<ToolSpec>& tools) {
  Json arr = Json::array();
  for (const ToolSpec& t : tools)
    arr.push_back({{"type", "function"},
                   {"function", {{"name", t.name}, {"description", t.description}, {"parameters", t.parameters}}}});
  return arr;
}

Message assistantMessage(const Completion& c) {
  Message m;
  m.role = "assistant";
  m.content = c.content;
  m.tool_calls = c.tool_calls;
  return m;
}

}  // namespace kb::chat
