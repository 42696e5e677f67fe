#include "serve/websocket.h"

#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

#include <chrono>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "core/json.h"

namespace kb::serve {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;
using Socket = websocket::stream<beast::tcp_stream>;

std::chrono::steady_clock::duration durationOf(double seconds) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
}

// Runs this thread's io_context until the operation `start` begins has
// completed: a synchronous Beast call whose timeout is the stream's. Handler
// by handler, not run(): an open WebSocket keeps a ping timer pending, so
// run() would not return.
template <typename Start>
beast::error_code runOne(asio::io_context& ioc, Start start) {
  beast::error_code result;
  bool done = false;
  start([&result, &done](beast::error_code ec, auto&&...) {
    result = ec;
    done = true;
  });
  ioc.restart();
  while (!done && ioc.run_one()) {
  }
  return done ? result : beast::error_code(asio::error::operation_aborted);
}

// One open connection's message loop, on its io_context's thread; only
// stop() is called from elsewhere (through post).
class Connection {
 public:
  Connection(asio::io_context& ioc, Socket& ws, WebSocketConversation& talk, const WebSocketOptions& options)
      : ioc_(ioc), ws_(ws), talk_(talk), options_(options), idle_(ioc) {}
  ~Connection() {
    if (worker_.joinable()) worker_.join();  // the answer running when the connection ended
  }

  void start() {
    armIdle();
    read();
  }
  void stop() { closeWith(websocket::close_code::going_away, "the server is stopping"); }

 private:
  // A read is always pending, even while a message is being answered: Beast
  // answers pings and sees the client's close only inside a read.
  void read() {
    ws_.async_read(in_, [this](beast::error_code ec, size_t) { onRead(ec); });
  }

  void onRead(beast::error_code ec) {
    if (ec) {
      // The close handshake ended, the client left, the socket broke, a
      // message was over the limit (Beast has sent 1009) or the peer stopped
      // answering pings: the connection is over. Beast may keep its ping
      // timer pending, so the loop is stopped rather than left to run dry.
      end();
      return;
    }
    std::string message = beast::buffers_to_string(in_.data());
    in_.consume(in_.size());
    if (in_.capacity() > (1u << 20)) in_.shrink_to_fit();  // one large message need not stay allocated
    if (!closing_) {
      if (pending_.size() >= options_.max_pending) {
        closeWith(websocket::close_code::policy_error, "too many messages before their answers");
      } else {
        pending_.push_back(std::move(message));
        idle_.cancel();
        if (!busy_) answerNext();
      }
    }
    read();
  }

  void answerNext() {
    busy_ = true;
    std::string message = std::move(pending_.front());
    pending_.pop_front();
    if (worker_.joinable()) worker_.join();  // the previous answer's thread, already done
    worker_ = std::thread([this, message = std::move(message)] {
      WebSocketConversation::Answer answer;
      try {
        answer = talk_.answer(message);
      } catch (...) {
        answer.close = true;  // the conversation promises not to throw; should it, end cleanly
      }
      asio::post(ioc_, [this, answer = std::move(answer)]() mutable { onAnswered(std::move(answer)); });
    });
  }

  void onAnswered(WebSocketConversation::Answer answer) {
    busy_ = false;
    if (gone_ || closing_) return;  // nothing may follow a close
    if (!answer.text.empty()) send(std::move(answer.text));
    if (answer.close) {
      closeWith(websocket::close_code::normal, "");
      return;
    }
    if (!pending_.empty()) answerNext();
    else armIdle();
  }

  void send(std::string text) {
    outbox_.push_back(std::move(text));
    if (!writing_) writeNext();
  }

  void writeNext() {
    if (outbox_.empty()) {
      writing_ = false;
      if (closing_ && !close_sent_) sendClose();
      return;
    }
    writing_ = true;
    writing_text_ = std::move(outbox_.front());
    outbox_.pop_front();
    ws_.text(true);
    ws_.async_write(asio::buffer(writing_text_), [this](beast::error_code ec, size_t) {
      if (ec) {
        writing_ = false;
        end();
        return;
      }
      writeNext();
    });
  }

  // A close after what is already queued is sent (one write at a time).
  void closeWith(websocket::close_code code, const std::string& reason) {
    if (closing_ || gone_) return;
    closing_ = true;
    close_reason_ = websocket::close_reason(code, reason);
    idle_.cancel();
    if (!writing_) sendClose();
  }

  void sendClose() {
    close_sent_ = true;
    // The pending read completes once the client's close arrives (or the
    // close handshake times out).
    ws_.async_close(close_reason_, [this](beast::error_code) { gone_ = true; });
  }

  void end() {
    gone_ = true;
    idle_.cancel();
    ioc_.stop();
  }

  void armIdle() {
    idle_.expires_after(durationOf(options_.idle_seconds));
    idle_.async_wait([this](beast::error_code ec) {
      if (!ec) closeWith(websocket::close_code::going_away, "idle: no message for " + std::to_string(static_cast<long>(options_.idle_seconds)) + " s");
    });
  }

  asio::io_context& ioc_;
  Socket& ws_;
  WebSocketConversation& talk_;
  const WebSocketOptions& options_;
  asio::steady_timer idle_;
  beast::flat_buffer in_;
  std::deque<std::string> pending_, outbox_;
  std::string writing_text_;
  std::thread worker_;
  websocket::close_reason close_reason_;
  bool busy_ = false, writing_ = false, closing_ = false, close_sent_ = false, gone_ = false;
};

