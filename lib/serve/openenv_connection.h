// OpenEnv's WebSocket protocol over kbserve's sessions (docs/kbserve.md
// "Sessions over a WebSocket"): the messages of openenv-core's EnvClient
// (`{"type": "reset"|"step"|"state"|"close", "data": ...}`) in, its answers
// (`{"type": "observation"|"state"|"error", "data": ...}`) out, with the
// action and observation shapes of OpenEnv's MCP tool environments
// (`call_tool` / `list_tools`; `tool_name`, `result`, `error`). One
// connection holds at most one session of Sessions, the same ones the HTTP
// endpoints serve: reset opens one (closing the previous), the connection's
// end closes it.
#pragma once

#include <string>

#include "core/json.h"
#include "serve/websocket.h"

namespace kb::serve {

class Sessions;

class OpenEnvConnection : public WebSocketConversation {
 public:
  explicit OpenEnvConnection(Sessions& sessions);
  ~OpenEnvConnection() override;  // closes the session
  // Never throws: a malformed message or a refused request is an error message.
  Answer answer(const std::string& message) override;

 private:
  Json reset(const Json& data);
  Json step(const Json& data);
  Json listTools() const;
  Json state();
  void closeSession();

  Sessions& sessions_;
  std::string session_id_;     // "" before the first reset
  Json tools_ = Json::array();  // the session's tools, OpenAI-style
  bool done_ = false;
};

}  // namespace kb::serve
