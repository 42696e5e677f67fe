#include "agent/trajectory.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include "core/error.h"
#include "core/jsonl.h"

namespace kb::agent {
namespace fs = std::filesystem;

std::vector<Json> readTrajectories(const fs::path& path, size_t* skipped) {
  return readJsonLines(path, skipped);
}

std::set<std::string> finishedRollouts(const fs::path& path) {
  std::set<std::string> ids;
  for (const Json& j : readTrajectories(path))
    if (auto it = j.find("rollout_id"); it != j.end() && it->is_string()) ids.insert(*it);
  return ids;
}

TrajectoryWriter::TrajectoryWriter(const fs::path& path) : path_(path) {
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error("cannot open " + path.string() + ": " + std::strerror(errno));
  // Cut a partial last line (no trailing newline) left by an interrupted run.
  off_t size = ::lseek(fd_, 0, SEEK_END);
  off_t keep = size;
  char c;
  while (keep > 0 && ::pread(fd_, &c, 1, keep - 1) == 1 && c != '\n') --keep;
  if (keep != size && ::ftruncate(fd_, keep) != 0)
    throw Error("cannot repair " + path.string() + ": " + std::strerror(errno));
  ::lseek(fd_, 0, SEEK_END);
}

TrajectoryWriter::~TrajectoryWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void TrajectoryWriter::append(const Json& record) {
  std::string line = record.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
  std::lock_guard lock(mu_);
  size_t done = 0;
  while (done < line.size()) {
    ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
    if (n <= 0) throw Error("error writing " + path_.string() + ": " + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
  ::fsync(fd_);
}

}  // namespace kb::agent
