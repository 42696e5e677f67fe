#include "agent/client.h"

#include <cstdlib>

namespace kb::agent {
namespace {

std::string envOr(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

}  // namespace

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

Json OpenAIClient::requestBody(const std::vector<chat::Message>& messages,
                               const std::vector<chat::ToolSpec>& tools,
                               const chat::SamplingParams& s) const {
  Json body;
  body["model"] = config_.model;
  body["messages"] = chat::messagesToJson(messages);
  if (!tools.empty()) {
    body["tools"] = chat::toolsToJson(tools);
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

chat::Completion parseChatCompletion(const std::string& text) {
  try {
    return chat::parseCompletion(text);
  } catch (const chat::BadReply& e) {
    throw chat::PolicyError(e.what(), true);
  }
}

chat::Completion OpenAIClient::complete(const std::vector<chat::Message>& messages,
                                        const std::vector<chat::ToolSpec>& tools,
                                        const chat::SamplingParams& sampling) {
  const std::string body =
      requestBody(messages, tools, sampling).dump(-1, ' ', false, Json::error_handler_t::replace);
  try {
    return chat::complete(config_, body);
  } catch (const chat::RequestError& e) {
    throw chat::PolicyError(e.what(), e.retryable(), e.httpStatus());
  }
}

}  // namespace kb::agent
