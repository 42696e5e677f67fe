// kbcheck: static -> build -> verify for one solution against one task.
// TEMPORARY driver from the harness branch: the lead's main.cpp (which adds
// the `static` subcommand) replaces it; see build_verify.h for the wiring.
#include <iostream>

#include <CLI/CLI.hpp>

#include "build_verify.h"
#include "core/error.h"

int main(int argc, char** argv) {
  CLI::App app{
      "kbcheck: check a solution against a task.\n"
      "  kbcheck TASK SOLUTION_DIR           static -> build -> verify, stop at the first failure\n"
      "  kbcheck build SOLUTION_DIR          compile (cached) into solution.so\n"
      "  kbcheck verify TASK SOLUTION_DIR    build, then run in a sandboxed worker and compare\n"
      "Exit status: 0 ok, 1 the solution failed a stage, 2 bad input, 3 infrastructure error.",
      "kbcheck"};
  app.require_subcommand(0, 1);
  kb::cli::CheckCli check;
  kb::cli::addCheckOptions(app, check);
  kb::cli::addBuildCommand(app);
  kb::cli::addVerifyCommand(app);
  try {
    app.parse(argc, argv);
    if (app.get_subcommands().empty()) return kb::cli::runCheckCli(check, nullptr);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::RuntimeError& e) {
    return e.get_exit_code();
  } catch (const CLI::ParseError& e) {
    std::cerr << "kbcheck: " << e.what() << " (see kbcheck --help)\n";
    return 2;
  } catch (const kb::UsageError& e) {
    std::cerr << "kbcheck: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "kbcheck: infrastructure error: " << e.what() << "\n";
    return 3;
  }
  return 0;
}
