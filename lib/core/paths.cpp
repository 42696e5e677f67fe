#include "core/paths.h"

#include <algorithm>
#include <cstdlib>
#include <system_error>
#include <vector>

#include "kb_config.h"

// From lib/core/meson.build: the build tree, and the install directories as
// meson was configured (relative to the prefix unless set absolute).
#ifndef KB_BUILD_ROOT
#error "KB_BUILD_ROOT must be defined by the build"
#endif

namespace fs = std::filesystem;

namespace kb {
namespace {

constexpr const char* kPackage = "kernelbench-rl";

fs::path selfExe() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe;
}

// `path` is `dir` or below it (both made canonical, so symlinks agree).
bool isUnder(const fs::path& path, const fs::path& dir) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(path, ec);
  if (ec) p = path;
  fs::path d = fs::weakly_canonical(dir, ec);
  if (ec) d = dir;
  auto [end, _] = std::mismatch(d.begin(), d.end(), p.begin(), p.end());
  return end == d.end();
}

bool fromBuildTree() { return isUnder(selfExe(), KB_BUILD_ROOT); }

// `dir` with the relative path `tail` taken off its end when it ends so;
// empty when it does not.
fs::path stripTail(const fs::path& dir, const fs::path& tail) {
  fs::path d = dir;
  std::vector<fs::path> parts(tail.begin(), tail.end());
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
    if (it->empty()) continue;
    if (d.filename() != *it) return {};
    d = d.parent_path();
  }
  return d;
}

// The install prefix of the running executable: its folder less bindir, or
// less libexecdir/kernelbench-rl; else the folder above it.
fs::path installPrefix() {
  fs::path dir = selfExe().parent_path();
  for (fs::path tail : {fs::path(KB_INSTALL_BINDIR), fs::path(KB_INSTALL_LIBEXECDIR) / kPackage})
    if (tail.is_relative())
      if (fs::path p = stripTail(dir, tail); !p.empty()) return p;
  return dir.parent_path();
}

// An install directory under the prefix (absolute ones stay as configured).
fs::path installDir(const char* configured) {
  fs::path d(configured);
  return d.is_absolute() ? d : installPrefix() / d;
}

}  // namespace

fs::path dataRoot() {
  if (const char* env = std::getenv("KB_DATA_DIR"); env && *env) return env;
  if (fromBuildTree()) return KB_SOURCE_ROOT;
  return installDir(KB_INSTALL_DATADIR) / kPackage;
}

fs::path dataPath(const fs::path& relative) { return dataRoot() / relative; }

fs::path installedHelper(const std::string& name) {
  if (fromBuildTree()) return {};
  return installDir(KB_INSTALL_LIBEXECDIR) / kPackage / name;
}

fs::path cacheRoot() {
  if (const char* d = std::getenv("KB_CACHE_DIR"); d && *d) return d;
  if (const char* d = std::getenv("XDG_CACHE_HOME"); d && *d) return fs::path(d) / "kernelbench-rl";
  if (const char* d = std::getenv("HOME"); d && *d) return fs::path(d) / ".cache" / "kernelbench-rl";
  return fs::temp_directory_path() / "kernelbench-rl";
}

}  // namespace kb
