// Child processes with limits: spawn a program in its own process group,
// with a given environment and working directory, rlimits, a wall-clock
// deadline after which the whole group is killed, and bounded capture of what
// it prints. Every child of the tools is spawned here: compilers (lib/build),
// the candidate worker (lib/verify/worker.h), and the trusted helper
// programs (nvidia-smi, cuobjdump, the jail's probe) through runHelper; the
// caller never dies with its child. Confinement is lib/sandbox's.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace kb {

// Resource limits set in the child between fork and exec (setrlimit). Zero
// means "leave as inherited", except core_dumps, which is off unless true.
struct ProcessLimits {
  double wall_seconds = 60.0;       // then SIGKILL to the process group
  uint64_t cpu_seconds = 0;         // RLIMIT_CPU (SIGXCPU, then SIGKILL)
  uint64_t file_size_bytes = 0;     // RLIMIT_FSIZE
  uint64_t open_files = 0;          // RLIMIT_NOFILE
  uint64_t processes = 0;           // RLIMIT_NPROC (not enforced for root)
  uint64_t address_space_bytes = 0; // RLIMIT_AS
  bool core_dumps = false;          // RLIMIT_CORE 0 unless true
};

struct ProcessSpec {
  std::vector<std::string> argv;  // argv[0]: a path (no PATH search)
  std::vector<std::string> env;   // the whole environment, "NAME=value"
  std::filesystem::path cwd;      // empty: inherit
  ProcessLimits limits;
  // stdout and stderr go, merged, to one pipe; the first output_limit bytes
  // are kept, the rest is read and counted but dropped.
  std::size_t output_limit = 64 * 1024;
  // stderr goes to /dev/null instead of the output pipe (a helper whose
  // stdout is parsed and whose warnings are not wanted), or stays ours (a
  // Python helper's progress and tracebacks reach the user's terminal).
  bool discard_stderr = false;
  bool inherit_stderr = false;
  // Called with every piece of output as it arrives, before output_limit
  // applies (a caller that parses lines while the child runs).
  std::function<void(const char* data, std::size_t size)> on_output;
  // PR_SET_PDEATHSIG: the child is killed when the thread that started it
  // ends. Off for a child that outlives the call that made it (startProcess).
  bool die_with_parent = true;
  // If set, the child's fd 3 is this file, opened write-only and O_APPEND
  // (the result channel: the child appends, nothing of it can be read back
  // or rewritten through that descriptor under the sandbox). The child's
  // RLIMIT_FSIZE, where limits set one, is raised to result_limit + 1; a
  // file longer than result_limit is cut back to it (result_truncated).
  std::filesystem::path result_file;
  uint64_t result_limit = 1ull << 30;
  // The child's stdin: this descriptor when >= 0 (the caller keeps and
  // closes its copy), else /dev/null.
  int stdin_fd = -1;
  // If set, the wall-clock limit (seconds from the start) is read from here
  // at every wake-up instead of limits.wall_seconds, so that the caller can
  // move it while the child runs (a worker that waits for its library, then
  // gets its own limit). Wakes at least every 50 ms while set.
  std::shared_ptr<std::atomic<double>> live_wall_seconds;
};

enum class ProcessEnd {
  Exited,       // exit_code is set
  Signaled,     // signal is set
  TimedOut,     // the wall-clock deadline passed; the group was killed
  SpawnFailed,  // fork or exec failed; message says why
};

struct ProcessResult {
  ProcessEnd end = ProcessEnd::SpawnFailed;
  int exit_code = -1;
  int signal = 0;
  double wall_seconds = 0.0;
  double cpu_seconds = 0.0;   // user + system of the child
  uint64_t max_rss_kib = 0;
  std::string output;         // merged stdout/stderr, at most output_limit bytes
  uint64_t output_bytes = 0;  // how many it printed in all
  bool output_truncated = false;
  uint64_t result_bytes = 0;  // the result file's size when the child ended
  bool result_truncated = false;
  std::string message;        // SpawnFailed: the reason

  bool ok() const { return end == ProcessEnd::Exited && exit_code == 0; }
};

// Runs `spec` to its end. Thread-safe; never throws for anything the child
// does (SpawnFailed carries setup errors).
ProcessResult runProcess(const ProcessSpec& spec);

// Starts `spec` and leaves it running (limits other than the wall clock
// apply; nothing watches the clock): its stdout goes to `stdout_fd` (stderr
// too, unless spec says otherwise), its stdin is spec.stdin_fd. The child is
// in its own process group; the caller talks to it, kills the group and
// reaps it (lib/python's ScriptWorker). Returns the pid; throws kb::Error when
// it cannot start (message as runProcess's SpawnFailed).
int startProcess(const ProcessSpec& spec, int stdout_fd);

