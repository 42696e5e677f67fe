// Who else has a context on the GPU: the processes nvidia-smi lists, less
// this process's own workers. Baselines measured beside anyone else are
// not cached (profile.cpp, storeBaselines).
#pragma once

#include <filesystem>
#include <vector>

namespace kb::profile {

// `pids` without this process's own workers: its descendants that run
// `worker_binary`. Under kbserve's gate (--gpu-share) they hold a context
// but are idle and synchronised while a profile's baselines and candidate
// run (docs/kbserve.md, Scheduling); with one evaluation per GPU they hold
// none then. Any other process with a context may be working beside the
// timing: kept. A process whose executable or parent cannot be read is kept.
std::vector<long> othersThanOurWorkers(const std::vector<long>& pids, const std::filesystem::path& worker_binary);

// The parent of `pid` from /proc/PID/stat (0 when it cannot be read).
long parentPid(long pid);

}  // namespace kb::profile
