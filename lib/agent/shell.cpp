#include "agent/shell.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "core/paths.h"

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

ShellResult runJailedBash(const fs::path& jail, const fs::path& workspace, const std::string& command,
                          double timeout_seconds, size_t output_limit) {
  ShellResult r;
  auto start = std::chrono::steady_clock::now();
  if (jail.empty()) {
    r.message = "kb-agent-jail not found (set KB_AGENT_JAIL)";
    return r;
  }
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    r.message = std::string("pipe: ") + std::strerror(errno);
    return r;
  }
  std::string ws = workspace.string();
  std::vector<std::string> args = {jail.string(), ws, "--", "/bin/bash", "--noprofile", "--norc", "-c", command};
  std::vector<std::string> env = {"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + ws, "LANG=C.UTF-8",
                                  "TERM=dumb", "TMPDIR=" + ws + "/.tmp", "PWD=" + ws};
  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::error_code ec;
  fs::create_directories(workspace / ".tmp", ec);

  pid_t pid = ::fork();
  if (pid < 0) {
    r.message = std::string("fork: ") + std::strerror(errno);
    ::close(fds[0]);
    ::close(fds[1]);
    return r;
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    int devnull = ::open("/dev/null", O_RDONLY);
    ::dup2(devnull, 0);
    ::dup2(fds[1], 1);
    ::dup2(fds[1], 2);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  ::close(fds[1]);
  r.started = true;
  auto deadline = start + std::chrono::duration<double>(timeout_seconds);
  char buf[65536];
  bool open = true, reaped = false;
  int status = 0;
  while (open) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      r.timed_out = true;
      break;
    }
    struct pollfd p = {fds[0], POLLIN, 0};
    int n = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 200)));
    if (n < 0 && errno != EINTR) break;
    if (n == 0) {
      // bash is gone but something it started still holds the output open.
      if (!reaped && ::waitpid(pid, &status, WNOHANG) == pid) reaped = true;
      if (reaped) break;
      continue;
    }
    if (n < 0) continue;
    ssize_t got = ::read(fds[0], buf, sizeof buf);
    if (got <= 0) {
      open = false;
      break;
    }
    r.output_bytes += static_cast<uint64_t>(got);
    size_t room = output_limit > r.output.size() ? output_limit - r.output.size() : 0;
    r.output.append(buf, std::min(room, static_cast<size_t>(got)));
    if (static_cast<size_t>(got) > room) r.output_truncated = true;
  }
  // The output is closed: let bash finish exiting (within the deadline), then
  // whatever is left of its group goes.
  while (!reaped && !r.timed_out) {
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      reaped = true;
      break;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      r.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ::kill(-pid, SIGKILL);
  if (!reaped) ::waitpid(pid, &status, 0);
  ::close(fds[0]);
  if (!r.timed_out) {
    if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
    else if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  }
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
    std::string cmd = "'" + jail.string() + "' '" + probe_dir.string() + "' --probe 2>&1";
    FILE* f = ::popen(cmd.c_str(), "r");
    char line[512] = {0};
    if (f && std::fgets(line, sizeof line, f)) layers = line;
    if (f) ::pclose(f);
    while (!layers.empty() && (layers.back() == '\n' || layers.back() == '\r')) layers.pop_back();
  }
  fs::remove_all(probe_dir, ec);
  cache[jail.string()] = layers;
  return layers;
}

}  // namespace kb::agent
