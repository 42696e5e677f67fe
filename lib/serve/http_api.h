// kbserve's HTTP/JSON API (docs/kbserve.md) over cpp-httplib: routing,
// authentication, limits, JSON errors, Server-Sent Events, and the upgrade
// of `GET /ws` to OpenEnv's WebSocket protocol on the same port. Everything
// an endpoint does is the Service's (evaluations), the Sessions' (agents) or
// lib/serve/engine_rewards' (the engines' reward shapes); this file only
// moves requests and answers.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "serve/websocket.h"

namespace kb::serve {

class Service;
class Sessions;

struct HttpOptions {
  std::string token;                   // "": no authentication (loopback only)
  size_t max_body_bytes = 16 << 20;    // a request body at most (413 beyond)
  size_t threads = 128;                // connections served at once (wait=true holds one)
  double max_wait_seconds = 3600;      // ?wait=true&timeout_s= at most
  // The agent guide and the solution interface: the workspace a reward
  // request's response is applied to is laid out with them.
  std::filesystem::path guide, interface_header;
  // /ws: its connections are bounded below `threads`, so that they never
  // take every HTTP thread; its messages by max_body_bytes.
  WebSocketOptions websocket;
};

class HttpApi {
 public:
  HttpApi(Service& service, Sessions& sessions, HttpOptions options);
  ~HttpApi();
  // Binds `host`:`port` (0: any free port); returns the port. Throws kb::Error.
  int bind(const std::string& host, int port);
  // Serves until stop(); returns false when the listener failed.
  bool listen();
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Whether `host` is a loopback address (127.0.0.0/8, ::1, localhost).
bool isLoopback(const std::string& host);

}  // namespace kb::serve
