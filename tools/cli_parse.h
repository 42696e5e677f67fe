// The command-line parse shared by kbsynth and kbtrain: --help and
// --version print and end with 0; a bad flag prints one line
// "TOOL: what (see TOOL --help)" and ends with 2 (the tools' usage status).
#pragma once

#include <cstdio>
#include <optional>

#include <CLI/CLI.hpp>

namespace kb::tools {

// The exit status when parsing ended the run, nothing when it should go on.
inline std::optional<int> parseOrExit(CLI::App& app, int argc, char** argv, const char* tool) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s: %s (see %s --help)\n", tool, e.what(), tool);
    return 2;
  }
  return std::nullopt;
}

}  // namespace kb::tools
