#include "profile/gpu_neighbours.h"

#include <unistd.h>

#include <sstream>
#include <string>

#include "core/file.h"

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

std::vector<long> othersThanOurWorkers(const std::vector<long>& pids, const fs::path& worker_binary) {
  std::error_code ec;
  const fs::path worker = fs::canonical(worker_binary, ec);
  const long self = static_cast<long>(::getpid());
  std::vector<long> others;
  for (long pid : pids) {
    bool ours = false;
    const fs::path exe = fs::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec);
    if (!ec && !worker.empty() && exe == worker)
      for (long p = parentPid(pid), hops = 0; p > 1 && hops < 64 && !ours; p = parentPid(p), ++hops) ours = p == self;
    if (!ours) others.push_back(pid);
  }
  return others;
}

}  // namespace kb::profile
