#include "core/scratch_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace kb {
namespace fs = std::filesystem;

namespace {
constexpr const char* kLockName = "owner.lock";
}

ScratchOwner::~ScratchOwner() {
  if (fd_ >= 0) ::close(fd_);
}

std::vector<fs::path> reclaimAbandonedScratchDirs(const fs::path& parent, const std::string& prefix) {
  std::vector<fs::path> removed;
  std::error_code ec;
  fs::directory_iterator it(parent, ec), end;
  const std::string start = prefix + "-";
  for (; !ec && it != end; it.increment(ec)) {
    const fs::path dir = it->path();
    if (dir.filename().string().rfind(start, 0) != 0) continue;
    // A real directory of ours: never a link someone else put in /tmp.
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) continue;
    int fd = ::open((dir / kLockName).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) continue;  // kept, being made, or not ours to judge
    // Locked: its owner lives (in this process too: another open file
    // description conflicts with the owner's).
    bool abandoned = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
    if (abandoned) {
      std::error_code rm;
      fs::remove_all(dir, rm);
      if (!rm) removed.push_back(dir);
    }
    ::close(fd);
  }
  return removed;
}

ScratchDir makeScratchDir(const fs::path& parent, const std::string& prefix) {
  std::error_code ec;
  fs::create_directories(parent, ec);
  reclaimAbandonedScratchDirs(parent, prefix);
  std::string tmpl = (parent / (prefix + "-XXXXXX")).string();
  if (!::mkdtemp(tmpl.data()))
    throw Error("cannot make a directory in " + parent.string() + ": " + std::strerror(errno));
  ScratchDir dir{tmpl, nullptr};
  // Locked under a name the reclaimer ignores, then renamed: owner.lock is
  // never seen unlocked while its owner lives.
  const fs::path temp = dir.path / ".owner.lock.new";
  int fd = ::open(temp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0 || ::flock(fd, LOCK_EX) != 0 || ::rename(temp.c_str(), (dir.path / kLockName).c_str()) != 0) {
    std::string why = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    fs::remove_all(dir.path, ec);
    throw Error("cannot lock the scratch directory " + dir.path.string() + ": " + why);
  }
  dir.owner = std::make_shared<const ScratchOwner>(fd);
  return dir;
}

void keepScratchDir(const fs::path& dir) {
  std::error_code ec;
  fs::remove(dir / kLockName, ec);
}

}  // namespace kb
