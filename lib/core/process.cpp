#include "core/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/clock.h"
#include "core/error.h"

extern char** environ;

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif

namespace fs = std::filesystem;

namespace kb {
namespace {

void closeFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// A sink with a byte budget: keeps the first `limit` bytes, counts the rest.
struct Sink {
  std::string* text = nullptr;
  uint64_t limit = 0;
  uint64_t seen = 0;
  bool truncated = false;

  const std::function<void(const char*, std::size_t)>* on_data = nullptr;

  void take(const char* data, std::size_t n) {
    if (on_data && *on_data) (*on_data)(data, n);
    uint64_t room = seen < limit ? limit - seen : 0;
    std::size_t keep = n < room ? n : static_cast<std::size_t>(room);
    if (keep > 0 && text) text->append(data, keep);
    if (keep < n) truncated = true;
    seen += n;
  }
};

// Reads what is available on `fd` into `sink`; returns false at EOF or error.
bool drainOnce(int fd, Sink& sink) {
  char buf[65536];
  for (int rounds = 0; rounds < 64; ++rounds) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      sink.take(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    return false;  // EOF or error
  }
  return true;
}

void setLimit(int resource, uint64_t soft, uint64_t hard) {
  struct rlimit rl;
  rl.rlim_cur = static_cast<rlim_t>(soft);
  rl.rlim_max = static_cast<rlim_t>(hard);
  ::setrlimit(resource, &rl);
}

// Between fork and exec: only async-signal-safe calls.
[[noreturn]] void childExec(const ProcessSpec& spec, char* const* argv, char* const* envp,
                            const char* cwd, int devnull, int out_w, int res_w, int err_w,
                            pid_t parent) {
  ::setpgid(0, 0);
  if (spec.die_with_parent) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
  }
  int ew = ::fcntl(err_w, F_DUPFD_CLOEXEC, 64);
  sigset_t all;
  sigemptyset(&all);
  ::sigprocmask(SIG_SETMASK, &all, nullptr);
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  for (int s = 1; s < NSIG; ++s) ::sigaction(s, &dfl, nullptr);

  auto fail = [&](int stage) {
    int msg[2] = {stage, errno};
    ssize_t ignored = ::write(ew, msg, sizeof msg);
    (void)ignored;
    ::_exit(127);
  };
  if (ew < 0) fail(1);
  if (::dup2(spec.stdin_fd >= 0 ? spec.stdin_fd : devnull, 0) < 0 || ::dup2(out_w, 1) < 0 || (!spec.inherit_stderr && ::dup2(spec.discard_stderr ? devnull : out_w, 2) < 0)) fail(1);
  int first_free = 3;
  if (res_w >= 0) {
    // dup2 onto itself keeps close-on-exec: cleared by hand when it is 3.
    if ((res_w == 3 ? ::fcntl(3, F_SETFD, 0) : ::dup2(res_w, 3)) < 0) fail(1);
    first_free = 4;
  }
  if (ew > first_free) ::syscall(SYS_close_range, first_free, ew - 1, 0);
  ::syscall(SYS_close_range, ew + 1, ~0u, 0);
  if (cwd && ::chdir(cwd) != 0) fail(2);

  const ProcessLimits& l = spec.limits;
  if (l.cpu_seconds) setLimit(RLIMIT_CPU, l.cpu_seconds, l.cpu_seconds + 1);
  // The result file is fd 3 itself: a file limit below the channel's bound
  // would cut the channel, so it is raised to one byte past the bound (the
  // parent then sees the overflow, result_truncated).
  uint64_t file_size = l.file_size_bytes;
  if (file_size && res_w >= 0) file_size = std::max<uint64_t>(file_size, spec.result_limit + 1);
  if (file_size) setLimit(RLIMIT_FSIZE, file_size, file_size);
  if (l.open_files) setLimit(RLIMIT_NOFILE, l.open_files, l.open_files);
  if (l.processes) setLimit(RLIMIT_NPROC, l.processes, l.processes);
  if (l.address_space_bytes)
    setLimit(RLIMIT_AS, l.address_space_bytes, l.address_space_bytes);
  if (!l.core_dumps) setLimit(RLIMIT_CORE, 0, 0);

  ::execve(argv[0], argv, envp);
  fail(3);
  ::_exit(127);
}

}  // namespace

std::string signalName(int signal) {
  const char* abbrev = ::sigabbrev_np(signal);
  if (abbrev) return std::string("SIG") + abbrev;
  return "signal " + std::to_string(signal);
}

