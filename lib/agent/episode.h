// The one rollout loop (runEpisode) and what it asks of a task family.
// A task family says what the policy is shown, what a tool call or a reply
// without one does, and how the finished episode is judged; the loop owns
// everything else: turns, budgets, context elision, policy errors, stop
// requests and the trajectory record (docs/trajectory-format.md). kbrollout's
// tasks (runRollout: a workspace, its tools, the final check) and kbtrain's
// toy family (lib/toy/episode.h: one answer, no tools) are two families
// run by this loop.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/rollout.h"
#include "agent/tools.h"
#include "agent/workspace.h"
#include "chat/messages.h"
#include "core/json.h"

namespace kb::agent {

class Episode {
 public:
  virtual ~Episode() = default;
  // The conversation's start: the system and the task message.
  virtual std::vector<chat::Message> prompt() = 0;
  virtual std::vector<chat::ToolSpec> tools() = 0;
  virtual Observation call(const chat::ToolCall& call) = 0;
  // A reply without a tool call: the nudge the loop sends back, or nullopt
  // when such a reply is the episode's answer (it ends the episode with
  // reason "finish").
  virtual std::optional<std::string> replyWithoutTools(const chat::Completion& reply) = 0;
  // After the last turn: fills the record's solution_hash, status, timings,
  // final and reward (and infra_error where the environment failed).
  virtual void judge(Json& record, const RolloutOptions& options) = 0;
  // The solution's hash ("" when there is none), recorded when the policy
  // failed and the episode is not judged.
  virtual std::string solutionHash() = 0;
};

struct EpisodeInfo {
  std::string tool = "kbrollout";  // the record's "tool"
  std::string task_id;
  int sample = 0;
  std::string workspace;  // the record's "workspace" ("": none)
};

// kbrollout's task family on one workspace (already created): the prompt,
// the toolbox, and the final check as its judge. runRollout drives it with a
// policy; kbserve's sessions drive it one step at a time. `spec` must
// outlive the episode.
std::unique_ptr<Episode> makeWorkspaceEpisode(const RolloutSpec& spec, Workspace ws, Environment& env,
                                              const RolloutOptions& options);

// Runs `episode` to its end with `policy`; the contract of runRollout
// (rollout.h): a policy error gives status infra_error and no reward;
// Interrupted when a stop was requested; an unknown reward scheme is a
// kb::UsageError.
Json runEpisode(const EpisodeInfo& info, Episode& episode, chat::Policy& policy, const RolloutOptions& options);

}  // namespace kb::agent