// A child started now that waits for one message on its stdin (a socket):
// runProcess in a thread of its own. finish() sends the message, closes the
// socket and waits for the end; destroyed unfinished, it closes the socket
// (the child reads EOF with nothing: not needed) and waits. What the child
// does before it reads its stdin overlaps the caller's work.
class WaitingProcess {
 public:
  // `spec.stdin_fd` is replaced by the socket; with `spec.live_wall_seconds`
  // set, the caller may move the limit (wallLimit()).
  explicit WaitingProcess(ProcessSpec spec);
  ~WaitingProcess();
  WaitingProcess(const WaitingProcess&) = delete;
  WaitingProcess& operator=(const WaitingProcess&) = delete;

  // False when the socket could not be made (the child never started).
  bool started() const { return fd_ >= 0; }
  double secondsSinceStart() const;
  // Sends `part` ahead of finish()'s message, which the child reads first
  // (a worker held before its GPU is named: CandidateWorker::nameDevice);
  // false when the child is gone or the socket was never made.
  bool send(const std::string& part);
  // One line the child writes on its stdin before finish() (a reference
  // worker saying it is ready: verify::ReferenceWorker::awaitReady), without
  // the newline, read a byte at a time so that nothing after it is taken;
  // std::nullopt when the child ends or closes its end first, when
  // `timeout_seconds` pass, or after more than 4 KiB without a newline.
  std::optional<std::string> awaitLine(double timeout_seconds);
  // True once the child has ended (and been reaped).
  bool ended() const { return ended_->load(); }
  // awaitLine() for one expected word: Ready when the child wrote exactly
  // `word`; Ended when it ended, closed its end or wrote something else
  // first (its end then says why); TimedOut when `timeout_seconds` passed.
  enum class Word { Ready, Ended, TimedOut };
  Word awaitWord(const std::string& word, double timeout_seconds);
  // Sends `message` (a dead child makes it short: its result says why),
  // then waits. Once. Without `respond` the socket is shut for writing at
  // once (the child reads EOF after the message); with it, every line the
  // child writes back on its stdin is answered with respond(line) + "\n", in
  // order, until the child ends (kbprof's worker asks before and after each
  // timed call: profile/timing.cpp).
  ProcessResult finish(const std::string& message,
                       const std::function<std::string(const std::string&)>& respond = {});

 private:
  int fd_ = -1, child_fd_ = -1;
  std::chrono::steady_clock::time_point started_;
  std::thread thread_;
  std::shared_ptr<std::atomic<bool>> ended_ = std::make_shared<std::atomic<bool>>(false);
  ProcessResult result_;
};

// One line read from `fd` a byte at a time, so that nothing after its
// newline is consumed (a worker's stdin carries more after it), without the
// newline; std::nullopt at end of file before a newline. Throws kb::Error
// on a read error or a line longer than `max` bytes; `what` names it.
std::optional<std::string> readLine(int fd, const std::string& what, std::size_t max = 65536);

// "SIGSEGV" for SIGSEGV, "signal 64" for one without a name.
std::string signalName(int signal);

// A short description of how a process ended: "exit 0", "killed by SIGSEGV",
// "timed out after 5.0 s".
std::string describeEnd(const ProcessResult& result);

// The environment a worker or compiler gets: only the variables in `keep`
// that are set in ours (PATH is replaced by `path` when non-empty), plus
// `set` ("NAME=value"). LD_PRELOAD and LD_AUDIT are never passed.
std::vector<std::string> scrubbedEnvironment(const std::vector<std::string>& keep,
                                             const std::vector<std::string>& set);

// `name` looked up in `path_value` (a PATH: directories separated by ':',
// an empty entry meaning "."), as execvp would; a name with a '/' is
// returned as it is. Empty when no directory holds an executable `name` (or
// `path_value` is empty).
std::filesystem::path findOnPath(const std::string& name, const std::string& path_value);

// A trusted helper program run to its end and read: argv[0] looked up on our
// PATH, our own environment, stdin /dev/null, stdout kept (up to
// `output_limit` bytes; stderr too unless `discard_stderr`), the group killed
// after `wall_seconds`. No shell: arguments are passed as they are. A program
// not found is SpawnFailed.
ProcessResult runHelper(const std::vector<std::string>& argv, double wall_seconds,
                        bool discard_stderr = true, std::size_t output_limit = 1 << 20);

// The directory of the running executable (/proc/self/exe).
std::filesystem::path selfExecutableDir();

}  // namespace kb
