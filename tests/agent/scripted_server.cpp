#include "scripted_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <stdexcept>

namespace kb::test {

ScriptedServer::ScriptedServer(Json script) : script_(std::move(script)) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) throw std::runtime_error("socket failed");
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);  // loopback only
  addr.sin_port = 0;                              // ephemeral
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listen_fd_, 64) != 0)
    throw std::runtime_error(std::string("bind/listen failed: ") + std::strerror(errno));
  socklen_t len = sizeof addr;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { acceptLoop(); });
}

ScriptedServer::~ScriptedServer() { stop(); }

void ScriptedServer::stop() {
  if (stop_.exchange(true)) return;
  if (acceptor_.joinable()) acceptor_.join();
  std::vector<std::thread> conns;
  {
    std::lock_guard lock(mu_);
    conns.swap(conns_);
  }
  for (auto& t : conns) t.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

std::vector<Json> ScriptedServer::requests() const {
  std::lock_guard lock(mu_);
  return requests_;
}

void ScriptedServer::acceptLoop() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    std::lock_guard lock(mu_);
    if (conns_.size() > 1000) {  // bounded: a test never needs this many
      ::close(fd);
      continue;
    }
    conns_.emplace_back([this, fd] { handle(fd); });
  }
}

std::vector<int64_t> ScriptedServer::tokenIds(const Json& step) {
  std::string text = step.value("content", "");
  if (step.contains("tool_calls"))
    for (const Json& c : step["tool_calls"]) {
      const Json& a = c.contains("arguments") ? c["arguments"] : Json::object();
      text += a.is_string() ? a.get<std::string>() : a.dump();
    }
  std::vector<int64_t> ids;
  for (unsigned char ch : text) ids.push_back(ch);
  if (ids.empty()) ids.push_back(0);
  return ids;
}

namespace {

bool sendAll(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    ssize_t n = ::send(fd, s.data() + done, s.size() - done, MSG_NOSIGNAL);
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

std::string reply(int status, const std::string& body, const std::string& extra = "") {
  const char* reason = status == 200 ? "OK" : status == 429 ? "Too Many Requests" : "Error";
  return "HTTP/1.1 " + std::to_string(status) + " " + reason +
         "\r\nContent-Type: application/json\r\nConnection: close\r\n" + extra +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

}  // namespace

void ScriptedServer::handle(int fd) {
  // Read the head, then Content-Length bytes of body (bounded).
  std::string data;
  char buf[8192];
  size_t head_end = std::string::npos, need = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!stop_ && std::chrono::steady_clock::now() < deadline && data.size() < (16u << 20)) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    data.append(buf, static_cast<size_t>(n));
    if (head_end == std::string::npos) {
      head_end = data.find("\r\n\r\n");
      if (head_end != std::string::npos) {
        std::string head = data.substr(0, head_end);
        for (auto& c : head) c = static_cast<char>(std::tolower(c));
        size_t cl = head.find("content-length:");
        need = cl == std::string::npos ? 0 : std::stoul(head.substr(cl + 15));
      }
    }
    if (head_end != std::string::npos && data.size() >= head_end + 4 + need) break;
  }
  if (head_end == std::string::npos) {
    ::close(fd);
    return;
  }
  std::string head = data.substr(0, head_end);
  std::string body = data.substr(head_end + 4);
  std::string path = head.substr(0, head.find("\r\n"));
  std::string auth;
  {
    std::string lower = head;
    for (auto& c : lower) c = static_cast<char>(std::tolower(c));
    size_t a = lower.find("\r\nauthorization:");
    if (a != std::string::npos) {
      size_t e = head.find("\r\n", a + 2);
      auth = head.substr(a + 16, e - a - 16);
      while (!auth.empty() && auth.front() == ' ') auth.erase(0, 1);
    }
  }
  Json req;
  try {
    req = Json::parse(body);
  } catch (...) {
    req = {{"unparsable", body}};
  }
  req["_path"] = path;
  req["_authorization"] = auth;
  size_t index;
  {
    std::lock_guard lock(mu_);
    requests_.push_back(req);
    index = next_++;
  }
  if (index >= script_.size()) {
    sendAll(fd, reply(500, R"({"error":{"message":"script exhausted"}})"));
    ::close(fd);
    return;
  }
  const Json& step = script_[index];
  if (double d = step.value("delay_s", 0.0); d > 0) {
    auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(d);
    while (!stop_ && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (step.value("close", false)) {
    ::close(fd);
    return;
  }
  if (step.contains("raw")) {
    sendAll(fd, reply(200, step["raw"].get<std::string>()));
  } else if (step.contains("status")) {
    std::string extra;
    if (step.contains("retry_after"))
      extra = "Retry-After: " + std::to_string(step["retry_after"].get<int>()) + "\r\n";
    sendAll(fd, reply(step["status"].get<int>(), step.value("body", R"({"error":{"message":"injected"}})"), extra));
  } else {
    Json msg = {{"role", "assistant"}, {"content", step.value("content", "")}};
    if (step.contains("tool_calls")) {
      Json calls = Json::array();
      int n = 0;
      for (const Json& c : step["tool_calls"]) {
        const Json& a = c.contains("arguments") ? c["arguments"] : Json::object();
        calls.push_back({{"id", "call_" + std::to_string(index) + "_" + std::to_string(n++)},
                         {"type", "function"},
                         {"function", {{"name", c.value("name", "")},
                                       {"arguments", a.is_string() ? a.get<std::string>() : a.dump()}}}});
      }
      msg["tool_calls"] = calls;
    }
    std::vector<int64_t> ids = tokenIds(step);
    Json choice = {{"index", 0}, {"message", msg},
                   {"finish_reason", step.contains("tool_calls") ? "tool_calls" : "stop"}};
    if (req.value("logprobs", false)) {
      Json content = Json::array();
      for (size_t i = 0; i < ids.size(); ++i)
        content.push_back({{"token", "token_id:" + std::to_string(ids[i])}, {"logprob", logprobOf(i)}});
      choice["logprobs"] = {{"content", content}};
    }
    if (req.value("return_token_ids", false)) choice["token_ids"] = ids;
    Json resp = {{"id", "chatcmpl-" + std::to_string(index)},
                 {"object", "chat.completion"},
                 {"model", req.value("model", "")},
                 {"choices", Json::array({choice})},
                 {"usage", {{"prompt_tokens", body.size() / 4}, {"completion_tokens", ids.size()}}}};
    if (req.value("return_token_ids", false)) resp["prompt_token_ids"] = {1, 2, 3};
    sendAll(fd, reply(200, resp.dump()));
  }
  ::close(fd);
}

}  // namespace kb::test
