// kbserve's /ws (docs/kbserve.md "Sessions over a WebSocket") against a real
// server on loopback, with Boost.Beast's WebSocket client: the protocol's
// refusals (each an error message on a connection that goes on), the
// bounds (message size, connections, idle time, messages ahead of their
// answers), pings answered while a step runs, the session shared with the
// HTTP endpoints and closed with its connection, the upgrade's refusals and
// SIGTERM with a connection open. tests/pyserve/test_openenv.py drives the
// same endpoint with OpenEnv's own clients.
#include <gtest/gtest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>

#include <chrono>
#include <vector>

#include "server_process.h"

using kb::Json;
using kbtest::parse;
using kbtest::ServerProcess;
using kbtest::solutionSource;
namespace fs = std::filesystem;
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;

namespace {

const std::string kTask = "testdata/linear_relu";

fs::path freshState(const std::string& name) {
  fs::path p = fs::path(KB_TEST_WORK_DIR) / ("ws-" + name);
  fs::remove_all(p);
  return p / "state";
}

// One WebSocket connection to the server's /ws.
class WsClient {
 public:
  // Connects and upgrades (throws when the server refuses).
  explicit WsClient(int port, const std::string& token = "") {
    tcp::resolver resolver(ioc_);
    asio::connect(ws_.next_layer(), resolver.resolve("127.0.0.1", std::to_string(port)));
    if (!token.empty())
      ws_.set_option(websocket::stream_base::decorator(
          [token](websocket::request_type& req) { req.set(beast::http::field::authorization, "Bearer " + token); }));
    ws_.handshake(handshake_, "127.0.0.1:" + std::to_string(port), "/ws");
  }
  void send(const std::string& text, bool binary = false) {
    ws_.binary(binary);
    ws_.write(asio::buffer(text));
  }
  Json receive() {
    beast::flat_buffer buffer;
    ws_.read(buffer);
    return Json::parse(beast::buffers_to_string(buffer.data()));
  }
  Json roundTrip(const Json& message) {
    send(message.dump());
    return receive();
  }
  // Reads until the server closes; its close code (0 if the socket just broke).
  int closeCode() {
    try {
      for (;;) {
        beast::flat_buffer buffer;
        ws_.read(buffer);
      }
    } catch (const beast::system_error&) {
    }
    return static_cast<int>(ws_.reason().code);
  }
  websocket::stream<tcp::socket>& stream() { return ws_; }
  const websocket::response_type& handshake() const { return handshake_; }

