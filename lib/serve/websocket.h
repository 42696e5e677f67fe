// WebSocket connections (RFC 6455) for kbserve's /ws (docs/kbserve.md
// "Sessions over a WebSocket"), over Boost.Beast: the upgrade handshake, the
// bounds (connections, message size, idle time) and the message loop. The
// transport only; what a message means is the WebSocketConversation's.
//
// Each connection runs on the thread that hands it in (one of the HTTP
// server's pool), with an io_context of its own; each message is answered
// on a thread of its own while the connection keeps reading, so that the
// client's pings are answered during a step that takes minutes (OpenEnv's
// client closes a connection whose pong is 20 s late).
//
// Built only where Boost is found (lib/serve/meson.build); otherwise
// websocket_absent.cpp answers every upgrade 501.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace kb::serve {

struct WebSocketOptions {
  size_t max_connections = 32;          // open at once (each holds a thread); 503 beyond
  size_t max_message_bytes = 16 << 20;  // a message at most; beyond it the connection is closed (1009)
  double idle_seconds = 1800;           // no message while none is being answered: closed (1001)
  double handshake_seconds = 10;        // the upgrade request, and a close handshake, at most
  double ping_seconds = 60;             // a peer silent this long (pings unanswered) is gone
  size_t max_pending = 8;               // messages received before their answers, at most (1008 beyond)
};

// One connection's application side. answer() is called for one message at
// a time, in order, on a thread of its own; the object is destroyed once the
// connection has ended and no answer is running.
class WebSocketConversation {
 public:
  virtual ~WebSocketConversation() = default;
  struct Answer {
    std::string text;    // sent as a text message unless empty
    bool close = false;  // then the connection is closed (1000)
  };
  virtual Answer answer(const std::string& message) = 0;
};

// What an upgrade request carries that admission looks at.
struct UpgradeRequest {
  std::string target;         // "/ws?..."
  std::string authorization;  // the Authorization header, "" if none
};

// An upgrade answered with an HTTP error instead of the handshake.
struct UpgradeRefusal {
  int status = 400;
  std::string message;
  int retry_after_s = 0;  // > 0: a Retry-After header
};

class WebSocketServer {
 public:
  using Admit = std::function<std::optional<UpgradeRefusal>(const UpgradeRequest&)>;
  using Open = std::function<std::unique_ptr<WebSocketConversation>()>;

  WebSocketServer(WebSocketOptions options, Admit admit, Open open);
  ~WebSocketServer();

  // Whether this build serves WebSockets (false without Boost.Beast).
  static bool available();
  // Serves one connection, whose upgrade request is still unread; returns
  // when it has ended, and closes `fd`.
  void serve(int fd);
  // Closes every open connection (1001) and refuses new ones; returns at once.
  void stop();
  size_t open() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kb::serve
