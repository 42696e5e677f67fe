// kbcheck: static check, build and verification of a CUDA solution. A thin
// driver: each subcommand parses its flags and calls lib/.
#include <iostream>

#include <CLI/CLI.hpp>

#include "core/error.h"
#include "kb_config.h"
#ifdef KB_HAVE_CLANG
#include "static_command.h"
#endif

int main(int argc, char** argv) {
  CLI::App app{"kbcheck " KB_VERSION " -- check a solution before it is trusted with a GPU"};
  app.require_subcommand(1);
  app.set_version_flag("--version", KB_VERSION);
  int exit_code = 0;
#ifdef KB_HAVE_CLANG
  kb::tools::addStaticCommand(app, &exit_code);
#endif
  try {
    app.parse(argc, argv);
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
