// `kbcheck static`: flags, then lib/analyze.
#pragma once

#include <CLI/CLI.hpp>

namespace kb::tools {

// Registers the subcommand; its result lands in *exit_code.
void addStaticCommand(CLI::App& app, int* exit_code);

}  // namespace kb::tools