 private:
  asio::io_context ioc_;
  websocket::stream<tcp::socket> ws_{ioc_};
  websocket::response_type handshake_;
};

Json reset(WsClient& ws) { return ws.roundTrip({{"type", "reset"}, {"data", {{"task", kTask}, {"reward", "correctness"}}}}); }

Json callTool(const std::string& name, Json arguments = Json::object()) {
  return {{"type", "step"}, {"data", {{"type", "call_tool"}, {"tool_name", name}, {"arguments", arguments}}}};
}

double metric(const ServerProcess& s, const std::string& name) {
  auto r = s.client().Get("/metrics");
  auto at = r->body.find("\n" + name + " ");
  return at == std::string::npos ? -1 : std::stod(r->body.substr(at + name.size() + 2));
}

// Waits (up to 10 s) for a gauge to reach `value`: the server acts on a
// closed connection soon, not at once.
bool settles(const ServerProcess& s, const std::string& name, double value) {
  for (int i = 0; i < 200 && metric(s, name) != value; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  return metric(s, name) == value;
}

// An upgrade request sent as plain HTTP: the answer of a refused one.
httplib::Result upgradeRequest(const ServerProcess& s, const std::string& token = "") {
  httplib::Headers headers = {{"Upgrade", "websocket"}, {"Connection", "Upgrade"},
                              {"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="}, {"Sec-WebSocket-Version", "13"}};
  if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
  return s.client(10).Get("/ws", headers);
}

std::string errorCode(const Json& answer) { return answer["type"] == "error" ? answer["data"].value("code", "") : "(not an error)"; }

}  // namespace

TEST(ServeWebSocket, AnEpisodeOnTheSessionsOfTheHttpApi) {
  ServerProcess s(freshState("episode"));
  WsClient ws(s.port());
  EXPECT_EQ(ws.handshake()[beast::http::field::server], "kbserve");
  Json first = reset(ws);
  ASSERT_EQ(first["type"], "observation") << first.dump();
  const Json& obs = first["data"]["observation"];
  EXPECT_EQ(obs["tool_name"], "reset");
  EXPECT_FALSE(obs["result"]["prompt"].get<std::string>().empty());
  EXPECT_FALSE(first["data"]["done"].get<bool>());
  std::string id = obs["metadata"]["session_id"];
  EXPECT_EQ(metric(s, "kbserve_websocket_connections"), 1);
  EXPECT_EQ(metric(s, "kbserve_sessions_active"), 1);

  Json tools = ws.roundTrip({{"type", "step"}, {"data", {{"type", "list_tools"}}}});
  ASSERT_TRUE(tools["data"]["observation"]["tools"].is_array()) << tools.dump();
  EXPECT_EQ(tools["data"]["observation"]["tools"][0].count("input_schema"), 1u);

  Json wrote = ws.roundTrip(callTool("write_file", {{"path", "solution/forward.cpp"}, {"content", solutionSource("ok_linear_relu")}}));
  EXPECT_TRUE(wrote["data"]["observation"]["error"].is_null()) << wrote.dump();
  // The HTTP step body is taken as step data too, on the same session.
  Json verified = ws.roundTrip({{"type", "step"}, {"data", {{"tool_call", {{"name", "verify"}, {"arguments", Json::object()}}}}}});
  EXPECT_EQ(verified["data"]["observation"]["result"]["detail"]["status"], "ok") << verified.dump();
  // The HTTP API sees the WebSocket's session.
  Json http_state = parse(s.client().Get(("/v1/sessions/" + id).c_str()));
  EXPECT_EQ(http_state["turns"], 2);
  EXPECT_EQ(http_state["task"], kTask);

  Json end = ws.roundTrip(callTool("finish"));
  EXPECT_TRUE(end["data"]["done"].get<bool>());
  EXPECT_EQ(end["data"]["reward"], 1.0);
  EXPECT_EQ(end["data"]["observation"]["metadata"]["info"]["status"], "ok");
  Json state = ws.roundTrip({{"type", "state"}});
  EXPECT_EQ(state["type"], "state");
  EXPECT_EQ(state["data"]["episode_id"], id);
  EXPECT_EQ(state["data"]["step_count"], 3);
  EXPECT_TRUE(state["data"]["done"].get<bool>());
  EXPECT_EQ(errorCode(ws.roundTrip(callTool("verify"))), "SESSION_ERROR");  // after done

  ws.send(Json{{"type", "close"}}.dump());
  EXPECT_EQ(ws.closeCode(), 1000);
  EXPECT_TRUE(settles(s, "kbserve_sessions_active", 0));
  EXPECT_TRUE(settles(s, "kbserve_websocket_connections", 0));
  EXPECT_EQ(s.client().Get(("/v1/sessions/" + id).c_str())->status, 404);
}

TEST(ServeWebSocket, AClientThatVanishesLeavesNothingOpen) {
  ServerProcess s(freshState("vanish"));
  {
    WsClient ws(s.port());
    ASSERT_EQ(reset(ws)["type"], "observation");
    ws.send(callTool("verify").dump());  // and gone before the answer, without a close frame
  }
  EXPECT_TRUE(settles(s, "kbserve_websocket_connections", 0));
  EXPECT_TRUE(settles(s, "kbserve_sessions_active", 0));
}

TEST(ServeWebSocket, MalformedMessagesGetErrorMessages) {
  ServerProcess s(freshState("malformed"));
  WsClient ws(s.port());
  auto code = [&](const std::string& text, bool binary = false) {
    ws.send(text, binary);
    Json answer = ws.receive();
    EXPECT_FALSE(answer["data"].value("message", "").empty()) << answer.dump();
    return errorCode(answer);
  };
  EXPECT_EQ(code("{not json"), "INVALID_JSON");
  EXPECT_EQ(code(""), "INVALID_JSON");
  EXPECT_EQ(code(std::string(200000, '[')), "INVALID_JSON");  // deep, unfinished nesting
  // Deep and complete: refused before it is parsed (core/json.h parseUntrustedJson).
  EXPECT_EQ(code(std::string(100000, '[') + std::string(100000, ']')), "INVALID_JSON");
  EXPECT_EQ(code(std::string(60, '[') + std::string(60, ']')), "VALIDATION_ERROR");  // nested, and not an object
  EXPECT_EQ(code("[1, 2]"), "VALIDATION_ERROR");
  EXPECT_EQ(code(R"({"data": {}})"), "VALIDATION_ERROR");
  EXPECT_EQ(code(R"({"type": 7})"), "VALIDATION_ERROR");
  EXPECT_EQ(code(R"({"type": "reset", "data": [1]})"), "VALIDATION_ERROR");
  EXPECT_EQ(code(R"({"type": "mcp", "data": {"jsonrpc": "2.0", "method": "tools/list"}})"), "UNKNOWN_TYPE");
  EXPECT_EQ(code(R"({"type": "step", "data": {"type": "call_tool", "tool_name": "verify"}})"), "SESSION_ERROR");  // before reset
  EXPECT_EQ(code(R"({"type": "reset", "data": {}})"), "VALIDATION_ERROR");  // no task
  EXPECT_EQ(code(R"({"type": "reset", "data": {"task": "no/such/task"}})"), "VALIDATION_ERROR");
  EXPECT_EQ(code(R"({"type": "reset", "data": {"task": "testdata/linear_relu", "reward": "best"}})"), "VALIDATION_ERROR");
  ASSERT_EQ(reset(ws)["type"], "observation");
  EXPECT_EQ(code(R"({"type": "step", "data": {"type": "call_tool"}})"), "VALIDATION_ERROR");  // no tool_name
  EXPECT_EQ(code(R"({"type": "step", "data": {"type": "teleport"}})"), "VALIDATION_ERROR");
  EXPECT_EQ(code(R"({"type": "step", "data": {"tool_call": 5}})"), "VALIDATION_ERROR");
  // A binary frame is read as text.
  EXPECT_EQ(code(R"({"type": "nope"})", true), "UNKNOWN_TYPE");
  // A refused tool call is an observation with a tool error, not a protocol error.
  Json refused = ws.roundTrip(callTool("write_file", {{"path", "../../escape"}, {"content", "x"}}));
  EXPECT_EQ(refused["type"], "observation");
  EXPECT_EQ(refused["data"]["observation"]["error"]["error_type"], "invalid_args") << refused.dump();
  // The connection went on through all of it.
  EXPECT_EQ(ws.roundTrip({{"type", "state"}})["data"]["step_count"], 1);
  EXPECT_EQ(s.client().Get("/healthz")->status, 200);
}

TEST(ServeWebSocket, TheSessionLimitIsCapacityReached) {
  ServerProcess s(freshState("capacity"), {"--max-sessions", "1"});
  WsClient first(s.port()), second(s.port());
  ASSERT_EQ(reset(first)["type"], "observation");
  Json refused = reset(second);
  EXPECT_EQ(errorCode(refused), "CAPACITY_REACHED") << refused.dump();
  EXPECT_EQ(refused["data"]["status_code"], 429);
  EXPECT_GT(refused["data"]["retry_after_s"].get<int>(), 0);
  // A new reset on the first connection replaces its session: still one.
  ASSERT_EQ(reset(first)["type"], "observation");
  first.send(Json{{"type", "close"}}.dump());
  EXPECT_EQ(first.closeCode(), 1000);
  ASSERT_TRUE(settles(s, "kbserve_sessions_active", 0));
  EXPECT_EQ(reset(second)["type"], "observation");
}

TEST(ServeWebSocket, AnOversizedOrNonUtf8MessageClosesItsConnectionAlone) {
  ServerProcess s(freshState("size"), {"--max-request-mib", "1"});
  WsClient ws(s.port());
  ASSERT_EQ(reset(ws)["type"], "observation");
  EXPECT_EQ(metric(s, "kbserve_sessions_active"), 1);
  try {
    ws.send(std::string((1 << 20) + 10, ' '));
  } catch (const beast::system_error&) {  // the server may close before the whole message is written
  }
  EXPECT_EQ(ws.closeCode(), 1009);  // too big
  EXPECT_TRUE(settles(s, "kbserve_sessions_active", 0));
  WsClient next(s.port());
  EXPECT_EQ(reset(next)["type"], "observation");
  next.send("{\"type\": \"state\", \"x\": \"\xff\xfe\"}");  // not UTF-8 in a text frame
  EXPECT_EQ(next.closeCode(), 1007);
  WsClient after(s.port());
  EXPECT_EQ(after.roundTrip({{"type", "state"}})["type"], "state");
}

TEST(ServeWebSocket, PingsAreAnsweredWhileAStepRuns) {
  ServerProcess s(freshState("ping"));
  WsClient ws(s.port());
  ASSERT_EQ(reset(ws)["type"], "observation");
  ws.roundTrip(callTool("write_file", {{"path", "solution/forward.cpp"}, {"content", solutionSource("ok_linear_relu")}}));
  std::vector<std::string> seen;
  ws.stream().control_callback([&](websocket::frame_type kind, beast::string_view) {
    if (kind == websocket::frame_type::pong) seen.push_back("pong");
  });
  ws.send(callTool("verify").dump());  // a worker process: about a second
  ws.stream().ping({});
  Json verified = ws.receive();
  seen.push_back("answer");
  EXPECT_EQ(verified["data"]["observation"]["result"]["detail"]["status"], "ok") << verified.dump();
  EXPECT_EQ(seen, (std::vector<std::string>{"pong", "answer"}));
}

TEST(ServeWebSocket, ConnectionsMustLeaveHttpThreads) {
  // Each connection holds one of --http-threads: all of them would starve HTTP.
  EXPECT_THROW(ServerProcess(freshState("bound-bad"), {"--ws-connections", "16", "--http-threads", "16"}), std::runtime_error);
}

TEST(ServeWebSocket, TheUpgradeIsRefusedAsHttp) {
  ServerProcess s(freshState("refusals"), {"--ws-connections", "1"});
  auto c = s.client();
  auto plain = c.Get("/ws");  // not an upgrade
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->status, 426);
  EXPECT_EQ(Json::parse(plain->body)["status_code"], 426);
  EXPECT_EQ(c.Get("/wsx")->status, 404);  // only /ws is taken over
  {
    WsClient first(s.port());
    auto second = upgradeRequest(s);
    ASSERT_TRUE(second);
    EXPECT_EQ(second->status, 503);  // --ws-connections 1
    EXPECT_EQ(second->get_header_value("Retry-After"), "5");
    EXPECT_EQ(Json::parse(second->body)["status_code"], 503);
    EXPECT_EQ(metric(s, "kbserve_websocket_connections"), 1);
    // HTTP goes on beside the connection (keep-alive: several requests on one).
    for (int i = 0; i < 5; ++i) EXPECT_EQ(c.Get("/healthz")->status, 200);
  }
  ASSERT_TRUE(settles(s, "kbserve_websocket_connections", 0));
  WsClient third(s.port());
  EXPECT_EQ(reset(third)["type"], "observation");
}

