// Many rollouts on one machine: N at a time, each in its own workspace, with
// shared pools so that every verify/profile job has a GPU to itself and
// compilation runs on CPU workers; a progress line; trajectories appended as
// they finish; and resume: rollouts already in the output are not redone.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agent/environment.h"
#include "agent/pool.h"
#include "agent/rollout.h"
#include "agent/trajectory.h"

namespace kb::agent {

struct TaskRef {
  std::string id;              // task.json "id", else the directory name
  std::filesystem::path dir;
  bool cuda = false;           // task.json "device" == "cuda" (default: CPU unless told)
};

// A task directory (with model.py), or a directory of them. A task runs on
// CUDA when its task.json says "device": "cuda", on the CPU when it says
// "cpu", else as `default_cuda` says. Throws kb::UsageError when none is found.
std::vector<TaskRef> findTasks(const std::filesystem::path& path, bool default_cuda = false);

struct RunOptions {
  std::vector<TaskRef> tasks;
  int samples = 1;                     // rollouts per task
  int parallel = 1;                    // rollouts at once
  std::filesystem::path output;        // trajectories.jsonl
  // The output opened (locked and checked) by the caller before any other
  // work, so that a busy or corrupt output is refused first; when null,
  // runRollouts opens `output` itself (and may throw OutputBusy,
  // CorruptOutput).
  std::shared_ptr<TrajectoryWriter> writer;
  std::filesystem::path work_dir;      // workspaces: <work_dir>/<rollout>/
  std::filesystem::path guide;
  std::filesystem::path interface_header;
  RolloutOptions rollout;
  std::shared_ptr<ResourcePool> cpu_pool;
  std::shared_ptr<ResourcePool> gpu_pool;
  bool progress = true;                // the progress line on stderr
  bool keep_workspaces = true;
  // Builds the environment of one rollout; default: makeLibraryEnvironment.
  std::function<std::unique_ptr<Environment>(const TaskRef&)> make_environment;
};

struct RunSummary {
  int total = 0;        // rollouts asked for
  int skipped = 0;      // already in the output (resume)
  int done = 0;         // finished and written this run
  int failed = 0;       // of those, ended by an error (policy_error), or not written (infra)
  int infra = 0;        // written this run with status infra_error (no reward; resume redoes them)
  std::string first_infra;  // the first of those: "<rollout id>: <stage>: <message>"
  int interrupted = 0;  // stopped before their end, not written
  int rewarded = 0;     // with a reward value
  double reward_sum = 0;
  std::vector<std::string> errors;  // rollouts that could not run at all
  // Rollouts made this run: written, and not infra_error.
  int made() const { return done - infra; }
};

RunSummary runRollouts(const RunOptions& options, chat::Policy& policy);

// "<task id with / replaced>-s<sample>": a rollout's workspace directory name.
std::string workspaceName(const std::string& task_id, int sample);

}  // namespace kb::agent