std::string describeEnd(const ProcessResult& r) {
  char buf[64];
  switch (r.end) {
    case ProcessEnd::Exited:
      return "exit " + std::to_string(r.exit_code);
    case ProcessEnd::Signaled:
      return "killed by " + signalName(r.signal);
    case ProcessEnd::TimedOut:
      std::snprintf(buf, sizeof buf, "timed out after %.1f s", r.wall_seconds);
      return buf;
    case ProcessEnd::SpawnFailed:
      return "could not start: " + r.message;
  }
  return "unknown";
}

std::vector<std::string> scrubbedEnvironment(const std::vector<std::string>& keep,
                                             const std::vector<std::string>& set) {
  std::vector<std::string> env;
  for (const auto& name : keep) {
    if (name == "LD_PRELOAD" || name == "LD_AUDIT") continue;
    if (const char* v = std::getenv(name.c_str())) env.push_back(name + "=" + v);
  }
  for (const auto& kv : set) {
    std::string name = kv.substr(0, kv.find('='));
    std::erase_if(env, [&](const std::string& e) { return e.compare(0, name.size() + 1, name + "=") == 0; });
    env.push_back(kv);
  }
  return env;
}

fs::path findOnPath(const std::string& name, const std::string& path_value) {
  if (name.find('/') != std::string::npos) return name;
  if (name.empty() || path_value.empty()) return {};
  std::size_t start = 0;
  while (start <= path_value.size()) {
    std::size_t end = path_value.find(':', start);
    if (end == std::string::npos) end = path_value.size();
    std::string dir = path_value.substr(start, end - start);
    fs::path candidate = fs::path(dir.empty() ? "." : dir) / name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return {};
}

ProcessResult runHelper(const std::vector<std::string>& argv, double wall_seconds, bool discard_stderr,
                        std::size_t output_limit) {
  ProcessSpec spec;
  spec.argv = argv;
  if (spec.argv.empty()) {
    ProcessResult r;
    r.message = "no program given";
    return r;
  }
  const char* path = std::getenv("PATH");
  fs::path program = findOnPath(spec.argv.front(), path ? path : "/usr/bin:/bin");
  if (program.empty()) {
    ProcessResult r;
    r.message = spec.argv.front() + " not found on PATH";
    return r;
  }
  spec.argv.front() = program.string();
  for (char** e = environ; e && *e; ++e) spec.env.emplace_back(*e);
  spec.limits.wall_seconds = wall_seconds;
  spec.output_limit = output_limit;
  spec.discard_stderr = discard_stderr;
  return runProcess(spec);
}

fs::path selfExecutableDir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path();
}

namespace {

// Forks and execs `spec` with stdout on `out_w` and, when res_w >= 0, fd 3 on
// res_w; the child in its own process group. The pid, or -1 with `message`.
pid_t spawnChild(const ProcessSpec& spec, int out_w, int res_w, std::string& message) {
  if (spec.argv.empty()) {
    message = "empty command line";
    return -1;
  }
  // Everything the child needs, prepared before fork.
  std::vector<char*> argv, envp;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : spec.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  std::string cwd = spec.cwd.string();
  int err[2] = {-1, -1};
  int devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (devnull < 0 || ::pipe2(err, O_CLOEXEC) != 0) {
    message = std::string("pipe: ") + std::strerror(errno);
    closeFd(devnull);
    return -1;
  }
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    message = std::string("fork: ") + std::strerror(errno);
    closeFd(err[0]); closeFd(err[1]); closeFd(devnull);
    return -1;
  }
  if (pid == 0)
    childExec(spec, argv.data(), envp.data(), cwd.empty() ? nullptr : cwd.c_str(), devnull, out_w, res_w,
              err[1], parent);

  // Parent. Put the child in its own group from here too (no race with kill).
  ::setpgid(pid, pid);
  closeFd(err[1]);
  closeFd(devnull);
  // Exec failure is reported over the CLOEXEC pipe; EOF means exec worked.
  int msg[2] = {0, 0};
  ssize_t n;
  do n = ::read(err[0], msg, sizeof msg);
  while (n < 0 && errno == EINTR);
  closeFd(err[0]);
  if (n == static_cast<ssize_t>(sizeof msg)) {
    const char* what = msg[0] == 2 ? "chdir " : msg[0] == 3 ? "exec " : "setup ";
    message = std::string(what) + (msg[0] == 2 ? cwd : msg[0] == 3 ? spec.argv[0] : "") + ": " +
              std::strerror(msg[1]);
    int st;
    ::waitpid(pid, &st, 0);
    return -1;
  }
  return pid;
}

}  // namespace

int startProcess(const ProcessSpec& spec, int stdout_fd) {
  std::string message;
  pid_t pid = spawnChild(spec, stdout_fd, -1, message);
  if (pid < 0) throw Error(message);
  return pid;
}

