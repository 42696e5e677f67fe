#include "agent/client.h"

#include <cstdlib>

namespace kb::agent {
namespace {

std::string envOr(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

PolicyResponse fromCompletion(chat::Completion c) {
  PolicyResponse r;
  r.content = std::move(c.content);
  r.reasoning = std::move(c.reasoning);
  for (auto& t : c.tool_calls) r.tool_calls.push_back({std::move(t.id), std::move(t.name), std::move(t.arguments)});
  r.finish_reason = std::move(c.finish_reason);
  r.token_ids = std::move(c.token_ids);
  r.logprobs = std::move(c.logprobs);
  r.prompt_token_ids = std::move(c.prompt_token_ids);
  r.prompt_tokens = c.prompt_tokens;
  r.completion_tokens = c.completion_tokens;
  r.seconds = c.seconds;
  r.attempts = c.attempts;
  r.retry_errors = std::move(c.retry_errors);
  r.model = std::move(c.model);
  r.response_id = std::move(c.response_id);
  return r;
}

}  // namespace

void requestStop() { chat::requestStop(); }
bool stopRequested() { return chat::stopRequested(); }

Json PolicyResponse::assistantMessage() const {
  Json m;
  m["role"] = "assistant";
  m["content"] = content;
  if (!tool_calls.empty()) {
    Json calls = Json::array();
    for (const ToolCall& c : tool_calls)
      calls.push_back({{"id", c.id},
                       {"type", "function"},
                       {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
    m["tool_calls"] = calls;
  }
  return m;
}

ClientConfig configFromEnvironment(ClientConfig c) {
  if (c.base_url.empty()) c.base_url = envOr("OPENAI_BASE_URL");
  if (c.base_url.empty()) c.base_url = envOr("KB_POLICY_URL");
  if (c.api_key.empty()) c.api_key = envOr("OPENAI_API_KEY");
  if (c.model.empty()) c.model = envOr("KB_MODEL");
  if (c.model.empty()) c.model = envOr("OPENAI_MODEL");
  if (c.base_url.empty())
    throw UsageError("no policy endpoint: pass --policy URL or set OPENAI_BASE_URL");
  if (c.model.empty()) throw UsageError("no model name: pass --model NAME or set KB_MODEL");
  while (!c.base_url.empty() && c.base_url.back() == '/') c.base_url.pop_back();
  return c;
}

OpenAIClient::OpenAIClient(ClientConfig config) : config_(std::move(config)) {
  while (!config_.base_url.empty() && config_.base_url.back() == '/') config_.base_url.pop_back();
  if (config_.max_attempts < 1) config_.max_attempts = 1;
}

Json OpenAIClient::describe() const {
  return {{"kind", "openai"}, {"base_url", config_.base_url}, {"model", config_.model}};
}

Json OpenAIClient::requestBody(const std::vector<Json>& messages,
                               const std::vector<ToolSpec>& tools,
                               const SamplingParams& s) const {
  Json body;
  body["model"] = config_.model;
  body["messages"] = messages;
  if (!tools.empty()) {
    Json arr = Json::array();
    for (const ToolSpec& t : tools)
      arr.push_back({{"type", "function"},
                     {"function",
                      {{"name", t.name}, {"description", t.description}, {"parameters", t.parameters}}}});
    body["tools"] = arr;
    body["tool_choice"] = "auto";
  }
  body["temperature"] = s.temperature;
  body["top_p"] = s.top_p;
  body["max_tokens"] = s.max_tokens;
  if (s.seed) body["seed"] = *s.seed;
  if (s.logprobs) body["logprobs"] = true;
  body["stream"] = false;
  if (config_.extra_body.is_object())
    for (auto it = config_.extra_body.begin(); it != config_.extra_body.end(); ++it)
      body[it.key()] = it.value();
  return body;
}

PolicyResponse parseChatCompletion(const std::string& text) {
  try {
    return fromCompletion(chat::parseCompletion(text));
  } catch (const chat::BadReply& e) {
    throw PolicyError(e.what(), true);
  }
}

PolicyResponse OpenAIClient::complete(const std::vector<Json>& messages,
                                      const std::vector<ToolSpec>& tools,
                                      const SamplingParams& sampling) {
  const std::string body =
      requestBody(messages, tools, sampling).dump(-1, ' ', false, Json::error_handler_t::replace);
  try {
    return fromCompletion(chat::complete(config_, body));
  } catch (const chat::RequestError& e) {
    throw PolicyError(e.what(), e.retryable(), e.httpStatus());
  }
}

}  // namespace kb::agent
