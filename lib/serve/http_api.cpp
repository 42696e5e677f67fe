#include "serve/http_api.h"

#include <httplib.h>
#include <openssl/crypto.h>

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "reward/reward.h"
#include "serve/engine_rewards.h"
#include "serve/openenv_connection.h"
#include "serve/request.h"
#include "serve/service.h"
#include "serve/sessions.h"
#include "serve/upgrading_server.h"

namespace kb::serve {

bool isLoopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

namespace {

constexpr size_t kMaxBatch = 256;  // evaluations in one POST /v1/batches

void sendJson(httplib::Response& res, int status, const Json& j) {
  res.status = status;
  res.set_content(j.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n", "application/json");
}

void sendError(httplib::Response& res, int status, const std::string& message) {
  sendJson(res, status, {{"error", message}, {"status_code", status}});
}

Json parseBody(const httplib::Request& req) {
  Json j = parseUntrustedJson(req.body);
  if (j.is_discarded()) throw RequestError(400, "the body is not valid JSON (or nests deeper than 64 levels)");
  return j;
}

bool flag(const httplib::Request& req, const std::string& name) {
  if (!req.has_param(name)) return false;
  std::string v = req.get_param_value(name);
  return v.empty() || v == "1" || v == "true" || v == "yes";
}

double number(const httplib::Request& req, const std::string& name, double fallback, double max) {
  if (!req.has_param(name)) return fallback;
  try {
    double v = std::stod(req.get_param_value(name));
    if (!(v >= 0)) throw RequestError(400, "?" + name + " must be a non-negative number");
    return std::min(v, max);
  } catch (const std::invalid_argument&) {
    throw RequestError(400, "?" + name + " must be a number");
  }
}

// OpenSSL's constant-time comparison: the token's prefix cannot be found by timing.
bool sameToken(const std::string& a, const std::string& b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

// Whether an Authorization header carries the server's token (any header
// when the server has none): HTTP requests and WebSocket upgrades alike.
bool authorized(const std::string& authorization, const std::string& token) {
  return token.empty() || (authorization.rfind("Bearer ", 0) == 0 && sameToken(authorization.substr(7), token));
}

}  // namespace

struct HttpApi::Impl {
  Service& service;
  Sessions& sessions;
  HttpOptions options;
  UpgradingServer server;
  WebSocketServer websockets;

  Impl(Service& s, Sessions& ss, HttpOptions o)
      : service(s),
        sessions(ss),
        options(std::move(o)),
        websockets(
            options.websocket,
            [token = options.token](const UpgradeRequest& req) -> std::optional<UpgradeRefusal> {
              if (authorized(req.authorization, token)) return std::nullopt;
              return UpgradeRefusal{401, "a bearer token is required (Authorization: Bearer TOKEN)"};
            },
            [&ss] { return std::make_unique<OpenEnvConnection>(ss); }) {}

  // Runs a handler; RequestError and other failures become JSON errors.
  template <typename F>
  httplib::Server::Handler wrap(F f) {
    return [this, f](const httplib::Request& req, httplib::Response& res) {
      try {
        f(req, res);
      } catch (const RetryLater& e) {
        res.set_header("Retry-After", std::to_string(e.retryAfter()));
        sendError(res, e.httpStatus(), e.what());
      } catch (const RequestError& e) {
        sendError(res, e.httpStatus(), e.what());
      } catch (const UsageError& e) {
        sendError(res, 422, e.what());
      } catch (const std::exception& e) {
        sendError(res, 500, std::string("internal error: ") + e.what());
      }
    };
  }

  void answerEvaluation(const httplib::Request& req, httplib::Response& res, Json ev, int status_if_new) {
    bool waiting = flag(req, "wait");
    // (wait answers nothing for an evaluation already dropped from the kept
    // results, --keep-results: the answer is then the one given at submission.)
    if (waiting && ev["state"] != "done" && ev["state"] != "cancelled")
      if (std::optional<Json> w = service.wait(ev["id"].get<std::string>(), number(req, "timeout_s", 600, options.max_wait_seconds)))
        ev = std::move(*w);
    bool finished = ev["state"] == "done" || ev["state"] == "cancelled";
    res.set_header("Location", "/v1/evaluations/" + ev["id"].get<std::string>());
    sendJson(res, finished ? 200 : status_if_new, ev);
  }

  void routes() {
    server.Get("/healthz", [](const httplib::Request&, httplib::Response& res) { sendJson(res, 200, {{"status", "ok"}}); });
    server.Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
      bool ok = service.ready();
      sendJson(res, ok ? 200 : 503, {{"status", ok ? "ready" : "not_ready"}});
    });
    server.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      std::string text = service.metricsText();
      text += "# HELP kbserve_sessions_active Agent sessions open.\n# TYPE kbserve_sessions_active gauge\n";
      text += "kbserve_sessions_active " + std::to_string(sessions.active()) + "\n";
      text += "# HELP kbserve_websocket_connections WebSocket connections open (/ws), handshakes included.\n"
              "# TYPE kbserve_websocket_connections gauge\n";
      text += "kbserve_websocket_connections " + std::to_string(websockets.open()) + "\n";
      res.set_content(text, "text/plain; version=0.0.4");
    });