TEST(ServeWebSocket, TokenIsRequiredWhenSet) {
  fs::path state = freshState("token");
  fs::create_directories(state.parent_path());
  const std::string token = "0123456789abcdef-secret";
  std::ofstream(state.parent_path() / "token") << token << "\n";
  ServerProcess s(state, {"--token-file", (state.parent_path() / "token").string()});
  auto anonymous = upgradeRequest(s);
  ASSERT_TRUE(anonymous);
  EXPECT_EQ(anonymous->status, 401);
  EXPECT_EQ(anonymous->get_header_value("WWW-Authenticate"), "Bearer");
  EXPECT_EQ(upgradeRequest(s, "wrong-token-wrong-token")->status, 401);
  EXPECT_THROW(WsClient(s.port()), beast::system_error);
  WsClient right(s.port(), token);
  EXPECT_EQ(reset(right)["type"], "observation");
}

TEST(ServeWebSocket, IdleAndOverEagerConnectionsAreClosed) {
  ServerProcess s(freshState("idle"), {"--ws-idle-s", "1"});
  {
    WsClient ws(s.port());
    ASSERT_EQ(reset(ws)["type"], "observation");
    auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(ws.closeCode(), 1001);  // going away: idle
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10);
    EXPECT_TRUE(settles(s, "kbserve_sessions_active", 0));
  }
  {
    WsClient ws(s.port());
    ASSERT_EQ(reset(ws)["type"], "observation");
    // Twelve verifications sent before any answer: one runs, eight wait, then 1008.
    for (int i = 0; i < 12; ++i) ws.send(callTool("verify").dump());
    EXPECT_EQ(ws.closeCode(), 1008);
  }
  EXPECT_EQ(s.client().Get("/healthz")->status, 200);
}

TEST(ServeWebSocket, SigtermClosesOpenConnections) {
  ServerProcess s(freshState("sigterm"));
  WsClient ws(s.port());
  ASSERT_EQ(reset(ws)["type"], "observation");
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(s.terminate(30), 143) << s.log();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 15);
  EXPECT_EQ(ws.closeCode(), 1001);
}