void writeRefusal(asio::io_context& ioc, beast::tcp_stream& stream, unsigned version, const UpgradeRefusal& refusal,
                  double seconds) {
  http::response<http::string_body> res{static_cast<http::status>(refusal.status), version};
  res.set(http::field::server, "kbserve");
  res.set(http::field::content_type, "application/json");
  if (refusal.retry_after_s > 0) res.set(http::field::retry_after, std::to_string(refusal.retry_after_s));
  if (refusal.status == 401) res.set(http::field::www_authenticate, "Bearer");
  if (refusal.status == 426) res.set(http::field::upgrade, "websocket");
  res.body() = Json{{"error", refusal.message}, {"status_code", refusal.status}}.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
  res.keep_alive(false);
  res.prepare_payload();
  stream.expires_after(durationOf(seconds));
  runOne(ioc, [&](auto handler) { http::async_write(stream, res, handler); });
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
}

}  // namespace

struct WebSocketServer::Impl {
  WebSocketOptions options;
  Admit admit;
  Open open;
  mutable std::mutex mu;
  size_t serving = 0;  // connections in serve(), handshakes included
  bool stopping = false;
  std::map<Connection*, asio::io_context*> live;
};

WebSocketServer::WebSocketServer(WebSocketOptions options, Admit admit, Open open)
    : impl_(std::make_unique<Impl>()) {
  impl_->options = options;
  impl_->admit = std::move(admit);
  impl_->open = std::move(open);
}

WebSocketServer::~WebSocketServer() = default;

bool WebSocketServer::available() { return true; }

size_t WebSocketServer::open() const {
  std::lock_guard lock(impl_->mu);
  return impl_->serving;
}

void WebSocketServer::stop() {
  std::lock_guard lock(impl_->mu);
  impl_->stopping = true;
  for (auto [connection, ioc] : impl_->live) asio::post(*ioc, [connection] { connection->stop(); });
}

void WebSocketServer::serve(int fd) {
  Impl& m = *impl_;
  asio::io_context ioc(1);
  sockaddr_storage local{};
  socklen_t len = sizeof local;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len);
  tcp::socket socket(ioc);
  beast::error_code ec;
  socket.assign(local.ss_family == AF_INET6 ? tcp::v6() : tcp::v4(), fd, ec);
  if (ec) {
    ::close(fd);
    return;
  }
  beast::tcp_stream stream(std::move(socket));  // closes fd when it goes

  bool over_capacity = false, stopping = false;
  {
    std::lock_guard lock(m.mu);
    stopping = m.stopping;
    over_capacity = m.serving >= m.options.max_connections;
    ++m.serving;
  }
  // The slot is freed when serve() ends, or before a refusal is written:
  // a client that has read its refusal finds the slot free again.
  struct Release {
    Impl& m;
    bool held = true;
    void now() {
      if (!held) return;
      held = false;
      std::lock_guard lock(m.mu);
      --m.serving;
    }
    ~Release() { now(); }
  } release{m};
  if (stopping) return;

  // The upgrade request: bounded in time and size.
  beast::flat_buffer buffer;
  http::request_parser<http::empty_body> parser;
  parser.header_limit(16 * 1024);
  stream.expires_after(durationOf(m.options.handshake_seconds));
  if (runOne(ioc, [&](auto handler) { http::async_read(stream, buffer, parser, handler); })) return;
  stream.expires_never();
  const auto& request = parser.get();

  std::optional<UpgradeRefusal> refusal;
  UpgradeRequest seen{std::string(request.target()), std::string(request[http::field::authorization])};
  if (!(refusal = m.admit(seen))) {
    if (over_capacity)
      refusal = UpgradeRefusal{503, "the server holds " + std::to_string(m.options.max_connections) +
                                        " WebSocket connections, its limit (--ws-connections)", 5};
    else if (!websocket::is_upgrade(request))
      refusal = UpgradeRefusal{426, "GET /ws is OpenEnv's WebSocket endpoint: connect with a WebSocket client"};
  }
  if (refusal) {
    release.now();
    writeRefusal(ioc, stream, request.version(), *refusal, m.options.handshake_seconds);
    return;
  }

  Socket ws(std::move(stream));
  websocket::stream_base::timeout timeouts;
  timeouts.handshake_timeout = durationOf(m.options.handshake_seconds);
  timeouts.idle_timeout = durationOf(m.options.ping_seconds);  // a ping at half of it, closed at all of it
  timeouts.keep_alive_pings = true;
  ws.set_option(timeouts);
  ws.set_option(websocket::stream_base::decorator([](websocket::response_type& res) { res.set(http::field::server, "kbserve"); }));
  ws.read_message_max(m.options.max_message_bytes);
  if (runOne(ioc, [&](auto handler) { ws.async_accept(request, handler); })) return;

  std::unique_ptr<WebSocketConversation> talk = m.open();
  {
    Connection connection(ioc, ws, *talk, m.options);
    {
      std::lock_guard lock(m.mu);
      if (m.stopping) return;
      m.live[&connection] = &ioc;
    }
    connection.start();
    ioc.restart();
    ioc.run();
    std::lock_guard lock(m.mu);
    m.live.erase(&connection);
  }  // joins the answer still running, if any, before the conversation ends
}

}  // namespace kb::serve
