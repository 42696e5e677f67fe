// WebSocketServer where Boost.Beast is not found (lib/serve/meson.build):
// every upgrade request is answered 501, so that a client learns why.
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "core/json.h"
#include "serve/websocket.h"

namespace kb::serve {

struct WebSocketServer::Impl {};

WebSocketServer::WebSocketServer(WebSocketOptions, Admit, Open) {}
WebSocketServer::~WebSocketServer() = default;
bool WebSocketServer::available() { return false; }
size_t WebSocketServer::open() const { return 0; }
void WebSocketServer::stop() {}

void WebSocketServer::serve(int fd) {
  std::string body = Json{{"error", "this kbserve was built without WebSocket support (Boost.Beast, Debian's libboost-dev)"},
                          {"status_code", 501}}.dump() + "\n";
  std::string head = "HTTP/1.1 501 Not Implemented\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " +
                     std::to_string(body.size()) + "\r\n\r\n";
  std::string answer = head + body;
  char request[16384];
  (void)::recv(fd, request, sizeof request, MSG_DONTWAIT);  // what has come of the request: unread, close would reset
  (void)::send(fd, answer.data(), answer.size(), MSG_NOSIGNAL);
  ::shutdown(fd, SHUT_RDWR);
  ::close(fd);
}

}  // namespace kb::serve
