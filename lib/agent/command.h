// kbrollout run|eval (docs/kbrollout.md) as one library call: the driver
// (tools/kbrollout/main.cpp) parses the flags into a RolloutCommand and calls
// runRolloutCommand, which finds the tasks, makes the policy (an HTTP
// endpoint, the replay policy, or the local model through the caller's
// loader), runs the rollouts and, for eval, writes results.jsonl and
// timeline.json.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "chat/messages.h"

namespace kb::agent {

struct RolloutCommand {
  bool eval = false;  // kbrollout eval: the evaluation protocol (200 turns), an output directory
  std::string tasks, out, work_dir, policy_url, model, api_key_env = "OPENAI_API_KEY", extra_body;
  std::string guide, gpus, reward_scheme = "milestone";
  std::string device = "auto";  // where tasks without a "device" run: auto, cuda, cpu
  std::string local_model, local_device = "cpu", local_dtype = "auto";
  std::string replay;  // --replay DIR: the replay policy (replay_policy.h)
  std::string json;    // --json FILE: the run's summary (runSummaryJson), "-": one line on stdout
  int samples = 1, parallel = 1, max_turns = -1, max_tokens = 8192, retries = 6, cpu_workers = 0;
  int64_t context_tokens = 131072, seed = -1;
  double temperature = 1.0, top_p = 1.0, wall_s = 7200, timeout_s = 600, backoff_s = 1.0;
  bool vllm_token_ids = false, no_progress = false, no_logprobs = false, remove_workspaces = false;
  bool same_seed = false;
};

// --local-model's loader: lib/llm's loadLocalPolicy where kbrollout is
// built with LibTorch; empty where it is not (--local-model is then refused).
using LocalPolicyLoader = std::function<std::unique_ptr<chat::Policy>(
    const std::string& model_dir, const std::string& device, const std::string& dtype)>;

// The caller checks first that eval's output directory (-o, default
// eval-out) and --work-dir can be written (exit 2). Runs the command and
// returns its exit status (docs/kbrollout.md "Exit
// status"): 0 done (some rollouts may be infra_error, said on stderr), 3 no
// rollout could be made, 130 interrupted (chat::requestStop, e.g. from the
// caller's SIGINT handler); with c.json, the run's summary is written there
// whatever the status. Throws kb::UsageError for bad usage or input
// (exit 2, before any rollout), anything else for an infrastructure fault.
int runRolloutCommand(const RolloutCommand& c, const LocalPolicyLoader& load_local);

}  // namespace kb::agent