    server.Get("/v1/tasks", wrap([this](const httplib::Request&, httplib::Response& res) {
      Json list = Json::array();
      for (const StoredTask& t : service.tasks().list())
        list.push_back({{"id", t.id}, {"device", t.cuda ? "cuda" : "cpu"}, {"content_hash", t.content_hash}});
      sendJson(res, 200, {{"tasks", list}});
    }));
    server.Post("/v1/tasks/reload", wrap([this](const httplib::Request&, httplib::Response& res) {
      size_t n = service.tasks().reload();
      sendJson(res, 200, {{"tasks", n}});
    }));
    server.Get(R"(/v1/tasks/(.+))", wrap([this](const httplib::Request& req, httplib::Response& res) {
      auto t = service.tasks().find(req.matches[1].str());
      if (!t) throw RequestError(404, "no task \"" + req.matches[1].str() + "\"");
      Json j = readJsonFile(t->dir / "task.json");
      sendJson(res, 200, {{"id", t->id}, {"device", t->cuda ? "cuda" : "cpu"}, {"content_hash", t->content_hash}, {"task", j}});
    }));

    server.Post("/v1/evaluations", wrap([this](const httplib::Request& req, httplib::Response& res) {
      EvaluationRequest rq = parseEvaluationRequest(parseBody(req), service.options().limits);
      Submitted s = service.submit(rq);
      if (s.existing) res.set_header("Idempotent-Replayed", "true");
      answerEvaluation(req, res, s.evaluation, s.existing ? 200 : 202);
    }));
    server.Get(R"(/v1/evaluations/([A-Za-z0-9-]+))", wrap([this](const httplib::Request& req, httplib::Response& res) {
      auto ev = service.get(req.matches[1].str());
      if (!ev) throw RequestError(404, "no evaluation " + req.matches[1].str());
      answerEvaluation(req, res, *ev, 200);
    }));
    auto cancel = wrap([this](const httplib::Request& req, httplib::Response& res) {
      auto ev = service.cancel(req.matches[1].str());
      if (!ev) throw RequestError(404, "no evaluation " + req.matches[1].str());
      sendJson(res, 200, *ev);
    });
    server.Post(R"(/v1/evaluations/([A-Za-z0-9-]+)/cancel)", cancel);
    server.Delete(R"(/v1/evaluations/([A-Za-z0-9-]+))", cancel);
    server.Get(R"(/v1/evaluations/([A-Za-z0-9-]+)/events)", wrap([this](const httplib::Request& req, httplib::Response& res) {
      std::string id = req.matches[1].str();
      if (!service.get(id)) throw RequestError(404, "no evaluation " + id);
      size_t from = 0;
      if (req.has_header("Last-Event-ID")) {
        try {
          from = std::stoul(req.get_header_value("Last-Event-ID")) + 1;
        } catch (const std::exception&) {
        }
      }
      auto next = std::make_shared<size_t>(from);
      res.set_header("Cache-Control", "no-cache");
      res.set_chunked_content_provider("text/event-stream", [this, id, next](size_t, httplib::DataSink& sink) {
        std::vector<Json> out;
        bool finished = false;
        if (!service.events(id, *next, 15.0, out, finished)) {
          sink.done();
          return true;
        }
        std::string chunk;
        for (const Json& e : out) {
          chunk += "id: " + std::to_string(e["seq"].get<size_t>()) + "\nevent: " + e["event"].get<std::string>() +
                   "\ndata: " + e["data"].dump() + "\n\n";
        }
        *next += out.size();
        if (chunk.empty()) chunk = ": keep-alive\n\n";  // a gone client shows as a failed write
        if (!sink.write(chunk.data(), chunk.size())) return false;
        if (finished) sink.done();
        return true;
      });
    }));
    server.Post("/v1/batches", wrap([this](const httplib::Request& req, httplib::Response& res) {
      Json body = parseBody(req);
      if (!body.is_object() || !body.contains("evaluations") || !body["evaluations"].is_array() || body["evaluations"].empty())
        throw RequestError(400, "{\"evaluations\": [request, ...]} is required");
      // Every request is checked before any is accepted: a batch is refused whole.
      // Bounded in count, idempotent replays included (each answers its
      // evaluation's whole JSON: a small request could ask for gigabytes).
      if (body["evaluations"].size() > kMaxBatch)
        throw RequestError(422, "a batch holds at most " + std::to_string(kMaxBatch) + " evaluations");
      std::vector<EvaluationRequest> rqs;
      for (const Json& e : body["evaluations"]) rqs.push_back(parseEvaluationRequest(e, service.options().limits));
      Json out = Json::array();
      for (const auto& rq : rqs) out.push_back(service.submit(rq).evaluation);
      if (flag(req, "wait")) {
        double timeout = number(req, "timeout_s", 600, options.max_wait_seconds);
        for (Json& ev : out)  // (nothing for one dropped from the kept results meanwhile: as submitted)
          if (std::optional<Json> w = service.wait(ev["id"].get<std::string>(), timeout)) ev = std::move(*w);
      }
      bool all = std::all_of(out.begin(), out.end(), [](const Json& e) { return e["state"] == "done" || e["state"] == "cancelled"; });
      sendJson(res, all ? 200 : 202, {{"evaluations", out}});
    }));

