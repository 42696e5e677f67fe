// A real OpenAI-compatible HTTP server for the tests: bound to 127.0.0.1 on
// an ephemeral port, it answers POST /v1/chat/completions by replaying a
// script of turns, one step per request, and can inject failures.
//
// A script is a JSON array; each step is one of
//   {"content": "...", "tool_calls": [{"name": "...", "arguments": {...} | "raw text"}]}
//   {"status": 500, "body": "..."}          an HTTP error (also 429, with "retry_after")
//   {"raw": "..."}                          200 with this body verbatim (malformed)
//   {"close": true}                         close the connection without answering
// and any step may carry "delay_s": N (sleep first: a timeout to the client).
// After the script: 500 "script exhausted". {"per_conversation": [steps]}
// instead of an array picks the step by the number of assistant messages
// in the request, so that parallel conversations each replay the script.
// A normal reply carries usage, logprobs (when the request asks) with
// "token_id:N" tokens, choices[0].token_ids (when it asks return_token_ids)
// and prompt_token_ids; token ids are the bytes of content + arguments.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/json.h"
#include "http_server.h"

namespace kb::test {

class ScriptedServer {
 public:
  explicit ScriptedServer(Json script);
  ~ScriptedServer();
  ScriptedServer(const ScriptedServer&) = delete;
  ScriptedServer& operator=(const ScriptedServer&) = delete;

  int port() const { return http_->port(); }
  std::string baseUrl() const { return http_->url(); }
  // Every request body received (parsed; {"unparsable": text} if not JSON),
  // with "_path" (the request line) and "_authorization" added, in arrival order.
  std::vector<Json> requests() const;
  void stop() { http_->stop(); }

  // The token ids and log-probabilities a reply to `step` carries.
  static std::vector<int64_t> tokenIds(const Json& step);
  static double logprobOf(size_t i) { return -0.125 * static_cast<double>(i % 7); }

 private:
  HttpReply answer(const HttpRequest& req, size_t index) const;

  Json script_;
  std::unique_ptr<HttpServer> http_;  // the tests' shared server (tests/support)
};

}  // namespace kb::test
