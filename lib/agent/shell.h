// The agent's bash: `/bin/bash -c COMMAND` run through kb-agent-jail
// (jail_main.cpp) in the workspace, in its own process group, with a scrubbed
// environment, a wall-clock limit after which the whole group is killed, and
// the output capped.
#pragma once

#include <filesystem>
#include <string>

#include "agent/environment.h"

namespace kb::agent {

// The jail helper: $KB_AGENT_JAIL, else kb-agent-jail beside the running
// executable, else the one in the build tree. Empty when none exists.
std::filesystem::path findJail();

ShellResult runJailedBash(const std::filesystem::path& jail, const std::filesystem::path& workspace,
                          const std::string& command, double timeout_seconds, size_t output_limit);

// What the jail applies on this machine ("netns landlock-abi7 seccomp"), or
// the reason it cannot confine. Probed once per process.
std::string jailLayers(const std::filesystem::path& jail);

}  // namespace kb::agent