    server.Post("/v1/sessions", wrap([this](const httplib::Request& req, httplib::Response& res) {
      sendJson(res, 200, sessions.reset(parseBody(req)));
    }));
    server.Post(R"(/v1/sessions/([A-Za-z0-9-]+)/step)", wrap([this](const httplib::Request& req, httplib::Response& res) {
      sendJson(res, 200, sessions.step(req.matches[1].str(), parseBody(req)));
    }));
    server.Get(R"(/v1/sessions/([A-Za-z0-9-]+))", wrap([this](const httplib::Request& req, httplib::Response& res) {
      sendJson(res, 200, sessions.state(req.matches[1].str()));
    }));
    server.Delete(R"(/v1/sessions/([A-Za-z0-9-]+))", wrap([this](const httplib::Request& req, httplib::Response& res) {
      if (!sessions.close(req.matches[1].str())) throw RequestError(404, "no session " + req.matches[1].str());
      sendJson(res, 200, {{"closed", true}});
    }));

    server.Post("/v1/reward/openrlhf", wrap([this](const httplib::Request& req, httplib::Response& res) {
      sendJson(res, 200, openrlhfReward(service, parseBody(req), engineOptions(req)));
    }));
    server.Post("/v1/reward/slime", wrap([this](const httplib::Request& req, httplib::Response& res) {
      sendJson(res, 200, slimeReward(service, parseBody(req), engineOptions(req)));
    }));
  }

  EngineRewardOptions engineOptions(const httplib::Request& req) {
    EngineRewardOptions o = engine_defaults;
    if (req.has_param("scheme")) o.scheme = req.get_param_value("scheme");
    if (!o.scheme.empty() && !reward::parseSchemeName(o.scheme)) throw RequestError(422, "unknown reward scheme \"" + o.scheme + "\"");
    return o;
  }
  EngineRewardOptions engine_defaults;
};

HttpApi::HttpApi(Service& service, Sessions& sessions, HttpOptions options)
    : impl_(std::make_unique<Impl>(service, sessions, std::move(options))) {
  Impl& m = *impl_;
  size_t threads = std::max<size_t>(4, m.options.threads);
  m.server.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  m.server.set_payload_max_length(m.options.max_body_bytes);
  m.server.set_read_timeout(30, 0);
  m.server.set_write_timeout(30, 0);
  std::string token = m.options.token;
  m.server.set_pre_routing_handler([token](const httplib::Request& req, httplib::Response& res) {
    // No endpoint answers in parts: cpp-httplib would serve every range of a
    // Range header as a part of its own, outside any handler's try (a review
    // by attack, 2026-12-07: 300 ranges of a large answer ended the server).
    if (req.has_header("Range")) {
      sendError(res, 416, "this server does not answer Range requests");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (req.path == "/healthz" || req.path == "/readyz" || authorized(req.get_header_value("Authorization"), token))
      return httplib::Server::HandlerResponse::Unhandled;
    res.set_header("WWW-Authenticate", "Bearer");
    sendError(res, 401, "a bearer token is required (Authorization: Bearer TOKEN)");
    return httplib::Server::HandlerResponse::Handled;
  });
  m.server.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    // cpp-httplib caps form-encoded bodies (curl -d without a Content-Type)
    // at 8 KiB, far below the server's limit: say what to send instead.
    if (res.status == 413 && req.get_header_value("Content-Type").find("x-www-form-urlencoded") != std::string::npos)
      sendError(res, 413, "a form-encoded body is capped at 8 KiB: send JSON with Content-Type: application/json");
    else if (res.status == 413) sendError(res, 413, "the request body is over the server's limit");
    else if (res.status == 404) sendError(res, 404, "no such endpoint (see docs/kbserve.md)");
    else sendError(res, res.status, "request failed");
  });
  m.server.setUpgrade("/ws", [&m](int fd) { m.websockets.serve(fd); });
  m.engine_defaults.guide = m.options.guide;
  m.engine_defaults.interface_header = m.options.interface_header;
  m.routes();
}

HttpApi::~HttpApi() = default;

int HttpApi::bind(const std::string& host, int port) {
  std::string h = host == "[::1]" ? "::1" : host;
  if (port == 0) {
    int p = impl_->server.bind_to_any_port(h);
    if (p < 0) throw Error("cannot listen on " + host + ": no free port");
    return p;
  }
  if (!impl_->server.bind_to_port(h, port)) throw Error("cannot listen on " + host + ":" + std::to_string(port) + ": " + std::strerror(errno));
  return port;
}

bool HttpApi::listen() { return impl_->server.listen_after_bind(); }
void HttpApi::stop() {
  impl_->server.stop();       // no new connections
  impl_->websockets.stop();   // the open ones end, so that the thread pool can be joined
}

}  // namespace kb::serve
