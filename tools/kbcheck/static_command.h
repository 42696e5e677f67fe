// `kbcheck static`: flags, then lib/eval's static stage (lib/analyze).
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

namespace kb::tools {

// Registers the subcommand; when it is chosen, *command is set to its work
// (which returns the exit code).
void addStaticCommand(CLI::App& app, std::function<int()>* command);

}  // namespace kb::tools
