// Multi-turn agent sessions over HTTP, shaped like OpenEnv (docs/kbserve.md
// "Sessions"): reset gives the task's prompt and the toolbox, step runs one
// tool call and gives its observation, the reward and whether the episode is
// done, close ends it. A session is kbrollout's task family
// (agent::makeWorkspaceEpisode) on its own workspace, with the same tools
// and observations; its compile / verify / profile stages take the service's
// CPU slots and GPU leases; `finish` (or the turn limit) runs the final
// check and gives the reward.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "agent/tools.h"
#include "core/json.h"

namespace kb::serve {

class Service;

struct SessionOptions {
  std::filesystem::path guide;             // docs/agent-guide.md
  std::filesystem::path interface_header;  // include/kb/solution.h
  size_t max_sessions = 64;
  double idle_seconds = 1800;              // a session untouched this long is closed
  int max_turns = 150;
  agent::ToolLimits tools;
  agent::WorkspaceLimits workspace;        // what a session's bash may leave (--session-disk-mib)
};

class Sessions {
 public:
  Sessions(Service& service, SessionOptions options);
  ~Sessions();

  // {"task", ["device"], ["reward"]} -> {"session_id", "observation": {"prompt",
  // "messages", "tools"}, "reward": null, "done": false}. Throws RequestError.
  Json reset(const Json& body);
  // {"tool_call": {"name", "arguments"}} -> {"observation": {...}, "reward",
  // "done", "info"}. Throws RequestError (404 unknown session, 409 done).
  Json step(const std::string& id, const Json& body);
  // {"session_id", "task", "device", "reward_scheme", "turns", "max_turns",
  // "done", "info"}: info is the last step's (the final check's once done).
  // Waits for a step in flight. Throws RequestError (404).
  Json state(const std::string& id);
  bool close(const std::string& id);
  size_t active() const;

 private:
  struct Session;
  void expire();
  std::shared_ptr<Session> find(const std::string& id);
  Service& service_;
  SessionOptions options_;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<Session>> sessions_;
  size_t reserved_ = 0;  // resets under way, counted against max_sessions
};

}  // namespace kb::serve
