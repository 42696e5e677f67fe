// Who else has a context on the GPU: the processes nvidia-smi lists, less
// this process's own workers. Baselines measured beside anyone else are
// not cached (profile.cpp, storeBaselines).
#pragma once

#include <filesystem>
#include <optional>
#include <vector>

namespace kb::profile {

// `pids` without this process's own workers: its descendants that run
// `worker_binary`. Under kbserve's gate (--gpu-share) they hold a context
// but are idle and synchronised while a profile's baselines and candidate
// run (docs/kbserve.md, Scheduling); with one evaluation per GPU they hold
// none then. Any other process with a context may be working beside the
// timing: kept. A process whose parent cannot be read is kept; one whose
// executable link is closed to us is judged by its name (runsBinary).
std::vector<long> othersThanOurWorkers(const std::vector<long>& pids, const std::filesystem::path& worker_binary);

// Whether `pid` runs `binary` (a canonical path): its /proc/PID/exe link,
// or, where reading that link is refused (a non-dumpable process and no
// CAP_SYS_PTRACE), its name in /proc/PID/comm against the binary's file
// name as the kernel truncates it. Only ever combined with descent from
// this process: a name alone proves nothing.
bool runsBinary(long pid, const std::filesystem::path& binary);

// The GPU's processes (nvidia-smi) other than this process's own workers,
// judged at once, while they live; nullopt where nvidia-smi cannot say.
// `drop_ended`: a listed process that has already ended is dropped too
// (right for a list taken before the baselines are measured: what has ended
// cannot slow them). Taken after, an ended process is kept: it may have run
// beside them.
std::optional<std::vector<long>> gpuNeighboursNow(int gpu_index, const std::filesystem::path& worker_binary,
                                                  bool drop_ended = true);

// The parent of `pid` from /proc/PID/stat (0 when it cannot be read).
long parentPid(long pid);

}  // namespace kb::profile
