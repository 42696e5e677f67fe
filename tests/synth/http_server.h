// A small HTTP/1.1 server for tests: listens on 127.0.0.1 (an ephemeral
// port), answers each request with the next scripted reply (status and body,
// after an optional delay, or by closing the connection without a reply) and
// records every request it got. A thread per connection; "Connection: close".
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace kbtest {

struct Reply {
  int status = 200;
  std::string body;
  int delay_ms = 0;
  bool hang_up = false;  // close the connection without answering
};

struct Request {
  std::string method, path, headers, body;
};

class HttpServer {
 public:
  HttpServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, 16) != 0)
      throw std::runtime_error("test server: bind/listen failed");
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { loop(); });
  }
  ~HttpServer() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }
  void push(Reply r) {
    std::lock_guard<std::mutex> l(mu_);
    replies_.push_back(std::move(r));
  }
  // Served when the script is empty.
  void setDefault(Reply r) {
    std::lock_guard<std::mutex> l(mu_);
    default_ = std::move(r);
  }
  std::vector<Request> requests() {
    std::lock_guard<std::mutex> l(mu_);
    return requests_;
  }

 private:
  void loop() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) continue;
      // One thread per connection: a slow (delayed) reply does not hold up the next request.
      workers_.emplace_back([this, c] {
        serve(c);
        ::close(c);
      });
    }
    for (auto& w : workers_) w.join();
  }
  void serve(int c) {
    std::string data;
    char buf[65536];
    size_t header_end = std::string::npos, want = 0;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{c, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      ssize_t n = ::recv(c, buf, sizeof buf, 0);
      if (n <= 0) return;
      data.append(buf, static_cast<size_t>(n));
      if (header_end == std::string::npos) {
        header_end = data.find("\r\n\r\n");
        if (header_end != std::string::npos) {
          std::string h = data.substr(0, header_end);
          for (auto& ch : h) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
          auto cl = h.find("content-length:");
          want = cl == std::string::npos ? 0 : std::stoul(h.substr(cl + 15));
        }
      }
      if (header_end != std::string::npos && data.size() >= header_end + 4 + want) break;
    }
    if (header_end == std::string::npos) return;
    Request req;
    std::string first = data.substr(0, data.find("\r\n"));
    req.method = first.substr(0, first.find(' '));
    req.path = first.substr(first.find(' ') + 1);
    req.path = req.path.substr(0, req.path.find(' '));
    req.headers = data.substr(0, header_end);
    req.body = data.substr(header_end + 4, want);
    Reply r;
    {
      std::lock_guard<std::mutex> l(mu_);
      requests_.push_back(req);
      if (!replies_.empty()) {
        r = replies_.front();
        replies_.pop_front();
      } else {
        r = default_;
      }
    }
    if (r.delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(r.delay_ms));
    if (r.hang_up) return;
    std::string out = "HTTP/1.1 " + std::to_string(r.status) + " X\r\nContent-Type: application/json\r\nContent-Length: " +
                      std::to_string(r.body.size()) + "\r\nConnection: close\r\n\r\n" + r.body;
    size_t sent = 0;
    while (sent < out.size()) {
      ssize_t n = ::send(c, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return;
      sent += static_cast<size_t>(n);
    }
  }

  int fd_ = -1, port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::deque<Reply> replies_;
  Reply default_{500, "{\"error\": \"no scripted reply\"}", 0, false};
  std::vector<Request> requests_;
};

}  // namespace kbtest
