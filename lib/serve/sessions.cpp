#include "serve/sessions.h"

#include <chrono>

#include "agent/environment.h"
#include "agent/episode.h"
#include "agent/workspace.h"
#include "chat/messages.h"
#include "core/clock.h"
#include "reward/reward.h"
#include "serve/service.h"

namespace fs = std::filesystem;

namespace kb::serve {

struct Sessions::Session {
  std::string id;
  agent::RolloutSpec spec;
  agent::RolloutOptions rollout;
  std::unique_ptr<agent::Environment> env;
  std::unique_ptr<agent::Episode> episode;
  std::string device;
  std::mutex step_mu;  // one step at a time
  Clock::time_point last_used = Clock::now();
  int turns = 0;
  bool done = false;
  Json final_record = nullptr;
  Json last_info = Json::object();
};

Sessions::Sessions(Service& service, SessionOptions options) : service_(service), options_(std::move(options)) {
  // Sessions live in memory only: workspaces a killed server left behind
  // belong to no session now, and would hold their disk for ever.
  std::error_code ec;
  fs::remove_all(service_.options().state_dir / "sessions", ec);
}
Sessions::~Sessions() = default;

size_t Sessions::active() const {
  std::lock_guard lock(mu_);
  return sessions_.size();
}

void Sessions::expire() {
  std::vector<std::shared_ptr<Session>> gone;
  {
    std::lock_guard lock(mu_);
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      if (std::chrono::duration<double>(Clock::now() - it->second->last_used).count() > options_.idle_seconds) {
        gone.push_back(it->second);
        it = sessions_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& s : gone) {
    std::error_code ec;
    fs::remove_all(s->spec.workspace_dir, ec);
  }
}

Json Sessions::reset(const Json& body) {
  expire();
  if (!body.is_object() || !body.contains("task") || !body["task"].is_string())
    throw RequestError(400, "\"task\" (a task id) is required");
  auto task = service_.tasks().find(body["task"].get<std::string>());
  if (!task) throw RequestError(404, "no task \"" + body["task"].get<std::string>() + "\" in this server's store");
  std::string device = body.value("device", task->cuda ? "cuda" : "cpu");
  if (device != "cpu" && device != "cuda") throw RequestError(422, "\"device\" must be \"cpu\" or \"cuda\"");
  if (device == "cuda" && !service_.hasGpus()) throw RequestError(422, "this server has no GPU");
  std::string scheme = device == "cuda" ? "milestone" : "correctness";
  if (body.contains("reward")) {
    const Json& r = body["reward"];
    scheme = r.is_string() ? r.get<std::string>() : r.is_object() ? r.value("scheme", scheme) : "";
    if (!reward::parseSchemeName(scheme)) throw RequestError(422, "unknown reward scheme \"" + scheme + "\"");
  }
  // A slot is taken before the workspace is laid out and given back however
  // this ends: resets side by side cannot pass the limit between the check
  // and the insertion.
  {
    std::lock_guard lock(mu_);
    if (sessions_.size() + reserved_ >= options_.max_sessions)
      throw RetryLater(429, "the server holds " + std::to_string(sessions_.size() + reserved_) + " sessions, its limit", 30);
    ++reserved_;
  }
  struct SlotRelease {
    Sessions* self;
    ~SlotRelease() {
      std::lock_guard lock(self->mu_);
      --self->reserved_;
    }
  } slot{this};
  auto s = std::make_shared<Session>();
  s->id = randomId("se-");
  s->device = device;
  s->spec.task_id = task->id;
  s->spec.task_dir = task->dir;
  s->spec.workspace_dir = service_.options().state_dir / "sessions" / s->id;
  s->spec.guide = options_.guide;
  s->spec.interface_header = options_.interface_header;
  s->rollout.reward_scheme = scheme;
  s->rollout.tools = options_.tools;
  s->rollout.limits.max_turns = options_.max_turns;
  agent::EnvironmentOptions eo;
  eo.task_dir = task->dir;
  eo.task_id = task->id;
  eo.cuda = device == "cuda";
  eo.arch = service_.options().arch;
  eo.cpu_pool = service_.cpuPool();
  eo.gpu_pool = service_.gpuPool();
  eo.gpu_exclusive = [svc = &service_](const std::string& slot) -> std::shared_ptr<void> { return svc->exclusiveGpu(slot); };
  const profile::ProfileOptions po = serviceProfileOptions(service_.options());
  eo.profile_budget_seconds = po.budget_seconds;
  eo.compile_baseline = po.compile_baseline_mode;
  eo.build_compiled = po.build_compiled;
  eo.build_cache_dir = service_.options().build_cache;
  eo.scratch_dir = service_.options().state_dir / "scratch";
  eo.hidden_dirs = service_.hiddenDirs();
  eo.hide_private_dirs = service_.options().hide_state_from_workers;
  eo.workspace_limits = options_.workspace;
  s->env = agent::makeLibraryEnvironment(eo);
  agent::Workspace ws;
  try {
    ws = agent::Workspace::create(s->spec.workspace_dir, {task->dir, options_.guide, options_.interface_header});
  } catch (const UsageError& e) {
    throw RequestError(422, std::string("cannot lay out the workspace: ") + e.what());
  }
  s->episode = agent::makeWorkspaceEpisode(s->spec, ws, *s->env, s->rollout);
  Json messages = chat::messagesToJson(s->episode->prompt());
  Json tools = chat::toolsToJson(s->episode->tools());
  std::string prompt;
  for (const Json& m : messages) prompt += (prompt.empty() ? "" : "\n\n") + m.value("content", "");
  {
    std::lock_guard lock(mu_);
    sessions_[s->id] = s;
  }
  return {{"session_id", s->id},
          {"observation", {{"prompt", prompt}, {"messages", messages}, {"tools", tools}}},
          {"reward", nullptr},
          {"done", false},
          {"info", {{"task", task->id}, {"device", device}, {"reward_scheme", scheme}, {"max_turns", options_.max_turns}}}};
}

std::shared_ptr<Sessions::Session> Sessions::find(const std::string& id) {
  std::lock_guard lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) throw RequestError(404, "no session " + id + " (closed, expired or never made)");
  return it->second;
}

Json Sessions::step(const std::string& id, const Json& body) {
  std::shared_ptr<Session> s = find(id);
  if (!body.is_object() || !body.contains("tool_call") || !body["tool_call"].is_object() ||
      !body["tool_call"].contains("name") || !body["tool_call"]["name"].is_string())
    throw RequestError(400, "\"tool_call\": {\"name\": ..., \"arguments\": {...}} is required");
  std::lock_guard step_lock(s->step_mu);
  if (s->done) throw RequestError(409, "the session's episode is done; reset for a new one");
  s->last_used = Clock::now();
  const Json& tc = body["tool_call"];
  chat::ToolCall call;
  call.name = tc["name"].get<std::string>();
  call.id = "call_" + std::to_string(s->turns);
  const Json args = tc.contains("arguments") ? tc["arguments"] : Json::object();
  call.arguments = args.is_string() ? args.get<std::string>() : args.dump();
  agent::Observation obs = s->episode->call(call);
  ++s->turns;
  bool done = obs.finish || s->turns >= options_.max_turns;
  Json reward = nullptr, info = {{"turn", s->turns}, {"tool", call.name}};
  if (done) {
    Json record = {{"task_id", s->spec.task_id}};
    s->episode->judge(record, s->rollout);
    s->done = true;
    s->final_record = record;
    reward = record["reward"].value("value", Json(nullptr));
    info["end_reason"] = obs.finish ? "finish" : "max_turns";
    info["status"] = record.value("status", Json(nullptr));
    info["final"] = record.value("final", Json(nullptr));
    info["reward"] = record["reward"];
    if (record.contains("infra_error")) info["infra_error"] = record["infra_error"];
  }
  s->last_used = Clock::now();
  s->last_info = info;
  return {{"observation",
           {{"text", obs.text}, {"ok", obs.ok}, {"truncated", obs.truncated},
            {"error_kind", obs.error_kind.empty() ? Json(nullptr) : Json(obs.error_kind)}, {"detail", obs.detail}}},
          {"reward", reward},
          {"done", done},
          {"info", info}};
}

Json Sessions::state(const std::string& id) {
  std::shared_ptr<Session> s = find(id);
  std::lock_guard step_lock(s->step_mu);
  s->last_used = Clock::now();
  return {{"session_id", s->id},
          {"task", s->spec.task_id},
          {"device", s->device},
          {"reward_scheme", s->rollout.reward_scheme},
          {"turns", s->turns},
          {"max_turns", options_.max_turns},
          {"done", s->done},
          {"info", s->last_info}};
}

bool Sessions::close(const std::string& id) {
  std::shared_ptr<Session> s;
  {
    std::lock_guard lock(mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end()) return false;
    s = it->second;
    sessions_.erase(it);
  }
  std::lock_guard step_lock(s->step_mu);  // a step in flight ends first
  std::error_code ec;
  fs::remove_all(s->spec.workspace_dir, ec);
  return true;
}

}  // namespace kb::serve