ProcessResult runProcess(const ProcessSpec& spec) {
  ProcessResult r;
  auto t0 = Clock::now();
  int out[2] = {-1, -1};
  int result_file = -1;
  auto cleanup = [&] {
    closeFd(out[0]); closeFd(out[1]); closeFd(result_file);
  };
  if (::pipe2(out, O_CLOEXEC) != 0) {
    r.message = std::string("pipe: ") + std::strerror(errno);
    cleanup();
    return r;
  }
  if (!spec.result_file.empty()) {
    // The child writes the channel itself, append-only: no pipe between, no
    // copy by this process (a pipe drained into the file moved ~1.4 GB/s on
    // the H200 machine, most of a large task's timed loop). Appended bytes
    // stay where they are: the child's descriptor is write-only (no read,
    // no mmap), O_APPEND (write and pwrite land at the end), and the
    // sandbox refuses what could clear that or shorten the file (fcntl
    // F_SETFL, ftruncate, fallocate, pwritev2's RWF_NOAPPEND: confine.cpp).
    // (A new read-only open of the file, through /proc/self/fd/3, reads back
    // what the child wrote: nothing it did not hold. The file stays readable
    // to its owner: kbprof's pacer reads it by path while the child runs.)
    result_file = ::open(spec.result_file.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (result_file < 0) {
      r.message = "cannot open result file " + spec.result_file.string() + ": " + std::strerror(errno);
      cleanup();
      return r;
    }
  }
  // (The child's fd 3 is dup2'd from result_file: close-on-exec stays ours.)
  pid_t pid = spawnChild(spec, out[1], result_file, r.message);
  closeFd(out[1]);
  if (pid < 0) {
    cleanup();
    r.wall_seconds = since(t0);
    return r;
  }
  ::fcntl(out[0], F_SETFL, O_NONBLOCK);

  Sink out_sink{&r.output, spec.output_limit};
  out_sink.on_data = &spec.on_output;
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  auto deadline = t0 + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(spec.limits.wall_seconds));
  bool out_open = true, exited = false, timed_out = false;
  int status = 0;
  struct rusage ru{};

  auto reap = [&](int flags) {
    pid_t w;
    do w = ::wait4(pid, &status, flags, &ru);
    while (w < 0 && errno == EINTR);
    return w == pid;
  };

  while (!exited) {
    auto now = Clock::now();
    if (spec.live_wall_seconds)
      deadline = t0 + std::chrono::duration_cast<Clock::duration>(
                          std::chrono::duration<double>(spec.live_wall_seconds->load()));
    if (now >= deadline) {
      timed_out = true;
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
      reap(0);
      exited = true;
      break;
    }
    int wait_ms = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count()) + 1;
    if (pidfd < 0 && wait_ms > 20) wait_ms = 20;
    if (spec.live_wall_seconds && wait_ms > 50) wait_ms = 50;
    struct pollfd fds[2];
    int n = 0, i_out = -1, i_pid = -1;
    if (out_open) { fds[n] = {out[0], POLLIN, 0}; i_out = n++; }
    if (pidfd >= 0) { fds[n] = {pidfd, POLLIN, 0}; i_pid = n++; }
    int p = ::poll(fds, n, wait_ms);
    if (p < 0 && errno != EINTR) break;
    if (i_out >= 0 && fds[i_out].revents) out_open = drainOnce(out[0], out_sink);
    if (pidfd < 0 || (i_pid >= 0 && fds[i_pid].revents)) {
      if (reap(WNOHANG)) exited = true;
    }
  }
  // The main child is gone: kill whatever it left in its group, then read
  // the output pipe to EOF (bounded by a short grace period).
  ::kill(-pid, SIGKILL);
  auto grace = Clock::now() + std::chrono::seconds(2);
  while (out_open && Clock::now() < grace) {
    struct pollfd fd{out[0], POLLIN, 0};
    if (::poll(&fd, 1, 100) < 0 && errno != EINTR) break;
    if (fd.revents) out_open = drainOnce(out[0], out_sink);
  }
  // The channel as the child left it; at most result_limit bytes are kept.
  // (The child cannot fork, so nothing of its group writes after this.)
  if (result_file >= 0) {
    struct stat st{};
    if (::fstat(result_file, &st) == 0) r.result_bytes = static_cast<uint64_t>(st.st_size);
    if (r.result_bytes > spec.result_limit) {
      r.result_truncated = true;
      (void)!::ftruncate(result_file, static_cast<off_t>(spec.result_limit));
    }
  }
  if (pidfd >= 0) ::close(pidfd);
  cleanup();

  r.wall_seconds = since(t0);
  r.cpu_seconds = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + ru.ru_stime.tv_sec +
                  ru.ru_stime.tv_usec * 1e-6;
  r.max_rss_kib = static_cast<uint64_t>(ru.ru_maxrss);
  r.output_bytes = out_sink.seen;
  r.output_truncated = out_sink.truncated;
  if (timed_out) {
    r.end = ProcessEnd::TimedOut;
    r.signal = SIGKILL;
  } else if (WIFEXITED(status)) {
    r.end = ProcessEnd::Exited;
    r.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    r.end = ProcessEnd::Signaled;
    r.signal = WTERMSIG(status);
  } else {
    r.end = ProcessEnd::SpawnFailed;
    r.message = "lost track of the child";
  }
  return r;
}

