// A small HTTP/1.1 server for the tests of HTTP clients (lib/chat through
// lib/agent and lib/synth): bound to 127.0.0.1 on an ephemeral port, a
// thread per connection, "Connection: close". Each request is answered by a
// handler, or, without one, by the next reply pushed onto a queue (then the
// default reply); a reply can be delayed (a client timeout) or be a hang-up
// without an answer. Every request is recorded.
#pragma once

#include <atomic>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace kb::test {

struct HttpRequest {
  std::string line;     // "POST /v1/chat/completions HTTP/1.1"
  std::string method, path;
  std::string headers;  // the head after the request line, as sent
  std::string authorization;  // the Authorization header's value ("" when none)
  std::string body;
};

struct HttpReply {
  HttpReply() = default;
  HttpReply(int status_, std::string body_, double delay_s_ = 0, bool hang_up_ = false)
      : status(status_), body(std::move(body_)), delay_s(delay_s_), hang_up(hang_up_) {}

  int status = 200;
  std::string body;
  double delay_s = 0;        // wait first (cut short when the server stops)
  bool hang_up = false;      // close the connection without answering
  std::string headers;       // extra header lines, each ending in "\r\n"
};

class HttpServer {
 public:
  // index: the request's position in arrival order, from 0.
  using Handler = std::function<HttpReply(const HttpRequest&, size_t index)>;

  HttpServer();  // answers from the queue (push, setDefault)
  explicit HttpServer(Handler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }
  void push(HttpReply r);
  // Served when the queue is empty (default: 500 "no scripted reply").
  void setDefault(HttpReply r);
  std::vector<HttpRequest> requests() const;
  // Stops accepting, ends delays, joins the connection threads.
  void stop();

 private:
  void acceptLoop();
  void serve(int fd);

  Handler handler_;
  int fd_ = -1, port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread acceptor_;
  mutable std::mutex mu_;
  std::vector<std::thread> conns_;
  std::deque<HttpReply> replies_;
  HttpReply default_{500, "{\"error\": \"no scripted reply\"}"};
  std::vector<HttpRequest> requests_;
};

}  // namespace kb::test
