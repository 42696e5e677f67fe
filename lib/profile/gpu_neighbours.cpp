#include "profile/gpu_neighbours.h"

#include <unistd.h>

#include <sstream>
#include <string>

#include "core/file.h"
#include "core/gpu_info.h"

namespace fs = std::filesystem;

namespace kb::profile {

long parentPid(long pid) {
  std::string stat;
  try {
    stat = readFile("/proc/" + std::to_string(pid) + "/stat");
  } catch (const std::exception&) {
    return 0;
  }
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
  auto close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(stat.substr(close + 1));
  std::string state;
  long ppid = 0;
  rest >> state >> ppid;
  return ppid;
}

bool runsBinary(long pid, const fs::path& binary) {
  if (binary.empty()) return false;
  const std::string proc = "/proc/" + std::to_string(pid);
  std::error_code ec;
  const fs::path exe = fs::read_symlink(proc + "/exe", ec);
  if (!ec) return exe == binary;
  // A confined worker is non-dumpable (sandbox/confine.cpp), and the link
  // of a non-dumpable process is closed to anyone without CAP_SYS_PTRACE,
  // which containers drop by default. Its name is still open: the kernel
  // keeps the file name's first 15 bytes (TASK_COMM_LEN).
  if (ec != std::errc::permission_denied && ec != std::errc::operation_not_permitted) return false;
  std::string comm;
  try {
    comm = readFile(proc + "/comm");
  } catch (const std::exception&) {
    return false;
  }
  while (!comm.empty() && comm.back() == '\n') comm.pop_back();
  return !comm.empty() && comm == binary.filename().string().substr(0, 15);
}

std::vector<long> othersThanOurWorkers(const std::vector<long>& pids, const fs::path& worker_binary) {
  std::error_code ec;
  const fs::path worker = fs::canonical(worker_binary, ec);
  const long self = static_cast<long>(::getpid());
  std::vector<long> others;
  for (long pid : pids) {
    bool ours = false;
    if (runsBinary(pid, worker))
      for (long p = parentPid(pid), hops = 0; p > 1 && hops < 64 && !ours; p = parentPid(p), ++hops) ours = p == self;
    if (!ours) others.push_back(pid);
  }
  return others;
}

std::optional<std::vector<long>> gpuNeighboursNow(int gpu_index, const fs::path& worker_binary, bool drop_ended) {
  std::optional<std::vector<long>> pids = gpuComputePids(gpu_index);
  if (!pids) return std::nullopt;
  std::error_code ec;
  if (drop_ended)
    std::erase_if(*pids, [&](long pid) { return !fs::exists("/proc/" + std::to_string(pid), ec) && !ec; });
  return othersThanOurWorkers(*pids, worker_binary);
}

}  // namespace kb::profile
