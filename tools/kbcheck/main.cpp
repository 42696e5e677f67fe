// kbcheck: static check, build and verification of a CUDA solution. A thin
// driver: each subcommand parses its flags and calls lib/.
#include <iostream>

#include <CLI/CLI.hpp>

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
               "Exit status: 0 ok, 1 the solution failed a stage, 2 bad input, 3 infra_error."};
  app.require_subcommand(0, 1);
  app.set_version_flag("--version", KB_VERSION);
  int exit_code = 0;
#ifdef KB_HAVE_CLANG
  kb::tools::addStaticCommand(app, &exit_code);
#endif
  kb::tools::addBuildCommand(app, &exit_code);
  kb::tools::addVerifyCommand(app, &exit_code);
  kb::tools::CheckFlags check;
  kb::tools::addCheckOptions(app, check);
  try {
    app.parse(argc, argv);
    if (app.get_subcommands().empty())
      exit_code = kb::tools::runCheckCommand(check, kb::tools::clangStaticStage(check));
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  } catch (const kb::UsageError& e) {
    std::cerr << "kbcheck: error: " << e.what() << '\n';
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "kbcheck: internal error: " << e.what() << '\n';
    return 3;
  }
  return exit_code;
}
