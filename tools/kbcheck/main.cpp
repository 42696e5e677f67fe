// kbcheck: static check, build and verification of a CUDA solution. A thin
// driver: each subcommand parses its flags and calls lib/. The command-line
// contract (exit codes, messages, outputs) is docs/cli.md.
#include <functional>

#include <CLI/CLI.hpp>

#include "../cli_parse.h"
#include "core/error.h"
#include "kb_config.h"
#ifdef KB_HAVE_CLANG
#include "static_command.h"
#endif
#include "build_verify.h"

int main(int argc, char** argv) {
  CLI::App app{"kbcheck " KB_VERSION " -- check a solution before it is trusted with a GPU\n"
               "  kbcheck TASK SOLUTION_DIR         static -> build -> verify, stop at the first failure\n"
               "  kbcheck static [TASK] SOLUTION_DIR  the Clang policy checker\n"
               "  kbcheck build SOLUTION_DIR        compile (cached) into solution.so\n"
               "  kbcheck verify TASK SOLUTION_DIR  build, run in a sandboxed worker, compare\n"
               "Exit status: 0 ok, 1 the solution failed a stage, 2 bad usage or input (before any work),\n"
               "3 infra_error, 130 stopped by SIGINT (no verdict). See docs/cli.md.",
               "kbcheck"};
  app.require_subcommand(0, 1);
  kb::tools::setVersionFlag(app, "kbcheck");
  std::function<int()> command;  // the chosen subcommand's work, set by its callback
#ifdef KB_HAVE_CLANG
  kb::tools::addStaticCommand(app, &command);
#endif
  kb::tools::addBuildCommand(app, &command);
  kb::tools::addVerifyCommand(app, &command);
  kb::tools::CheckFlags check;
  kb::tools::addCheckOptions(app, check);
  kb::tools::durationFlags(app, {"--timeout", "--build-timeout", "--cpu-time"});
  if (auto rc = kb::tools::parseOrExit(app, argc, argv, "kbcheck")) return *rc;
  return kb::tools::runGuarded("kbcheck", [&] {
    if (command) return command();
    return kb::tools::runCheckCommand(check);
  });
}
