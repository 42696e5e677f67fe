#include "scripted_server.h"

namespace kb::test {

namespace {

Json parsed(const HttpRequest& r) {
  Json req;
  try {
    req = Json::parse(r.body);
  } catch (...) {
    req = {{"unparsable", r.body}};
  }
  return req;
}

}  // namespace

ScriptedServer::ScriptedServer(Json script) : script_(std::move(script)) {
  http_ = std::make_unique<HttpServer>([this](const HttpRequest& r, size_t i) { return answer(r, i); });
}

ScriptedServer::~ScriptedServer() { stop(); }

std::vector<Json> ScriptedServer::requests() const {
  std::vector<Json> out;
  for (const HttpRequest& r : http_->requests()) {
    Json req = parsed(r);
    req["_path"] = r.line;
    req["_authorization"] = r.authorization;
    out.push_back(std::move(req));
  }
  return out;
}

std::vector<int64_t> ScriptedServer::tokenIds(const Json& step) {
  std::string text = step.value("content", "");
  if (step.contains("tool_calls"))
    for (const Json& c : step["tool_calls"]) {
      const Json& a = c.contains("arguments") ? c["arguments"] : Json::object();
      text += a.is_string() ? a.get<std::string>() : a.dump();
    }
  std::vector<int64_t> ids;
  for (unsigned char ch : text) ids.push_back(ch);
  if (ids.empty()) ids.push_back(0);
  return ids;
}

HttpReply ScriptedServer::answer(const HttpRequest& r, size_t index) const {
  // {"per_conversation": [...]}: the step is the number of assistant turns
  // the request already carries, so parallel rollouts each get the whole
  // script in order (kbrollout -j N against one server).
  const Json* steps = &script_;
  if (script_.is_object() && script_.contains("per_conversation")) {
    steps = &script_["per_conversation"];
    Json body = parsed(r);
    index = 0;
    for (const Json& m : body.value("messages", Json::array()))
      if (m.value("role", "") == "assistant") ++index;
  }
  if (index >= steps->size()) return {500, R"({"error":{"message":"script exhausted"}})"};
  const Json& step = (*steps)[index];
  HttpReply out;
  out.delay_s = step.value("delay_s", 0.0);
  if (step.value("close", false)) {
    out.hang_up = true;
    return out;
  }
  if (step.contains("raw")) {
    out.body = step["raw"].get<std::string>();
    return out;
  }
  if (step.contains("status")) {
    out.status = step["status"].get<int>();
    out.body = step.value("body", R"({"error":{"message":"injected"}})");
    if (step.contains("retry_after"))
      out.headers = "Retry-After: " + std::to_string(step["retry_after"].get<int>()) + "\r\n";
    return out;
  }
  Json req = parsed(r);
  Json msg = {{"role", "assistant"}, {"content", step.value("content", "")}};
  if (step.contains("tool_calls")) {
    Json calls = Json::array();
    int n = 0;
    for (const Json& c : step["tool_calls"]) {
      const Json& a = c.contains("arguments") ? c["arguments"] : Json::object();
      calls.push_back({{"id", "call_" + std::to_string(index) + "_" + std::to_string(n++)},
                       {"type", "function"},
                       {"function", {{"name", c.value("name", "")},
                                     {"arguments", a.is_string() ? a.get<std::string>() : a.dump()}}}});
    }
    msg["tool_calls"] = calls;
  }
  std::vector<int64_t> ids = tokenIds(step);
  Json choice = {{"index", 0}, {"message", msg},
                 {"finish_reason", step.contains("tool_calls") ? "tool_calls" : "stop"}};
  if (req.value("logprobs", false)) {
    Json content = Json::array();
    for (size_t i = 0; i < ids.size(); ++i)
      content.push_back({{"token", "token_id:" + std::to_string(ids[i])}, {"logprob", logprobOf(i)}});
    choice["logprobs"] = {{"content", content}};
  }
  if (req.value("return_token_ids", false)) choice["token_ids"] = ids;
  Json resp = {{"id", "chatcmpl-" + std::to_string(index)},
               {"object", "chat.completion"},
               {"model", req.value("model", "")},
               {"choices", Json::array({choice})},
               {"usage", {{"prompt_tokens", r.body.size() / 4}, {"completion_tokens", ids.size()}}}};
  if (req.value("return_token_ids", false)) resp["prompt_token_ids"] = {1, 2, 3};
  out.body = resp.dump();
  return out;
}

}  // namespace kb::test
