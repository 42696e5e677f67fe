// One rollout: a policy in a workspace, turn after turn, until it calls
// finish or a budget runs out; then the final solution is checked, verified
// and timed, and the reward attached. The result is one trajectory record
// (docs/trajectory-format.md). docs/kbrollout.md ("Budgets and truncation")
// describes the limits and the truncation policy.
#pragma once

#include <filesystem>
#include <functional>
#include <string>

#include "agent/environment.h"
#include "agent/tools.h"
#include "chat/messages.h"
#include "core/json.h"

namespace kb::agent {

struct RolloutLimits {
  int max_turns = 150;              // policy calls; 200 in eval mode (the paper)
  int64_t context_tokens = 131072;  // prompt + max_tokens must fit in this
  double wall_seconds = 7200.0;     // per rollout, final check excluded
  int keep_recent_turns = 4;        // the last N turns' observations are never elided
  int max_idle_turns = 3;           // consecutive replies without a tool call, then end
};

struct RolloutOptions {
  RolloutLimits limits;
  // sampling.seed is the run's seed S: sample k of task T is sent
  // sampleSeed(S, T, k), unless same_seed asks for S itself in every sample.
  chat::SamplingParams sampling;
  bool same_seed = false;
  ToolLimits tools;
  std::string mode = "train";  // "train" or "eval"
  std::string reward_scheme = "milestone";  // one of reward::schemeNames()
  std::string guide_text;      // the system prompt: docs/agent-guide.md
};

struct RolloutSpec {
  std::string task_id;
  std::filesystem::path task_dir;
  int sample = 0;
  std::filesystem::path workspace_dir;  // created afresh
  std::filesystem::path guide;          // docs/agent-guide.md
  std::filesystem::path interface_header;
};

// "<task_id>#<sample>": what resume matches on.
std::string rolloutId(const std::string& task_id, int sample);

// The seed of sample k of a task under run seed S, so that the samples of a
// group differ (GRPO needs them to) and a run repeats: the first 8 bytes of
// SHA-256("kbrollout-seed-v1\n" S "\n" task_id "\n" k) as a big-endian
// number, top bit cleared and reduced to [0, 2^31), the range every server
// and torch.manual_seed accept. docs/kbrollout.md ("Seeds").
int64_t sampleSeed(int64_t run_seed, const std::string& task_id, int sample);

// Runs the rollout to its end. Throws kb::Error only for what is nobody's
// fault in the episode (the workspace cannot be created), kb::UsageError for
// an unknown reward scheme; everything the policy or the tools do ends up in
// the record. An infrastructure fault (the policy could not answer, or a
// final-check stage ended infra_error) gives status "infra_error", an
// "infra_error" object saying where and why, and no reward (value null,
// excluded "infra_error"): never -1. Throws Interrupted when a stop was
// requested (the partial record is dropped, resume redoes it).
Json runRollout(const RolloutSpec& spec, chat::Policy& policy, Environment& env,
                const RolloutOptions& options);

// A stage's result as the trajectory records it (final.stages.<name>):
// available, status, seconds, summary, resources, report.
Json stageToJson(const StageResult& result);

class Interrupted : public Error {
 public:
  using Error::Error;
};

// Rough prompt size in tokens: characters / 4, or, after the server reported
// usage once, characters times the ratio it showed.
int64_t estimateTokens(size_t chars, double tokens_per_char);

}  // namespace kb::agent
