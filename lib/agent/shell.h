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

// `limits`: the workspace is measured before the command and every 200 ms
// while it runs; past max(limit, what it held before) the process group is
// killed and ShellResult::over_limit says what the workspace held.
ShellResult runJailedBash(const std::filesystem::path& jail, const std::filesystem::path& workspace,
                          const std::string& command, double timeout_seconds, size_t output_limit,
                          const WorkspaceLimits& limits = {});

// What a folder holds: allocated bytes and entries below it (links not
// followed; entries that vanish meanwhile skipped). Stops counting once
// past `max_entries` (0: never).
struct FolderUse {
  uint64_t bytes = 0;
  uint64_t entries = 0;
};
FolderUse measureFolder(const std::filesystem::path& root, uint64_t max_entries = 0);

// What the jail applies on this machine ("netns landlock-abi7 seccomp"), or
// the reason it cannot confine. Probed once per process.
std::string jailLayers(const std::filesystem::path& jail);

}  // namespace kb::agent
