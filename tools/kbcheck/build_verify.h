// The `build` and `verify` subcommands of kbcheck and the combined run
// (`kbcheck TASK SOLUTION_DIR`), as functions main.cpp registers:
//
//   CLI::App app{...};
//   kb::cli::CheckCli check;
//   kb::cli::addCheckOptions(app, check);         // TASK SOLUTION_DIR + flags
//   kb::cli::addBuildCommand(app);                // kbcheck build ...
//   kb::cli::addVerifyCommand(app);               // kbcheck verify ...
//   ... parse ...
//   if (no subcommand ran) return kb::cli::runCheckCli(check, staticStage);
//
// Subcommand callbacks end by throwing CLI::RuntimeError(exit_code) when the
// exit code is not 0, which app.exit() turns into the process's exit code
// without printing anything. Exit codes: 0 ok; 1 the solution failed a
// stage (static_violation, compile_error, runtime_error, timeout, crash,
// incorrect, hack_detected); 2 bad input (kb::UsageError, thrown to main);
// 3 infra_error.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "verify/check.h"

namespace kb::cli {

// Flags shared by build, verify and the combined run.
struct CheckCli {
  std::string task;
  std::string solution;
  // build
  std::string arch = "sm_90";
  bool device_only = false;
  int jobs = 0;
  std::string cache_dir;
  bool no_cache = false;
  std::vector<std::string> nvcc_flags, cxx_flags;
  double build_timeout = 300;
  int max_errors = 5;
  // verify
  std::string device = "cuda";
  std::vector<uint64_t> seeds;
  double atol = -1, rtol = -1;
  double timeout = 60;
  uint64_t cpu_time = 0;          // 0: the wall-clock limit, rounded up
  uint64_t memory_mib = 4096;
  uint64_t scratch_mib = 1024;
  bool no_seccomp = false, no_landlock = false, allow_open_rdwr = false;
  bool keep_workdir = false;
  // output
  bool json = false;
  std::string report;
};

void addBuildFlags(CLI::App& cmd, CheckCli& c);
void addVerifyFlags(CLI::App& cmd, CheckCli& c);
void addOutputFlags(CLI::App& cmd, CheckCli& c);

// kbcheck build SOLUTION_DIR
void addBuildCommand(CLI::App& app);
// kbcheck verify TASK SOLUTION_DIR (builds first, from the cache when it can)
void addVerifyCommand(CLI::App& app);
// TASK SOLUTION_DIR and every flag, on `app` itself, for the combined run.
void addCheckOptions(CLI::App& app, CheckCli& c);

// Runs static (if given) -> build -> verify, prints, returns the exit code.
int runCheckCli(const CheckCli& c, const StaticStage& static_stage);

// The exit code for a final status (see above).
int exitCodeFor(Status status);

}  // namespace kb::cli
