// The `build` and `verify` subcommands of kbcheck and the combined run
// (`kbcheck TASK SOLUTION_DIR`), as functions main.cpp registers:
//
//   kb::tools::CheckFlags check;
//   kb::tools::addCheckOptions(app, check);          // TASK SOLUTION_DIR + flags
//   kb::tools::addBuildCommand(app, &command);       // kbcheck build ...
//   kb::tools::addVerifyCommand(app, &command);      // kbcheck verify ...
//   parseOrExit(app, ...);
//   exit_code = command ? command() : kb::tools::runCheckCommand(check);
//
// Each command is one lib/eval request (eval::evaluate) and its rendering.
//
// Exit codes: 0 ok; 1 the solution failed a stage (static_violation,
// compile_error, runtime_error, timeout, crash, incorrect, hack_detected);
// 2 bad input (kb::UsageError, thrown to main); 3 infra_error; 130 / 143
// stopped by SIGINT / SIGTERM (no verdict written). docs/cli.md.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "eval/eval.h"

namespace kb::tools {

// Flags shared by build, verify and the combined run.
struct CheckFlags {
  std::string task;
  std::string solution;
  std::string policy;  // the static stage's (kbcheck TASK SOLUTION): a file or a name; "": the default
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
  std::string seeds;  // "0,1,2" (kb::tools::parseSeedList); empty: the task's
  double atol = -1, rtol = -1;
  std::string precision;  // "" (the task's contract), "strict" or "paper"
  double timeout = 60;
  uint64_t cpu_time = 0;          // 0: the wall-clock limit, rounded up
  uint64_t memory_mib = 4096;
  uint64_t scratch_mib = 1024;
  bool no_seccomp = false, no_landlock = false, allow_open_rdwr = false;
  bool keep_workdir = false;
  // output
  std::string json;  // write the JSON report to this file ("-": stdout)
  bool quiet = false;
};

void addBuildFlags(CLI::App& cmd, CheckFlags& c);
void addVerifyFlags(CLI::App& cmd, CheckFlags& c);
void addOutputFlags(CLI::App& cmd, CheckFlags& c);

// kbcheck build SOLUTION_DIR; when chosen, *command is set to its work
// (which returns the exit code).
void addBuildCommand(CLI::App& app, std::function<int()>* command);
// kbcheck verify TASK SOLUTION_DIR (builds first, from the cache when it can)
void addVerifyCommand(CLI::App& app, std::function<int()>* command);
// TASK SOLUTION_DIR and every flag, on `app` itself, for the combined run.
void addCheckOptions(CLI::App& app, CheckFlags& c);

// Runs static (the Clang checker with the default policy, where kbcheck has
// it) -> build -> verify, prints, returns the exit code.
int runCheckCommand(const CheckFlags& c);

}  // namespace kb::tools
