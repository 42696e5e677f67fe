// Landlock, written once for both confined processes: the candidate worker
// (confine.cpp: writes only below its working directory, reads hidden below
// a shared server's state) and the agent's bash (kb-agent-jail,
// lib/agent/jail_main.cpp: reads only below the system directories and the
// workspace, writes only below the workspace). Each builds a ruleset; this
// file asks the kernel.
#pragma once

#include <linux/landlock.h>

#include <cstdint>
#include <filesystem>
#include <utility>
#include <vector>

#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif

namespace kb::sandbox {

// The kernel's Landlock ABI version; 0 when it has none (or it is off).
long landlockAbi();

// Every right that creates, changes or removes a file (REFER from ABI 2,
// TRUNCATE from ABI 3).
uint64_t landlockWriteRights(long abi);

// Reading a file or a directory and executing.
inline constexpr uint64_t kLandlockReadRights =
    LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_EXECUTE;

struct LandlockRuleset {
  uint64_t handled_fs = 0;       // the file rights denied except where a rule allows them
  bool deny_tcp = false;         // ABI 4: no TCP bind or connect
  bool scope_ipc = false;        // ABI 6: no abstract UNIX sockets or signals outside the domain
  // Path-beneath rules: the rights allowed beneath each path (on a file,
  // only the rights a file can carry). A path that cannot be opened is
  // skipped: a directory this system does not have.
  std::vector<std::pair<std::filesystem::path, uint64_t>> rules;
};

// Restricts this process (and what it starts) to `ruleset` under ABI `abi`
// (landlockAbi(), at least 1). Returns, per rule, whether the kernel took
// it (a rule not taken allows nothing). Throws kb::Error when the ruleset
// cannot be made or applied.
std::vector<bool> restrictSelf(const LandlockRuleset& ruleset, long abi);

}  // namespace kb::sandbox
