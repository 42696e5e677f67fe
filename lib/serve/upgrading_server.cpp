#include "serve/upgrading_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

namespace kb::serve {

namespace {

using Clock = std::chrono::steady_clock;

int millisecondsOf(time_t sec, time_t usec) { return static_cast<int>(sec * 1000 + usec / 1000); }

// poll() for one event, retried on EINTR: > 0 ready, 0 timed out, < 0 error.
int waitFor(int fd, short events, int timeout_ms) {
  pollfd p{fd, events, 0};
  for (;;) {
    int n = ::poll(&p, 1, timeout_ms);
    if (n < 0 && errno == EINTR) continue;
    if (n > 0 && (p.revents & (POLLERR | POLLNVAL))) return -1;
    return n;
  }
}

void addressOf(bool peer, int fd, std::string& ip, int& port) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  int rc = peer ? ::getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len)
                : ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  if (rc != 0) return;
  char text[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    auto* a = reinterpret_cast<sockaddr_in*>(&addr);
    ::inet_ntop(AF_INET, &a->sin_addr, text, sizeof text);
    port = ntohs(a->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&addr);
    ::inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof text);
    port = ntohs(a->sin6_port);
  }
  ip = text;
}

// httplib::Stream over a connected socket, as httplib 0.11's SocketStream:
// reads wait up to the read timeout and go through a 4 KiB buffer (the
// request parser reads a byte at a time); writes wait up to the write
// timeout and never raise SIGPIPE.
class SocketStream : public httplib::Stream {
 public:
  SocketStream(int fd, int read_timeout_ms, int write_timeout_ms)
      : fd_(fd), read_timeout_ms_(read_timeout_ms), write_timeout_ms_(write_timeout_ms) {}

  bool is_readable() const override { return off_ < end_ || waitFor(fd_, POLLIN, read_timeout_ms_) > 0; }
  bool is_writable() const override { return waitFor(fd_, POLLOUT, write_timeout_ms_) > 0 && alive(); }

  ssize_t read(char* ptr, size_t size) override {
    if (off_ < end_) {
      size_t n = std::min(size, end_ - off_);
      std::memcpy(ptr, buffer_.data() + off_, n);
      off_ += n;
      return static_cast<ssize_t>(n);
    }
    if (!is_readable()) return -1;
    if (size >= buffer_.size()) return receive(ptr, size);
    ssize_t n = receive(buffer_.data(), buffer_.size());
    if (n <= 0) return n;
    size_t take = std::min(size, static_cast<size_t>(n));
    std::memcpy(ptr, buffer_.data(), take);
    off_ = take;
    end_ = static_cast<size_t>(n);
    return static_cast<ssize_t>(take);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (!is_writable()) return -1;
    for (;;) {
      ssize_t n = ::send(fd_, ptr, size, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      return n;
    }
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override { addressOf(true, fd_, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { addressOf(false, fd_, ip, port); }
  socket_t socket() const override { return fd_; }

 private:
  ssize_t receive(char* ptr, size_t size) {
    for (;;) {
      ssize_t n = ::recv(fd_, ptr, size, 0);
      if (n < 0 && errno == EINTR) continue;
      return n;
    }
  }
  // The peer has not closed its side (httplib's is_socket_alive).
  bool alive() const {
    int ready = waitFor(fd_, POLLIN, 0);
    if (ready == 0) return true;
    if (ready < 0) return false;
    char byte;
    return ::recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
  }

  int fd_;
  int read_timeout_ms_, write_timeout_ms_;
  std::array<char, 4096> buffer_{};
  size_t off_ = 0, end_ = 0;
};

enum class FirstRequest { upgrade, http, none };

// Peeks (reads nothing) at the connection's first bytes, waiting up to
// `timeout_ms` for them: the upgrade path, anything else, or nothing at all.
FirstRequest peekFirstRequest(int fd, const std::string& prefix, int timeout_ms) {
  const size_t want = prefix.size() + 1;  // the path and the character after it
  std::string head(want, '\0');
  auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    ssize_t n = ::recv(fd, head.data(), want, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0) return FirstRequest::none;  // closed before a request
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return FirstRequest::none;
    if (n > 0) {
      size_t got = static_cast<size_t>(n);
      if (head.compare(0, std::min(got, prefix.size()), prefix, 0, std::min(got, prefix.size())) != 0) return FirstRequest::http;
      if (got == want) return head[prefix.size()] == ' ' || head[prefix.size()] == '?' ? FirstRequest::upgrade : FirstRequest::http;
    }
    int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count());
    if (left <= 0) return n > 0 ? FirstRequest::http : FirstRequest::none;
    if (n > 0) {
      // Part of the prefix is there (poll would say "readable" at once): wait a little for the rest.
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(left, 5)));
    } else if (waitFor(fd, POLLIN, left) <= 0) {
      return FirstRequest::none;
    }
  }
}

}  // namespace

void UpgradingServer::setUpgrade(std::string path, Upgrade upgrade) {
  upgrade_prefix_ = "GET " + path;
  upgrade_ = std::move(upgrade);
}

bool UpgradingServer::process_and_close_socket(socket_t sock) {
  FirstRequest first = FirstRequest::http;
  if (upgrade_) first = peekFirstRequest(sock, upgrade_prefix_, static_cast<int>(keep_alive_timeout_sec_ * 1000));
  if (first == FirstRequest::upgrade) {
    upgrade_(sock);
    return true;
  }
  bool ok = first == FirstRequest::http && serveHttp(sock);
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  return ok;
}

// httplib 0.11's process_server_socket: requests on one connection until the
// keep-alive count is spent, the client is idle past the keep-alive timeout,
// a request asks to close, or the server stops.
bool UpgradingServer::serveHttp(socket_t sock) {
  const int read_ms = millisecondsOf(read_timeout_sec_, read_timeout_usec_);
  const int write_ms = millisecondsOf(write_timeout_sec_, write_timeout_usec_);
  bool ok = false;
  for (size_t left = keep_alive_max_count_; left > 0 && svr_sock_ != INVALID_SOCKET; --left) {
    // Wait for the next request in short slices, so that a stopping server
    // does not wait out every idle keep-alive connection.
    bool ready = false;
    for (auto until = Clock::now() + std::chrono::seconds(keep_alive_timeout_sec_);
         !ready && svr_sock_ != INVALID_SOCKET && Clock::now() < until;) {
      int n = waitFor(sock, POLLIN, 100);
      if (n < 0) return ok;
      ready = n > 0;
    }
    if (!ready) break;
    SocketStream stream(sock, read_ms, write_ms);
    bool connection_closed = false;
    ok = process_request(stream, left == 1, connection_closed, nullptr);
    if (!ok || connection_closed) break;
  }
  return ok;
}

}  // namespace kb::serve