WaitingProcess::WaitingProcess(ProcessSpec spec) : started_(std::chrono::steady_clock::now()) {
  // A socket, not a pipe: a child that died makes send() fail with EPIPE
  // instead of killing the caller with SIGPIPE.
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    result_.message = std::string("socketpair: ") + std::strerror(errno);
    return;
  }
  fd_ = fds[0];
  child_fd_ = fds[1];
  spec.stdin_fd = child_fd_;
  thread_ = std::thread([this, spec, ended = ended_] {
    result_ = runProcess(spec);
    ended->store(true);
  });
}

WaitingProcess::~WaitingProcess() {
  if (fd_ >= 0) ::close(fd_);  // EOF with nothing: not needed
  if (thread_.joinable()) thread_.join();
  if (child_fd_ >= 0) ::close(child_fd_);
}

double WaitingProcess::secondsSinceStart() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
}

namespace {

// Sends all of `s`; false when the peer is gone.
bool sendAll(int fd, const std::string& s) {
  for (std::size_t sent = 0; sent < s.size();) {
    ssize_t n = ::send(fd, s.data() + sent, s.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    sent += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

std::optional<std::string> readLine(int fd, const std::string& what, std::size_t max) {
  std::string line;
  char c;
  for (;;) {
    ssize_t n = ::read(fd, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error("reading " + what + ": " + std::strerror(errno));
    if (n == 0) return std::nullopt;
    if (c == '\n') return line;
    if (line.size() >= max) throw Error(what + ": a line longer than " + std::to_string(max) + " bytes");
    line.push_back(c);
  }
}

bool WaitingProcess::send(const std::string& part) { return fd_ >= 0 && sendAll(fd_, part); }

std::optional<std::string> WaitingProcess::awaitLine(double timeout_seconds) {
  if (fd_ < 0) return std::nullopt;
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  std::string line;
  while (line.size() < 4096) {
    const auto left = std::chrono::duration<double>(until - std::chrono::steady_clock::now()).count();
    if (left <= 0) return std::nullopt;
    pollfd p{fd_, POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(std::min(left * 1000.0, 50.0)) + 1);
    if (r < 0 && errno != EINTR) return std::nullopt;
    if (r <= 0) {
      if (ended_->load()) return std::nullopt;  // (what it wrote before its end was read first)
      continue;
    }
    char c;
    ssize_t n = ::recv(fd_, &c, 1, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    if (c == '\n') return line;
    line.push_back(c);
  }
  return std::nullopt;
}

WaitingProcess::Word WaitingProcess::awaitWord(const std::string& word, double timeout_seconds) {
  const auto t0 = std::chrono::steady_clock::now();
  std::optional<std::string> line = awaitLine(timeout_seconds);
  if (line == word) return Word::Ready;
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return line || ended() || waited < timeout_seconds ? Word::Ended : Word::TimedOut;
}

ProcessResult WaitingProcess::finish(const std::string& message,
                                     const std::function<std::string(const std::string&)>& respond) {
  if (fd_ < 0) return result_;
  bool alive = sendAll(fd_, message);  // a dead child: its end says why
  if (alive && respond) {
    // Answer the child's questions, one line each, in order, while it runs;
    // a line longer than 64 KiB ends the conversation.
    std::string line;
    while (!ended_->load() && line.size() < (64u << 10)) {
      pollfd p{fd_, POLLIN, 0};
      int r = ::poll(&p, 1, 50);
      if (r < 0 && errno != EINTR) break;
      if (r <= 0) continue;
      char buf[4096];
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;  // the child closed its end or is gone
      line.append(buf, static_cast<std::size_t>(n));
      bool gone = false;
      for (auto nl = line.find('\n'); nl != std::string::npos; nl = line.find('\n')) {
        std::string question = line.substr(0, nl);
        line.erase(0, nl + 1);
        if (!sendAll(fd_, respond(question) + "\n")) {
          gone = true;
          break;
        }
      }
      if (gone) break;
    }
  }
  ::shutdown(fd_, SHUT_WR);
  if (thread_.joinable()) thread_.join();
  ::close(fd_);
  fd_ = -1;
  ::close(child_fd_);
  child_fd_ = -1;
  return result_;
}

}  // namespace kb
