// The replay policy (docs/kbrollout.md "Replay policy"): no model, a fixed
// script of real tool calls that submits a known solution through the same
// agent loop as an LLM would, so that the whole path (workspace, tools,
// compile / verify / profile, final check, reward) runs without one.
//
// Solutions live in a folder, one subfolder per task named after the last
// component of the task id (for a bundle, its folder's name):
//
//   DIR/<name>/forward.cpp, kernels/...          one solution
//   DIR/<name>/v0/forward.cpp, v1/..., ...       variants: sample k replays v(k mod n)
//
// Per conversation the script is: write_file for each file of the solution
// (into solution/), compile, verify, profile (only when offered and verify
// said ok on a GPU), finish. A task without a solution gets finish at once.
// The step is the number of assistant messages already in the conversation
// and the task is read from the task message ("Task: ID"), so the policy
// keeps no state per rollout and parallel rollouts share it.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "chat/messages.h"

namespace kb::agent {

struct ReplayFile {
  std::string path;     // relative to the solution folder, '/'-separated
  std::string content;  // UTF-8 text
};

struct ReplaySolution {
  std::string source;  // the folder, relative to DIR ("linear_relu", "linear_relu/v1")
  std::vector<ReplayFile> files;  // sorted by path
};

class ReplayPolicy : public chat::Policy {
 public:
  // Reads every solution under `dir` now. Throws kb::UsageError when `dir`
  // is not a readable folder, a subfolder holds neither forward.cpp nor
  // v0/forward.cpp, or a file is a link or not UTF-8 text.
  explicit ReplayPolicy(const std::filesystem::path& dir);

  chat::Completion complete(const std::vector<chat::Message>& messages, const std::vector<chat::ToolSpec>& tools,
                            const chat::SamplingParams& sampling) override;
  // {"kind": "replay", "model": "replay:<dir name>", "dir": <absolute>, "tasks": N}
  Json describe() const override;

  // The variants replayed for a task id (nullptr: none; the rollout gives up).
  const std::vector<ReplaySolution>* find(const std::string& task_id) const;
  size_t size() const { return tasks_.size(); }

 private:
  std::filesystem::path dir_;
  std::string model_;
  std::map<std::string, std::vector<ReplaySolution>> tasks_;  // by folder name
};

// The task id of a rollout's conversation: the first user message's first
// line, "Task: ID" (lib/agent/rollout.cpp's task message). nullopt when the
// conversation has no such line.
std::optional<std::string> replayTaskId(const std::vector<chat::Message>& messages);

// The folder name a task id's solution is looked up under: its last
// '/'-separated component ("kernelbench/level1/19_ReLU" -> "19_ReLU").
std::string replayName(const std::string& task_id);

}  // namespace kb::agent
