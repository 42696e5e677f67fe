// An OpenAI-compatible chat-completions client over libcurl, shared by the
// agent's policy endpoint (lib/agent, kbrollout) and the LLM composer
// (lib/synth, kbsynth compose --composer llm): one POST of a request body to
// {base_url}/chat/completions, the parse of a chat.completion reply (text,
// tool calls, usage, the token ids and log-probabilities that vLLM and
// SGLang can return), and a retrying complete() with exponential back-off on
// 429, 5xx, transport errors and unreadable bodies. docs/kbrollout.md
// ("Policy endpoint") and docs/kbsynth-synthesis.md (the LLM composer) say
// what each caller sends and reads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chat/messages.h"
#include "core/error.h"
#include "core/json.h"

namespace kb::chat {

struct Config {
  std::string base_url;  // e.g. http://127.0.0.1:8000/v1 (".../chat/completions" is appended)
  std::string model;
  std::string api_key;   // sent as "Authorization: Bearer"; empty: no header
  double timeout_seconds = 600.0;        // one request, connect to last byte
  double connect_timeout_seconds = 10.0;
  int max_attempts = 6;                  // requests per complete(), first included
  double backoff_initial_seconds = 1.0;  // doubled after each failure ...
  double backoff_max_seconds = 60.0;     // ... up to this, with +-25% jitter
  // Merged into every request body last by callers that build one (e.g.
  // {"return_token_ids": true} for vLLM); may override any field.
  Json extra_body = Json::object();
};

// One HTTP exchange.
struct HttpReply {
  bool transport_ok = true;    // false: no HTTP reply (connection, timeout, ...)
  bool timed_out = false;      // the request ran past timeout_seconds
  bool url_unusable = false;   // a URL curl cannot use (retrying will not help)
  std::string transport_error; // curl's message when !transport_ok
  long status = 0;             // HTTP status (0 without a reply)
  std::string body;            // at most 64 MiB
  double retry_after = -1;     // the Retry-After header in seconds, -1 when absent
};

// POSTs `body` (JSON text) to config.base_url + "/chat/completions", once.
HttpReply post(const Config& config, const std::string& body);

// parseCompletion() and complete() fill a Completion (messages.h): from the
// reply, content, has_content, reasoning, tool_calls, finish_reason, token
// ids, log-probabilities, usage, model, response_id; complete() adds
// seconds, attempts and retry_errors.

// A body that is not a chat completion (not JSON, an "error" object, no
// choices[0].message).
class BadReply : public Error {
 public:
  using Error::Error;
};

// Parses a chat.completion body. Throws BadReply.
Completion parseCompletion(const std::string& body);

// complete() gave up: after max_attempts, or at once when retrying cannot help
// (an HTTP status other than 429/5xx, a URL curl cannot use, a stop request).
class RequestError : public ServiceError {
 public:
  using ServiceError::ServiceError;
};

// POSTs `body` until a parsable chat completion comes back: retried on
// transport errors, timeouts, HTTP 429 (waiting Retry-After when given) and
// 5xx, and bodies that are not chat completions, with back-off. Throws
// RequestError. Thread-safe.
Completion complete(const Config& config, const std::string& body);

// A process-wide stop request (SIGINT/SIGTERM): requests in flight are
// abandoned and complete() stops retrying. Async-signal-safe to set.
void requestStop();
bool stopRequested();

// The first n characters of s, "..." after them when cut.
std::string snippet(const std::string& s, size_t n = 300);

}  // namespace kb::chat
