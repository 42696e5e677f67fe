// The candidate worker: one child process per candidate, in which the built
// solution runs over harness-owned tensors (kb/solution.h backed by
// LibTorch), and nothing else.
//
// Parent side (torch-free): runWorker() writes a request, starts the worker
// binary (kbcheck-worker) in its own process group and session with a
// scrubbed environment, a fresh working directory and rlimits, waits for its
// end under a wall-clock limit, reads what it sent back (verify/wire.h)
// and classifies the end.
//
// Worker side (workerMain, worker.cpp, the LibTorch translation unit):
//   start-up   read the request, open the task, load the reference's
//              parameters and buffers, set up the device (stream, cuBLAS,
//              cuBLASLt, cuDNN handles)
//   confine    lower rlimits, drop capabilities, Landlock, seccomp
//              (sandbox/confine.h); then send "hello"
//   candidate  dlopen solution.so (RTLD_LOCAL), kb_init once, then for each
//              seed: fresh inputs, kb_forward, synchronise, send outputs
//              and the inputs as they are after the call
// Candidate code (including the library's static constructors) runs only
// after "hello", so nothing that happens after it is ever an infra_error.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/report.h"
#include "verify/wire.h"
#include "core/process.h"
#include "core/scratch_dir.h"

namespace kb::task {
class Task;
class Reference;
class CallInputs;
}  // namespace kb::task

namespace kb::verify {

struct WorkerRequest {
  std::filesystem::path task_dir;
  std::filesystem::path library;        // solution.so
  std::string device = "cpu";           // "cpu" or "cuda:N"
  std::vector<uint64_t> seeds;
  uint64_t max_output_bytes = 1ull << 30;   // all outputs of one call
  uint64_t max_scratch_bytes = 1ull << 30;  // scratch of one call (and state, in init)
  uint64_t memory_budget_bytes = 8ull << 30;  // host memory above start-up use
  bool seccomp = true;
  bool landlock = true;
  bool allow_open_rdwr = false;
  // Nothing beneath these may be read once confined, save the library's own
  // directory (sandbox::ConfinePolicy::hidden_dirs): a shared server's other
  // clients' files.
  std::vector<std::string> hidden_dirs;
  // The library's path comes on stdin after the trusted start-up
  // (CandidateWorker); `library` is empty then.
  bool library_on_stdin = false;
  // The device comes first on stdin, one line ("cuda:N" or "cpu"), and the
  // worker makes no CUDA call before it: a worker started ahead of its GPU
  // lease (CandidateWorker::nameDevice); `device` is a placeholder until then.
  bool device_on_stdin = false;
  // kbprof: the timing phase after the seeds (verify/worker_internal.h,
  // docs/kbprof.md "profile request"); null for verification.
  Json profile;

  Json toJson() const;
  static WorkerRequest fromJson(const Json& j);
};

struct WorkerLimits {
  double wall_seconds = 60.0;          // whole worker, start-up included
  uint64_t cpu_seconds = 60;           // RLIMIT_CPU
  uint64_t file_size_bytes = 1 << 20;  // RLIMIT_FSIZE
  uint64_t processes = 0;              // RLIMIT_NPROC (0: inherited)
  std::size_t output_limit = 64 * 1024;  // stdout+stderr kept
  uint64_t result_limit = 4ull << 30;    // result channel kept
};

// One candidate's run, as the parent saw it.
struct WorkerRun {
  ProcessResult process;
  std::vector<WireRecord> records;
  std::string protocol_problem;  // the result channel was malformed
  bool started = false;          // "hello" arrived: candidate code may have run
  bool finished = false;         // "done" arrived
  Json hello;                    // the hello record's header
  // The end, classified: ok (finished cleanly), timeout, crash,
  // runtime_error, hack_detected (a blocked system call, a forged or
  // duplicated record) or infra_error (the worker failed before "hello").
  Status status = Status::InfraError;
  std::string message;
  std::string blocked_syscall;   // the name from the SIGSYS report, if any
  std::filesystem::path dir;     // its directory (removed unless keep_dir)
  // The lock that marks `dir` in use (core/scratch_dir.h): once the last copy
  // is gone, a later run may reclaim a directory left behind.
  std::shared_ptr<const ScratchOwner> dir_owner;
  Json toJson() const;           // the "worker" object of the verify report
};

// Runs `binary candidate REQUEST` in a fresh directory under `scratch`:
// request.json, result.bin (the result channel) and work/ (the worker's
// working directory), removed afterwards unless keep_dir. Never throws for
// what the worker does.
WorkerRun runWorker(const WorkerRequest& request, const WorkerLimits& limits,
                    const std::filesystem::path& binary, const std::filesystem::path& scratch,
                    bool keep_dir = false);

// A candidate worker started before its library exists, so that its
// trusted start-up (LibTorch, CUDA, the task, the input sets, kbprof's timing
// set-up) overlaps the build. It waits on stdin for the library's path and
// only then confines itself and loads candidate code. Its wall-clock limit
// is `wait_seconds` more until finish(), then `limits.wall_seconds` from
// there. Destroyed unfinished (the build failed): stdin is closed and the
// worker exits before any candidate code, its directory removed.
class CandidateWorker {
 public:
  CandidateWorker(WorkerRequest request, const WorkerLimits& limits, const std::filesystem::path& binary,
                  const std::filesystem::path& scratch, bool keep_dir = false, double wait_seconds = 600);
  ~CandidateWorker();
  CandidateWorker(const CandidateWorker&) = delete;
  CandidateWorker& operator=(const CandidateWorker&) = delete;

