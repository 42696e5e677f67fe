#include "verify/private_dirs.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "build/build.h"
#include "core/error.h"
#include "core/paths.h"

namespace fs = std::filesystem;

namespace kb::verify {

fs::path defaultScratchRoot() {
  const uid_t uid = ::getuid();
  fs::path root = fs::temp_directory_path() / ("kernelbench-rl-work-" + std::to_string(uid));
  if (::mkdir(root.c_str(), 0700) != 0 && errno != EEXIST)
    throw Error("cannot make the workers' scratch folder " + root.string() + ": " + std::strerror(errno));
  // Made by us now or earlier, or by someone else first: only a real
  // directory of ours, closed to others, will do (a link planted in /tmp
  // would send workers' folders, and what is hidden, elsewhere).
  struct stat st{};
  if (::lstat(root.c_str(), &st) != 0)
    throw Error("cannot read the workers' scratch folder " + root.string() + ": " + std::strerror(errno));
  if (!S_ISDIR(st.st_mode) || st.st_uid != uid)
    throw Error(root.string() + " is not a directory of this user's; remove it, or give a scratch folder");
  if ((st.st_mode & 077) != 0 && ::chmod(root.c_str(), 0700) != 0)
    throw Error("cannot close " + root.string() + " to other users: " + std::strerror(errno));
  return root;
}

fs::path scratchRootOr(const fs::path& scratch) { return scratch.empty() ? defaultScratchRoot() : scratch; }

std::vector<std::string> hiddenFromWorkers(const fs::path& scratch_root, const std::vector<fs::path>& more) {
  std::vector<std::string> out;
  auto add = [&out](const fs::path& p) {
    if (p.empty()) return;
    std::string s = fs::absolute(p).lexically_normal().string();
    for (const auto& o : out)
      if (o == s) return;
    out.push_back(s);
  };
  add(scratch_root);
  add(cacheRoot());
  add(build::defaultBuildCacheDir());
  for (const auto& p : more) add(p);
  return out;
}

}  // namespace kb::verify
