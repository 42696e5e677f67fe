// What the agent's environment tools stand on: a shell inside the sandbox,
// and the compile / verify / profile stages of the libraries, each returning
// a short text for the model and the full report for the trajectory, and
// the final check of a finished episode. LibraryEnvironment (below) is the
// real one, on one lib/eval session per solution; tests may substitute
// their own.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/pool.h"
#include "core/json.h"
#include "core/report.h"
#include "reward/input.h"

namespace kb::agent {

struct StageResult {
  std::string stage;             // "compile", "verify", "profile"
  bool available = true;         // false: this stage cannot run here (profile on a CPU task)
  Status status = Status::InfraError;
  std::string text;              // for the model, short
  Json report = Json::object();  // for the trajectory
  double seconds = 0.0;
  Json resources = Json::object();  // the pool slot it ran on, and when
  // profile: the timings as lib/reward scores them (lib/eval's rewardTimings),
  // so that the final check does not read them back from `report`.
  std::optional<reward::Timings> timings;
};

struct ShellResult {
  bool started = false;       // false: the sandbox could not start (message says why)
  int exit_code = -1;
  int signal = 0;
  bool timed_out = false;
  std::string output;         // merged stdout and stderr, capped
  uint64_t output_bytes = 0;  // printed in all
  bool output_truncated = false;
  double seconds = 0.0;
  std::string message;
  std::string sandbox;        // the confinement applied, e.g. "netns landlock seccomp"
  // Set when the workspace went over its limit (WorkspaceLimits): what it
  // held; the command was stopped if it was still running.
  std::string over_limit;
};

class Environment {
 public:
  virtual ~Environment() = default;
  virtual ShellResult bash(const std::filesystem::path& workspace, const std::string& command,
                           double timeout_seconds) = 0;
  virtual StageResult compile(const std::filesystem::path& solution_dir) = 0;
  virtual StageResult verify(const std::filesystem::path& solution_dir) = 0;
  virtual StageResult profile(const std::filesystem::path& solution_dir) = 0;
  // The final check of a finished episode: compile, verify and profile as
  // far as they pass (which of them ran is the evaluation's to say, not the
  // caller's), the stages that ran in that order. Default: none, for an
  // environment that judges nothing (the final status is then null).
  virtual std::vector<StageResult> check(const std::filesystem::path& solution_dir);
};

// The disk a workspace may take, for bash (its one way to write much): a
// command that takes the workspace over either bound is stopped, and one
// that starts over it may write no file data (RLIMIT_FSIZE), only remove.
// Zero: no bound. The default bounds a session of a shared server (kbserve
// --session-disk-mib) and a rollout alike.
struct WorkspaceLimits {
  uint64_t bytes = 2ull << 30;   // allocated blocks, so sparse files count as what they hold
  uint64_t entries = 100000;     // files, folders and links
};

struct EnvironmentOptions {
  std::filesystem::path task_dir;
  std::string task_id;
  bool cuda = false;                    // the task runs on CUDA (nvcc build, verify on
                                        // cuda:N with a GPU leased from gpu_pool), else
                                        // on the CPU (host build, verify on cpu)
  std::string arch = "sm_90";           // nvcc's target for CUDA tasks
  std::filesystem::path jail;           // the kb-agent-jail helper; empty: find it
  size_t shell_output_limit = 64 * 1024;
  WorkspaceLimits workspace_limits;     // what bash may leave in the workspace
  std::shared_ptr<ResourcePool> cpu_pool;  // compile and static checks
  std::shared_ptr<ResourcePool> gpu_pool;  // verify and profile, one GPU per job
  // Where gpu_pool lets several jobs hold one GPU (kbserve --gpu-share):
  // called with the leased slot, it returns what keeps that GPU to this job
  // alone while it lives. Empty: the lease is exclusive.
  std::function<std::shared_ptr<void>(const std::string& slot)> gpu_exclusive;
  double profile_budget_seconds = 5.0;     // timed rounds of one profile (kbprof --budget-s)
  // The compile figure (kbprof --compile-baseline) and whether a missing
  // AOTInductor package is built (profile::ProfileOptions; kbserve: off).
  std::string compile_baseline = "auto";
  bool build_compiled = true;
  // A shared server's settings (kbserve sessions): the build cache, the
  // workers' scratch directory, and what no candidate worker may read.
  std::filesystem::path build_cache_dir;   // empty: lib/build's default
  std::filesystem::path scratch_dir;       // empty: verify::defaultScratchRoot()
  std::vector<std::filesystem::path> hidden_dirs;
  bool hide_private_dirs = true;           // false: kbserve --no-hide-state (tests only)
};

// The environment backed by the libraries, in-process (DESIGN.md §2): one
// eval::Session for the solution last seen, asked stage by stage (compile =
// static then build, on a CPU slot; verify, and profile (kbprof's, CUDA
// tasks only), on the task's device), so that an unchanged solution is not
// built or judged twice whatever the order of the calls, and a stage after
// a kept failure answers at once with that failure. The final check asks it
// for every stage.
std::unique_ptr<Environment> makeLibraryEnvironment(const EnvironmentOptions& options);

}  // namespace kb::agent