  // Hands over the library, waits for the worker's end: runWorker's result.
  // `respond` answers each question a profiling worker asks around its
  // timed calls (profile/pacing.h); without it the worker gets no answer.
  // `first_wall_seconds` (> 0): a shorter limit from here until
  // extendWall() (kbprof: its correctness seeds under verify's limit, the
  // timed loop under the profile's).
  WorkerRun finish(const std::filesystem::path& library,
                   const std::function<std::string(const std::string&)>& respond = {},
                   double first_wall_seconds = 0);
  // Moves the wall-clock limit to `limits.wall_seconds` from now (callable
  // from `respond`, while finish() runs).
  void extendWall();
  // Waits up to `timeout_seconds` for the worker's word that its set-up is
  // done (device, task, timing session; nothing in flight on the device):
  // it then waits for its library, before which it runs nothing timed and
  // no candidate code. finish() waits for it itself when not called.
  // Ended: gone first, or it said something else (finish() says why).
  WaitingProcess::Word awaitReady(double timeout_seconds);
  // Names the device of a worker started with request.device_on_stdin (it
  // waits before any CUDA call until then); before finish(). Throws
  // kb::Error for a worker not started that way, or named twice.
  void nameDevice(const std::string& device);
  // Its directory (request.json, result.bin, work/); empty if it could not be made.
  const std::filesystem::path& dir() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Removes a worker's directory (kept by runWorker(keep_dir=true) until the
// reference worker has read its result channel) when it goes out of scope,
// unless `keep` (kbcheck/kbprof --keep-workdir: then no later run reclaims
// it). Holds the directory's lock until then.
class WorkerDirGuard {
 public:
  WorkerDirGuard(const WorkerRun& run, bool keep) : dir_(run.dir), owner_(run.dir_owner), keep_(keep) {}
  ~WorkerDirGuard();
  WorkerDirGuard(const WorkerDirGuard&) = delete;
  WorkerDirGuard& operator=(const WorkerDirGuard&) = delete;

 private:
  std::filesystem::path dir_;
  std::shared_ptr<const ScratchOwner> owner_;
  bool keep_;
};

// $KB_WORKER, else kbcheck-worker next to the running executable, else (an
// installed tool) <prefix>/libexec/kernelbench-rl/kbcheck-worker, else (in
// the build tree) tools/kbcheck/kbcheck-worker. Throws kb::Error if none exists.
std::filesystem::path findWorkerBinary();

class TimingSession;
struct Device;
// The timing phase of a request with a "profile" object (kbprof): set up
// before confinement, it times the baselines and the candidate
// (verify/worker_internal.h). lib/profile's prepareTiming
// (profile/timing.h), which kbcheck-worker hands in, so that verification
// does not depend on profiling. `inputs` makes the timed calls' input sets;
// the worker owns it and keeps it for the session's lifetime.
using PrepareTiming = std::unique_ptr<TimingSession> (*)(const WorkerRequest& req, const task::Task& task,
                                                          const task::Reference& reference, const Device& dev,
                                                          const task::CallInputs& inputs);

// The candidate worker's main(): `kbcheck-worker candidate REQUEST.json`
// (argv[0] is "candidate"). Exit status 0 when every seed ran; the result
// channel (fd 3) carries the rest. A profile request fails at start-up (an
// internal error) when `prepare_timing` is null.
int workerMain(int argc, char** argv, PrepareTiming prepare_timing);

}  // namespace kb::verify
