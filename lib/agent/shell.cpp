#include "agent/shell.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "core/paths.h"
#include "core/process.h"

namespace kb::agent {
namespace fs = std::filesystem;

fs::path findJail() {
  if (const char* e = std::getenv("KB_AGENT_JAIL"); e && *e && fs::exists(e)) return e;
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec && fs::exists(self.parent_path() / "kb-agent-jail")) return self.parent_path() / "kb-agent-jail";
  if (fs::path installed = installedHelper("kb-agent-jail"); !installed.empty()) return installed;
  fs::path built = KB_AGENT_JAIL_BUILT;
  if (fs::exists(built)) return built;
  return {};
}

FolderUse measureFolder(const fs::path& root, uint64_t max_entries) {
  // Descriptor-relative (openat, fstatat without following links), so that
  // a folder renamed or a link swapped in meanwhile is never followed out;
  // an entry that fails is skipped, the walk goes on.
  FolderUse use;
  std::vector<int> pending;
  int top = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (top >= 0) pending.push_back(top);
  while (!pending.empty()) {
    int fd = pending.back();
    pending.pop_back();
    DIR* d = ::fdopendir(fd);
    if (!d) {
      ::close(fd);
      continue;
    }
    while (dirent* e = ::readdir(d)) {
      if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
      ++use.entries;
      struct stat st;
      if (::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      use.bytes += static_cast<uint64_t>(st.st_blocks) * 512;
      if (S_ISDIR(st.st_mode)) {
        int sub = ::openat(::dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub >= 0) pending.push_back(sub);
      }
      if (max_entries && use.entries > max_entries) break;
    }
    ::closedir(d);
    if (max_entries && use.entries > max_entries) break;
  }
  for (int fd : pending) ::close(fd);
  return use;
}

namespace {

std::string describeUse(const FolderUse& u, const WorkspaceLimits& l) {
  auto mib = [](uint64_t b) { return std::to_string((b + (1u << 20) - 1) >> 20) + " MiB"; };
  return "the workspace holds " + mib(u.bytes) + " in " + std::to_string(u.entries) + " entries; its limit is " +
         (l.bytes ? mib(l.bytes) : std::string("no size")) + " and " +
         (l.entries ? std::to_string(l.entries) + " entries" : std::string("no count"));
}

bool over(const FolderUse& u, uint64_t bytes, uint64_t entries) {
  return (bytes && u.bytes > bytes) || (entries && u.entries > entries);
}

// Measures the workspace while bash runs; past its bounds, moves the
// process's deadline to now (runProcess then kills the group).
class WorkspaceWatch {
 public:
  WorkspaceWatch(fs::path root, uint64_t bytes, uint64_t entries, std::shared_ptr<std::atomic<double>> wall)
      : root_(std::move(root)), bytes_(bytes), entries_(entries), wall_(std::move(wall)) {
    if (bytes_ || entries_) thread_ = std::thread([this] { watch(); });
  }
  ~WorkspaceWatch() { stop(); }
  void stop() {
    {
      std::lock_guard lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  // What the workspace held when it went over, if it did.
  std::optional<FolderUse> overAt() {
    std::lock_guard lock(mu_);
    return over_at_;
  }

 private:
  void watch() {
    std::unique_lock lock(mu_);
    while (!cv_.wait_for(lock, std::chrono::milliseconds(200), [this] { return done_; })) {
      lock.unlock();
      FolderUse u = measureFolder(root_, entries_ ? entries_ + 1 : 0);
      lock.lock();
      if (over(u, bytes_, entries_)) {
        over_at_ = u;
        wall_->store(0.0);
        return;
      }
    }
  }

  fs::path root_;
  uint64_t bytes_, entries_;
  std::shared_ptr<std::atomic<double>> wall_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::optional<FolderUse> over_at_;
  std::thread thread_;
};

}  // namespace

ShellResult runJailedBash(const fs::path& jail, const fs::path& workspace, const std::string& command,
                          double timeout_seconds, size_t output_limit, const WorkspaceLimits& limits) {
  ShellResult r;
  auto start = std::chrono::steady_clock::now();
  if (jail.empty()) {
    r.message = "kb-agent-jail not found (set KB_AGENT_JAIL)";
    return r;
  }
  std::string ws = workspace.string();
  std::error_code ec;
  fs::create_directories(workspace / ".tmp", ec);
  // The jail in its own process group, output merged and capped; at the
  // deadline, or once bash is gone, the whole group is killed (lib/core's
  // runProcess, which spawns every child of the tools).
  ProcessSpec spec;
  spec.argv = {jail.string(), ws, "--", "/bin/bash", "--noprofile", "--norc", "-c", command};
  spec.env = {"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + ws, "LANG=C.UTF-8",
              "TERM=dumb", "TMPDIR=" + ws + "/.tmp", "PWD=" + ws};
  spec.limits.wall_seconds = timeout_seconds;
  spec.output_limit = output_limit;
  // The workspace's bounds: a command may take it up to them, or, when it
  // starts past them, no further than it was, writing no file data (it can
  // still remove files), so that steps cannot each add what one poll misses.
  const uint64_t count_to = limits.entries ? limits.entries + 1 : 0;
  const FolderUse before = (limits.bytes || limits.entries) ? measureFolder(workspace, count_to) : FolderUse{};
  const bool already_over = over(before, limits.bytes, limits.entries);
  if (already_over) spec.limits.file_size_bytes = 1;
  auto wall = std::make_shared<std::atomic<double>>(timeout_seconds);
  spec.live_wall_seconds = wall;
  WorkspaceWatch watch(workspace, limits.bytes ? std::max(limits.bytes, before.bytes) : 0,
                       limits.entries ? std::max(limits.entries, before.entries) : 0, wall);
  ProcessResult p = runProcess(spec);
  watch.stop();
  if (std::optional<FolderUse> at = watch.overAt()) {
    r.over_limit = "stopped: " + describeUse(*at, limits);
    if (p.end == ProcessEnd::TimedOut) {  // the watch's deadline, not the command's
      p.end = ProcessEnd::Signaled;
      p.signal = SIGKILL;
    }
  } else if (limits.bytes || limits.entries) {
    FolderUse after = measureFolder(workspace, count_to);
    if (over(after, limits.bytes, limits.entries))
      r.over_limit = describeUse(after, limits) + (already_over ? " (it started over them: no file data can be written)" : "");
  }
  if (p.end == ProcessEnd::SpawnFailed) {
    r.message = p.message;
    return r;
  }
  r.started = true;
  r.output = std::move(p.output);
  r.output_bytes = p.output_bytes;
  r.output_truncated = p.output_truncated;
  r.timed_out = p.end == ProcessEnd::TimedOut;
  if (p.end == ProcessEnd::Exited) r.exit_code = p.exit_code;
  else if (p.end == ProcessEnd::Signaled) r.signal = p.signal;
  if (r.exit_code == 125 && r.output.rfind("kb-agent-jail:", 0) == 0) {
    r.started = false;
    r.message = r.output;
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

std::string jailLayers(const fs::path& jail) {
  static std::mutex mu;
  static std::map<std::string, std::string> cache;
  std::lock_guard lock(mu);
  auto it = cache.find(jail.string());
  if (it != cache.end()) return it->second;
  std::error_code ec;
  fs::path probe_dir = fs::temp_directory_path(ec) / ("kb-jail-probe-" + std::to_string(::getpid()));
  fs::create_directories(probe_dir, ec);
  std::string layers;
  if (jail.empty()) {
    layers = "unavailable: kb-agent-jail not found";
  } else {
    ProcessResult r = runHelper({jail.string(), probe_dir.string(), "--probe"}, 30.0, /*discard_stderr=*/false);
    layers = r.output.substr(0, std::min<std::size_t>(r.output.find('\n'), 511));
    while (!layers.empty() && (layers.back() == '\n' || layers.back() == '\r')) layers.pop_back();
  }
  fs::remove_all(probe_dir, ec);
  cache[jail.string()] = layers;
  return layers;
}

}  // namespace kb::agent
