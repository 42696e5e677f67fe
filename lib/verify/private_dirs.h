// Where candidate workers work, and what none of them may read.
//
// Candidates run as the same user as the tools, so file modes do not keep
// one candidate out of another's files: every worker's result channel (the
// raw outputs of the task's seeds, which are the same for every candidate
// of a task) and every cached build would be readable by a candidate that
// runs beside it, in the next RL step's batch or in another kbcheck on the
// same machine. A candidate that copies a sibling's outputs computes
// nothing and is judged correct. So every worker, whichever tool starts it,
// is confined with these folders hidden (Landlock, sandbox::ConfinePolicy
// hidden_dirs): its own working folder and its own library's cache entry
// stay readable, nothing else under them (docs/threat-model.md "Other
// evaluations' files").
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace kb::verify {

// The default parent of workers' working folders: <temp>/kernelbench-rl-work-<uid>,
// made mode 0700 when missing. Throws kb::Error when it is there but not a
// directory of this user's (a link, or another user's: /tmp is shared).
std::filesystem::path defaultScratchRoot();

// `scratch` when set, else defaultScratchRoot().
std::filesystem::path scratchRootOr(const std::filesystem::path& scratch);

// The folders hidden from every candidate worker: `scratch_root` (every
// worker's working folder), the toolchain's cache root (kb::cacheRoot(): the
// build, baseline and static caches, kbserve's state by default), the build
// cache wherever it is ($KB_CACHE_DIR, build::defaultBuildCacheDir), and
// `more` (a caller's own: kbserve's state folder, a --cache-dir).
std::vector<std::string> hiddenFromWorkers(const std::filesystem::path& scratch_root,
                                           const std::vector<std::filesystem::path>& more);

}  // namespace kb::verify
