#include "python/scripts.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "core/json.h"
#include "core/paths.h"
#include "core/process.h"
#include "core/report.h"
#include "core/scratch_dir.h"

extern char** environ;

namespace fs = std::filesystem;

namespace kb::python {

std::string pythonPath(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("KB_PYTHON"); env && *env) return env;
  if (fs::exists("/opt/kb-venv/bin/python3")) return "/opt/kb-venv/bin/python3";
  return "python3";
}

fs::path scriptsDir() {
  if (const char* env = std::getenv("KB_SCRIPTS_DIR"); env && *env) return env;
  return dataPath("scripts");
}

namespace {

// {python, scripts/<script>, args...}; throws when the script is missing.
std::vector<std::string> scriptArgv(const std::string& python, const std::string& script,
                                    const std::vector<std::string>& args) {
  fs::path path = scriptsDir() / script;
  if (!fs::exists(path)) throw Error("missing helper script " + path.string() + " (set KB_SCRIPTS_DIR)");
  std::vector<std::string> argv = {python, path.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

// scriptArgv with the interpreter found on PATH (as execvp would); throws
// when it is not there.
std::vector<std::string> resolvedArgv(const std::string& python, const std::string& script,
                                      const std::vector<std::string>& args) {
  std::vector<std::string> argv = scriptArgv(python, script, args);
  const char* path = std::getenv("PATH");
  fs::path found = findOnPath(python, path ? path : "/usr/bin:/bin");
  if (found.empty())
    throw Error("cannot run " + python + ": not found on PATH (set --python or KB_PYTHON)");
  argv.front() = found.string();
  return argv;
}

// Our environment with `env` replacing (or adding) its variables.
std::vector<std::string> environmentWith(const EnvOverrides& env) {
  std::vector<std::string> out;
  for (char** e = environ; *e; ++e) {
    std::string entry = *e;
    std::string name = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const auto& [k, v] : env) replaced = replaced || k == name;
    if (!replaced) out.push_back(std::move(entry));
  }
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

}  // namespace

ScriptResult runScript(const std::string& python, const std::string& script,
                       const std::vector<std::string>& args,
                       const std::function<void(const Json&)>& on_line, const EnvOverrides& env) {
  ProcessSpec spec;
  spec.argv = resolvedArgv(python, script, args);
  spec.env = environmentWith(env);
  spec.inherit_stderr = true;       // tracebacks and progress reach the user
  spec.limits.wall_seconds = 1e9;   // no limit: the script decides (a baseline build takes minutes)
  spec.output_limit = 0;            // stdout is parsed line by line below, not kept
  spec.die_with_parent = false;     // as before: it may outlive a pool thread's call

  // Every stdout line: a JSON object, or kept as other text.
  ScriptResult result;
  std::string pending;
  auto take_line = [&](std::string line) {
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
    if (line.empty()) return;
    Json j = Json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_object()) {
      if (on_line) on_line(j);
      result.lines.push_back(std::move(j));
    } else {
      result.other.push_back(line);
    }
  };
  spec.on_output = [&](const char* data, std::size_t n) {
    pending.append(data, n);
    for (std::size_t nl; (nl = pending.find('\n')) != std::string::npos;) {
      take_line(pending.substr(0, nl));
      pending.erase(0, nl + 1);
    }
  };
  ProcessResult r = runProcess(spec);
  if (r.end == ProcessEnd::SpawnFailed)
    throw Error("cannot run " + python + ": " + r.message + " (set --python or KB_PYTHON)");
  take_line(pending);
  result.exit_code = r.end == ProcessEnd::Exited ? r.exit_code : 128 + r.signal;
  return result;
}

ScriptWorker::ScriptWorker(const std::string& python, const std::string& script,
                           const std::vector<std::string>& args, const EnvOverrides& env) {
  int sv[2], outp[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    throw Error(std::string("socketpair: ") + std::strerror(errno));
  if (pipe2(outp, O_CLOEXEC) != 0) {
    close(sv[0]);
    close(sv[1]);
    throw Error(std::string("pipe: ") + std::strerror(errno));
  }
  ProcessSpec spec;
  try {
    spec.argv = resolvedArgv(python, script, args);
  } catch (...) {
    for (int fd : {sv[0], sv[1], outp[0], outp[1]}) close(fd);
    throw;
  }
  // A temporary folder of its own, named to it as $TMPDIR and removed once
  // it is reaped: what it leaves there goes with it. When this process is
  // killed too (a stop, a timeout, the out-of-memory killer) before it can
  // reap, the folder's lock dies with it and the next worker made reclaims
  // it (core/scratch_dir.h).
  const char* tmp = std::getenv("TMPDIR");
  try {
    tmpdir_ = makeScratchDir(tmp && *tmp ? tmp : "/tmp", "kbworker");
  } catch (const Error& e) {
    for (int fd : {sv[0], sv[1], outp[0], outp[1]}) close(fd);
    throw Error("cannot make a temporary folder for " + script + ": " + e.what());
  }
  spec.env = environmentWith(env);
  std::erase_if(spec.env, [](const std::string& e) { return e.rfind("TMPDIR=", 0) == 0; });
  spec.env.push_back("TMPDIR=" + tmpdir_.path.string());
  spec.stdin_fd = sv[1];
  spec.inherit_stderr = true;
  spec.die_with_parent = false;  // lives as long as this object, whichever thread made it
  int pid = -1;
  std::string error;
  try {
    pid = startProcess(spec, outp[1]);
  } catch (const Error& e) {
    error = e.what();
  }
  close(sv[1]);
  close(outp[1]);
  if (pid < 0) {
    close(sv[0]);
    close(outp[0]);
    std::error_code ec;
    fs::remove_all(tmpdir_.path, ec);
    throw Error("cannot run " + python + ": " + error + " (set --python or KB_PYTHON)");
  }
  pid_ = pid;
  in_ = sv[0];
  out_ = outp[0];
}

ScriptWorker::~ScriptWorker() {
  if (!reaped_) kill();
  if (in_ >= 0) close(in_);
  if (out_ >= 0) close(out_);
}

bool ScriptWorker::send(const std::string& line) {
  if (in_ < 0) return false;
  std::string data = line + "\n";
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::send(in_, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

ScriptWorker::Read ScriptWorker::readLine(std::string& line, double timeout_s) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(std::max(0.0, timeout_s));
  for (;;) {
    if (auto nl = buf_.find('\n'); nl != std::string::npos) {
      line = buf_.substr(0, nl);
      buf_.erase(0, nl + 1);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      return Read::line;
    }
    if (out_ < 0) return Read::eof;
    double left = std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) return Read::timeout;
    pollfd p{out_, POLLIN, 0};
    int r = poll(&p, 1, static_cast<int>(std::min(left * 1000.0, 60000.0)) + 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    char chunk[65536];
    ssize_t n = read(out_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      close(out_);
      out_ = -1;
      if (!buf_.empty()) {  // a last line without its newline
        line.swap(buf_);
        buf_.clear();
        return Read::line;
      }
      return Read::eof;
    }
    buf_.append(chunk, static_cast<size_t>(n));
  }
}

void ScriptWorker::kill() {
  if (reaped_ || pid_ <= 0) return;
  ::kill(-pid_, SIGKILL);
  ::kill(pid_, SIGKILL);
  wait();
}

int ScriptWorker::wait() {
  if (in_ >= 0) {
    close(in_);
    in_ = -1;
  }
  if (!reaped_ && pid_ > 0) {
    while (waitpid(pid_, &status_, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
    std::error_code ec;
    fs::remove_all(tmpdir_.path, ec);
    tmpdir_.owner.reset();
  }
  return WIFEXITED(status_) ? WEXITSTATUS(status_) : 128 + WTERMSIG(status_);
}

namespace {

// baseline.py once, without its "building" lines.
ScriptResult runBaselineScriptOnce(const std::string& python, const std::vector<std::string>& args,
                                   const std::function<void(const Json&)>& on_line, const EnvOverrides& env) {
  ScriptResult r = runScript(python, "baseline.py", args, on_line, env);
  std::erase_if(r.lines, [](const Json& line) { return line.contains("building"); });
  return r;
}

}  // namespace

bool otherCxxThanSystem() {
  const char* cxx = std::getenv("CXX");
  if (!cxx || !*cxx || !fs::exists("/usr/bin/c++")) return false;
  std::error_code ec;
  return !fs::equivalent(cxx, "/usr/bin/c++", ec);
}

ScriptResult runBaselineScript(const std::string& python, const std::vector<std::string>& args,
                               const std::function<void(const Json&)>& on_line, const EnvOverrides& env) {
  // Result lines only: baseline.py's "building" lines are for kbsynth's pool.
  auto results = [&](const Json& line) {
    if (on_line && !line.contains("building")) on_line(line);
  };
  ScriptResult r = runBaselineScriptOnce(python, args, results, env);
  if (r.exit_code < 128 || !otherCxxThanSystem()) return r;
  const char* cxx = std::getenv("CXX");
  EnvOverrides with_cxx = env;
  with_cxx.emplace_back("CXX", "/usr/bin/c++");
  with_cxx.emplace_back("CC", "/usr/bin/cc");
  ScriptResult again = runBaselineScriptOnce(python, args, results, with_cxx);
  again.note = std::string(" (baseline.py was killed by signal ") + std::to_string(r.exit_code - 128) +
               " with CXX=" + cxx + "; run again with /usr/bin/c++)";
  return again;
}

task::TaskBundle ensureCompiled(const task::TaskBundle& bundle, const std::string& arch, const std::string& device,
                          const std::string& python) {
  if (!task::checkCompiled(bundle, arch)) return bundle;
  const fs::path failed = bundle.dir / "compiled" / (arch + ".failed.json");
  const std::string model = bundle.info.json.value("files", Json::object()).value("model.py", "");
  const std::string py = pythonPath(python);
  if (fs::exists(failed)) {
    Json rec;
    try {
      rec = readJsonFile(failed);
    } catch (const Error&) {
    }
    // Not one that may have been other builds' doing (baseline.py's retry_alone).
    if (rec.is_object() && rec.value("model", "") == model && rec.value("python", "") == py &&
        !rec.value("retry_alone", false))
      throw Error(bundle.dir.string() + ": no compiled baseline for " + arch + ": the build failed before (" +
                  rec.value("at", "?") + "): " + rec.value("error", "?") + " [delete " + failed.string() +
                  " to try again]");
  }
  ScriptResult r = runBaselineScript(py, {"--device", device, bundle.dir.string()});
  std::string error;
  if (r.lines.empty()) {
    error = "baseline.py failed (exit " + std::to_string(r.exit_code) + ")" + r.note;
  } else if (std::string status = r.lines.front().value("status", ""); status != "ok" && status != "cached") {
    error = r.lines.front().value("reason", "?") + ": " + r.lines.front().value("message", "") + r.note;
  } else {
    task::TaskBundle fresh = task::openBundle(bundle.dir);
    if (auto why = task::checkCompiled(fresh, arch)) throw Error(*why);
    std::error_code ec;
    fs::remove(failed, ec);
    return fresh;
  }
  // baseline.py records its own failures but an internal_error (and none
  // when it gave no line).
  const bool recorded = !r.lines.empty() && r.lines.front().value("reason", "") != "internal_error";
  Json rec = {{"model", model}, {"python", py}, {"arch", arch}, {"error", error}, {"at", nowIso8601()}};
  if (!recorded) {
    try {  // best effort: a read-only bundle tries again next time
      fs::create_directories(failed.parent_path());
      writeJsonFile(failed, rec);
    } catch (const std::exception&) {
    }
  }
  throw Error(bundle.dir.string() + ": no compiled baseline for " + arch + ": " + error);
}

}  // namespace kb::python
