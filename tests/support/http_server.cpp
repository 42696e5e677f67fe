#include "http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>

namespace kb::test {

namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool sendAll(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    ssize_t n = ::send(fd, s.data() + done, s.size() - done, MSG_NOSIGNAL);
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

HttpServer::HttpServer() : HttpServer(Handler{}) {}

HttpServer::HttpServer(Handler handler) : handler_(std::move(handler)) {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw std::runtime_error("test server: socket failed");
  int one = 1;
  ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);  // loopback only
  a.sin_port = 0;                              // ephemeral
  if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, 64) != 0)
    throw std::runtime_error(std::string("test server: bind/listen failed: ") + std::strerror(errno));
  socklen_t len = sizeof a;
  ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
  port_ = ntohs(a.sin_port);
  acceptor_ = std::thread([this] { acceptLoop(); });
}

HttpServer::~HttpServer() { stop(); }

void HttpServer::stop() {
  if (stop_.exchange(true)) return;
  if (acceptor_.joinable()) acceptor_.join();
  std::vector<std::thread> conns;
  {
    std::lock_guard<std::mutex> l(mu_);
    conns.swap(conns_);
  }
  for (auto& t : conns) t.join();
  if (fd_ >= 0) ::close(fd_);
}

void HttpServer::push(HttpReply r) {
  std::lock_guard<std::mutex> l(mu_);
  replies_.push_back(std::move(r));
}

void HttpServer::setDefault(HttpReply r) {
  std::lock_guard<std::mutex> l(mu_);
  default_ = std::move(r);
}

std::vector<HttpRequest> HttpServer::requests() const {
  std::lock_guard<std::mutex> l(mu_);
  return requests_;
}

void HttpServer::acceptLoop() {
  while (!stop_) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    std::lock_guard<std::mutex> l(mu_);
    if (conns_.size() > 1000) {  // bounded: a test never needs this many
      ::close(c);
      continue;
    }
    // One thread per connection: a delayed reply does not hold up the next request.
    conns_.emplace_back([this, c] {
      serve(c);
      ::close(c);
    });
  }
}

void HttpServer::serve(int c) {
  // The head, then Content-Length bytes of body (bounded in size and time).
  std::string data;
  char buf[65536];
  size_t head_end = std::string::npos, want = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!stop_ && std::chrono::steady_clock::now() < deadline && data.size() < (16u << 20)) {
    pollfd p{c, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    ssize_t n = ::recv(c, buf, sizeof buf, 0);
    if (n <= 0) return;
    data.append(buf, static_cast<size_t>(n));
    if (head_end == std::string::npos) {
      head_end = data.find("\r\n\r\n");
      if (head_end != std::string::npos) {
        std::string h = lower(data.substr(0, head_end));
        auto cl = h.find("content-length:");
        want = cl == std::string::npos ? 0 : std::stoul(h.substr(cl + 15));
      }
    }
    if (head_end != std::string::npos && data.size() >= head_end + 4 + want) break;
  }
  if (head_end == std::string::npos) return;
  HttpRequest req;
  std::string head = data.substr(0, head_end);
  req.line = head.substr(0, head.find("\r\n"));
  req.method = req.line.substr(0, req.line.find(' '));
  req.path = req.line.substr(req.line.find(' ') + 1);
  req.path = req.path.substr(0, req.path.find(' '));
  req.headers = head;
  req.body = data.substr(head_end + 4, want);
  if (size_t a = lower(head).find("\r\nauthorization:"); a != std::string::npos) {
    size_t e = head.find("\r\n", a + 2);
    req.authorization = head.substr(a + 16, e - a - 16);
    while (!req.authorization.empty() && req.authorization.front() == ' ') req.authorization.erase(0, 1);
  }
  HttpReply r;
  size_t index;
  {
    std::lock_guard<std::mutex> l(mu_);
    index = requests_.size();
    requests_.push_back(req);
    if (!handler_) {
      if (!replies_.empty()) {
        r = replies_.front();
        replies_.pop_front();
      } else {
        r = default_;
      }
    }
  }
  if (handler_) r = handler_(req, index);
  if (r.delay_s > 0) {
    auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(r.delay_s);
    while (!stop_ && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (r.hang_up) return;
  const char* reason = r.status == 200 ? "OK" : r.status == 429 ? "Too Many Requests" : "Error";
  sendAll(c, "HTTP/1.1 " + std::to_string(r.status) + " " + reason +
                 "\r\nContent-Type: application/json\r\nConnection: close\r\n" + r.headers +
                 "Content-Length: " + std::to_string(r.body.size()) + "\r\n\r\n" + r.body);
}

}  // namespace kb::test
