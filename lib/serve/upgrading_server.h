// cpp-httplib's server with one addition: a connection whose first request
// is `GET <path>` (kbserve's /ws, OpenEnv's WebSocket endpoint) is handed,
// unread, to an upgrade handler instead of the HTTP loop.
//
// Why a subclass: cpp-httplib 0.11 (Debian 12) has no WebSocket and no way
// for a handler to take its connection over. Its per-connection entry point,
// process_and_close_socket, is virtual (its SSLServer overrides it) and the
// request handling it calls, process_request, is protected. This class
// overrides the former; for HTTP it runs the library's own keep-alive loop
// (httplib.h 0.11's process_server_socket and SocketStream) over
// process_request, with the server's timeouts and keep-alive count. It is
// tied to 0.11's signatures: a newer cpp-httplib changes process_request.
#pragma once

#include <httplib.h>

#include <functional>
#include <string>

namespace kb::serve {

class UpgradingServer : public httplib::Server {
 public:
  // Takes the connection (its request not yet read) and closes it.
  using Upgrade = std::function<void(int fd)>;
  // Connections whose request line starts "GET <path> " or "GET <path>?"
  // go to `upgrade`. Call before listening.
  void setUpgrade(std::string path, Upgrade upgrade);

 private:
  bool process_and_close_socket(socket_t sock) override;
  bool serveHttp(socket_t sock);

  std::string upgrade_prefix_;  // "GET /ws"
  Upgrade upgrade_;
};

}  // namespace kb::serve
