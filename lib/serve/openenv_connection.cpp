#include "serve/openenv_connection.h"

#include <map>

#include "serve/request.h"
#include "serve/service.h"
#include "serve/sessions.h"

namespace kb::serve {

namespace {

// A refusal of one message, answered as OpenEnv's error message; the
// connection stays open.
struct ProtocolError {
  std::string code;  // OpenEnv's WSErrorCode
  int status;        // what the HTTP API would answer
  std::string message;
};

std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

Json errorMessage(const std::string& code, int status, const std::string& message, int retry_after_s = 0) {
  Json data = {{"message", message}, {"code", code}, {"status_code", status}};
  if (retry_after_s > 0) data["retry_after_s"] = retry_after_s;
  return {{"type", "error"}, {"data", data}};
}

// The toolbox's error_kind (lib/agent/tools.cpp) as OpenEnv's ToolErrorType;
// any other kind (io_error, sandbox_error, ...) is an execution error.
std::string toolErrorType(const std::string& kind) {
  static const std::map<std::string, std::string> types = {{"bad_arguments", "invalid_args"},
                                                           {"path_refused", "invalid_args"},
                                                           {"unknown_tool", "tool_not_found"},
                                                           {"timeout", "timeout"}};
  auto it = types.find(kind);
  return it == types.end() ? "execution_error" : it->second;
}

Json observationMessage(Json observation, Json reward, bool done) {
  return {{"type", "observation"}, {"data", {{"observation", std::move(observation)}, {"reward", std::move(reward)}, {"done", done}}}};
}

// A session's refusal (RequestError) under the code OpenEnv's client shows.
ProtocolError fromRequestError(const RequestError& e, bool opening) {
  int s = e.httpStatus();
  std::string code = s == 429 || s == 503 ? "CAPACITY_REACHED"
                     : (s == 404 || s == 409) && !opening ? "SESSION_ERROR"
                     : s == 500 ? "EXECUTION_ERROR"
                     : "VALIDATION_ERROR";
  return {code, s, e.what()};
}

}  // namespace

OpenEnvConnection::OpenEnvConnection(Sessions& sessions) : sessions_(sessions) {}

OpenEnvConnection::~OpenEnvConnection() { closeSession(); }

void OpenEnvConnection::closeSession() {
  if (!session_id_.empty()) sessions_.close(session_id_);
  session_id_.clear();
  tools_ = Json::array();
  done_ = false;
}

WebSocketConversation::Answer OpenEnvConnection::answer(const std::string& text) {
  Json message = parseUntrustedJson(text);
  if (message.is_discarded())
    return {dump(errorMessage("INVALID_JSON", 400, "the message is not valid JSON (or nests deeper than 64 levels)"))};
  std::string type = message.is_object() && message.contains("type") && message["type"].is_string() ? message["type"].get<std::string>() : "";
  bool opening = type == "reset";
  try {
    if (type.empty()) throw ProtocolError{"VALIDATION_ERROR", 400, "a message is a JSON object with a \"type\": reset, step, state or close"};
    Json data = message.value("data", Json::object());
    if (!data.is_object()) throw ProtocolError{"VALIDATION_ERROR", 400, "\"data\" must be a JSON object"};
    if (type == "reset") return {dump(reset(data))};
    if (type == "step") return {dump(step(data))};
    if (type == "state") return {dump(state())};
    if (type == "close") {
      closeSession();
      return {"", true};
    }
    throw ProtocolError{"UNKNOWN_TYPE", 400, "unknown message type \"" + type + "\": kbserve's /ws takes reset, step, state and close (no MCP JSON-RPC)"};
  } catch (const ProtocolError& e) {
    return {dump(errorMessage(e.code, e.status, e.message))};
  } catch (const RetryLater& e) {
    return {dump(errorMessage("CAPACITY_REACHED", e.httpStatus(), e.what(), e.retryAfter()))};
  } catch (const RequestError& e) {
    ProtocolError p = fromRequestError(e, opening);
    return {dump(errorMessage(p.code, p.status, p.message))};
  } catch (const UsageError& e) {
    return {dump(errorMessage("VALIDATION_ERROR", 422, e.what()))};
  } catch (const std::exception& e) {
    return {dump(errorMessage("EXECUTION_ERROR", 500, std::string("internal error: ") + e.what()))};
  }
}

Json OpenEnvConnection::reset(const Json& data) {
  closeSession();
  Json r = sessions_.reset(data);  // {"task", ["device"], ["reward"]}; OpenEnv's seed / episode_id are not used
  session_id_ = r["session_id"].get<std::string>();
  tools_ = r["observation"]["tools"];
  return observationMessage({{"tool_name", "reset"},
                             {"result", r["observation"]},
                             {"error", nullptr},
                             {"metadata", {{"session_id", session_id_}, {"info", r["info"]}}}},
                            nullptr, false);
}

Json OpenEnvConnection::step(const Json& data) {
  if (session_id_.empty()) throw ProtocolError{"SESSION_ERROR", 409, "no episode: send reset first"};
  // The action: OpenEnv's CallToolAction / ListToolsAction as their
  // model_dump() gives them, or the HTTP step body ({"tool_call": ...}).
  Json call;
  if (data.contains("tool_call")) {
    call = data["tool_call"];
  } else {
    std::string kind = data.value("type", "call_tool");
    if (kind == "list_tools") return listTools();
    if (kind != "call_tool") throw ProtocolError{"VALIDATION_ERROR", 400, "unknown action type \"" + kind + "\" (call_tool or list_tools)"};
    if (!data.contains("tool_name") || !data["tool_name"].is_string())
      throw ProtocolError{"VALIDATION_ERROR", 400, "a call_tool action needs \"tool_name\" (a string)"};
    call = {{"name", data["tool_name"]}, {"arguments", data.value("arguments", Json::object())}};
  }
  Json r = sessions_.step(session_id_, {{"tool_call", call}});
  const Json& obs = r["observation"];
  Json error = nullptr;
  if (!obs.value("ok", true)) {
    std::string kind = obs["error_kind"].is_string() ? obs["error_kind"].get<std::string>() : "";
    error = {{"error_type", toolErrorType(kind)}, {"message", obs.value("text", kind).substr(0, 4000)}};
  }
  done_ = r["done"].get<bool>();
  return observationMessage({{"tool_name", call["name"]},
                             {"result", obs},
                             {"error", error},
                             {"metadata", {{"session_id", session_id_}, {"info", r["info"]}}}},
                            r["reward"], done_);
}

Json OpenEnvConnection::listTools() const {
  Json tools = Json::array();
  for (const Json& t : tools_) {
    const Json& f = t.contains("function") ? t["function"] : t;
    tools.push_back({{"name", f.value("name", "")},
                     {"description", f.value("description", "")},
                     {"input_schema", f.value("parameters", Json::object())}});
  }
  return observationMessage({{"tools", tools}, {"metadata", {{"session_id", session_id_}}}}, nullptr, done_);
}

Json OpenEnvConnection::state() {
  Json data = {{"episode_id", nullptr}, {"step_count", 0}};
  if (!session_id_.empty()) {
    Json s = sessions_.state(session_id_);
    data = {{"episode_id", session_id_}, {"step_count", s["turns"]}};
    for (auto& [k, v] : s.items()) data[k] = v;
  }
  return {{"type", "state"}, {"data", data}};
}

}  // namespace kb::serve
