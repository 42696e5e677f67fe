#include "task/scripts.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "kb_config.h"

extern char** environ;

namespace fs = std::filesystem;

namespace kb {

std::string pythonPath(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("KB_PYTHON"); env && *env) return env;
  if (fs::exists("/opt/kb-venv/bin/python3")) return "/opt/kb-venv/bin/python3";
  return "python3";
}

fs::path scriptsDir() {
  if (const char* env = std::getenv("KB_SCRIPTS_DIR"); env && *env) return env;
  return fs::path(KB_SOURCE_ROOT) / "scripts";
}

ScriptResult runScript(const std::string& python, const std::string& script,
                       const std::vector<std::string>& args,
                       const std::function<void(const Json&)>& on_line) {
  fs::path path = scriptsDir() / script;
  if (!fs::exists(path)) throw Error("missing helper script " + path.string() + " (set KB_SCRIPTS_DIR)");
  std::vector<std::string> argv_s = {python, path.string()};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);

  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw Error(std::string("pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, python.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    throw Error("cannot run " + python + ": " + std::strerror(rc) + " (set --python or KB_PYTHON)");
  }

  ScriptResult result;
  FILE* in = fdopen(fds[0], "r");
  char* buf = nullptr;
  size_t cap = 0;
  ssize_t n;
  while ((n = getline(&buf, &cap, in)) > 0) {
    std::string line(buf, static_cast<size_t>(n));
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
    if (line.empty()) continue;
    Json j = Json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_object()) {
      if (on_line) on_line(j);
      result.lines.push_back(std::move(j));
    } else {
      result.other.push_back(line);
    }
  }
  free(buf);
  fclose(in);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

TaskBundle ensureCompiled(const TaskBundle& bundle, const std::string& arch, const std::string& device,
                          const std::string& python) {
  if (!checkCompiled(bundle, arch)) return bundle;
  ScriptResult r = runScript(pythonPath(python), "baseline.py", {"--device", device, bundle.dir.string()});
  if (r.lines.empty())
    throw Error(bundle.dir.string() + ": baseline.py failed (exit " + std::to_string(r.exit_code) + ")");
  const Json& line = r.lines.front();
  std::string status = line.value("status", "");
  if (status != "ok" && status != "cached")
    throw Error(bundle.dir.string() + ": no compiled baseline for " + arch + ": " +
                line.value("reason", "?") + ": " + line.value("message", ""));
  TaskBundle fresh = openBundle(bundle.dir);
  if (auto why = checkCompiled(fresh, arch)) throw Error(*why);
  return fresh;
}

}  // namespace kb
