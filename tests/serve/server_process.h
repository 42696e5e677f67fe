// A real kbserve process for the API tests: started on a free loopback port
// with its own state directory, talked to with cpp-httplib's client, killed
// or stopped the way a test needs.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

#include "core/json.h"

extern char** environ;

namespace kbtest {

inline std::string sourceRoot() {
  const char* s = std::getenv("KB_SOURCE_ROOT");
  return s ? s : KB_TEST_SOURCE_ROOT;
}

inline std::string readText(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::string solutionSource(const std::string& name) {
  return readText(std::filesystem::path(sourceRoot()) / "testdata/solutions-cpu" / name / "forward.cpp");
}

class ServerProcess {
 public:
  // Starts `kbserve --listen 127.0.0.1:0 --tasks testdata/tasks --state-dir STATE --gpus none ARGS...`.
  ServerProcess(const std::filesystem::path& state, std::vector<std::string> extra = {}) : state_(state) {
    const char* bin = std::getenv("KBSERVE_BIN");
    if (!bin) throw std::runtime_error("KBSERVE_BIN is not set");
    std::vector<std::string> args = {bin, "--listen", "127.0.0.1:0", "--tasks", sourceRoot() + "/testdata/tasks",
                                      "--state-dir", state.string(), "--gpus", "none"};
    args.insert(args.end(), extra.begin(), extra.end());
    std::filesystem::create_directories(state.parent_path());
    log_ = state.string() + ".log." + std::to_string(++starts_);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 2, log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), environ) != 0)
      throw std::runtime_error("cannot start " + args[0]);
    posix_spawn_file_actions_destroy(&fa);
    for (int i = 0; i < 600 && port_ == 0; ++i) {
      std::string text = readText(log_);
      auto at = text.find("listening on http://127.0.0.1:");
      if (at != std::string::npos) port_ = std::stoi(text.substr(at + 30));
      int status = 0;
      if (port_ == 0 && ::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        throw std::runtime_error("kbserve exited at start: " + text);
      }
      if (port_ == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (port_ == 0) throw std::runtime_error("kbserve did not say where it listens: " + readText(log_));
  }
  ~ServerProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  std::string log() const { return readText(log_); }
  httplib::Client client(double read_timeout_s = 120) const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(std::chrono::milliseconds(static_cast<int>(read_timeout_s * 1000)));
    c.set_connection_timeout(5);
    return c;
  }
  void kill9() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  // SIGTERM, then the exit code (-1 when it did not exit in `seconds`).
  int terminate(double seconds) {
    ::kill(pid_, SIGTERM);
    for (int i = 0; i < seconds * 20; ++i) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return -1;
  }

 private:
  std::filesystem::path state_;
  std::string log_;
  pid_t pid_ = -1;
  int port_ = 0;
  static inline int starts_ = 0;
};

inline kb::Json evaluationBody(const std::string& task, const std::string& source, kb::Json extra = kb::Json::object()) {
  kb::Json j = {{"task", task}, {"device", "cpu"}, {"files", {{"forward.cpp", source}}}};
  for (auto& [k, v] : extra.items()) j[k] = v;
  return j;
}

inline kb::Json parse(const httplib::Result& r) {
  if (!r) throw std::runtime_error("no answer: " + httplib::to_string(r.error()));
  return kb::Json::parse(r->body);
}

}  // namespace kbtest
