#include "agent/shell.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>

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

ShellResult runJailedBash(const fs::path& jail, const fs::path& workspace, const std::string& command,
                          double timeout_seconds, size_t output_limit) {
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
  ProcessResult p = runProcess(spec);
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
