// `kbcheck verify`: a built solution against the task's reference.
//
// Order of events, which is what keeps the reference's output out of the
// candidate's reach (docs/threat-model.md):
//   1. the candidate runs in its own confined worker process
//      (verify/worker.h) on fresh inputs for each correctness seed and
//      sends back its outputs and its inputs as they were after the call;
//   2. only when that process has ended (and its process group been killed)
//      does a second worker process start, which loads the reference, makes
//      the same inputs again, runs it and compares (verify/compare.h);
//   3. this process reads the verdict. It links no torch and never holds
//      the reference's outputs.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/process.h"
#include "core/json.h"
#include "core/report.h"
#include "verify/worker.h"
#include "verify/compare.h"

namespace kb::task {
struct TaskInfo;
}  // namespace kb::task

namespace kb::verify {

struct VerifyOptions {
  std::string device = "cpu";           // "cpu", "cuda" or "cuda:N"
  std::vector<uint64_t> seeds;          // empty: the task's correctness seeds
  std::string precision;                // "strict" or "paper" overrides the task's contract (task/precision.h)
  std::optional<double> atol, rtol;     // empty: the contract's tolerances
  WorkerLimits limits;
  uint64_t max_scratch_bytes = 1ull << 30;
  uint64_t memory_budget_bytes = 4ull << 30;
  bool seccomp = true;
  bool landlock = true;
  bool allow_open_rdwr = false;
  // Unreadable to the candidate worker besides what every worker has hidden
  // (verify/private_dirs.h: the scratch root, the caches); kbserve: its state.
  std::vector<std::filesystem::path> hidden_dirs;
  // false: nothing hidden (kbserve --no-hide-state: tests and debugging only).
  bool hide_private_dirs = true;
  std::filesystem::path worker;         // empty: findWorkerBinary()
  std::filesystem::path scratch_dir;    // empty: verify::defaultScratchRoot()
  bool keep_worker_dir = false;
  double reference_timeout_seconds = 600.0;  // the reference's own process
  uint64_t channel_limit_bytes = 0;     // a run's result channel at most (0: the scratch disk's free space)
};

struct VerifyResult {
  Status status = Status::InfraError;
  std::string message;   // one line: why it is not ok
  std::string task_id;
  std::string device;
  std::string gpu, driver, torch_version;  // "" when not known (CPU)
  double atol = 0.0, rtol = 0.0;
  Json contract;  // the precision contract judged by (PrecisionContract::toJson)
  std::vector<SeedCheck> seeds;
  WorkerRun worker;
  double seconds = 0.0;            // all of it
  double reference_seconds = 0.0;  // waiting for the reference worker once the candidate had ended
  Json reference_phases;           // the reference worker's own clock (ReferenceVerdict::phases)
  int seed_runs = 1;               // candidate runs the seeds were verified in (seedsPerRun)

  Json toJson() const;  // the "verify" object of a report
};

// What the reference worker said about a candidate's result channel.
struct ReferenceVerdict {
  Status status = Status::InfraError;
  std::string message;
  std::string gpu, torch_version;
  std::vector<SeedCheck> seeds;
  double seconds = 0.0;  // from handing over the request to the verdict: what the caller waited
  Json phases;           // the worker's own clock: prepare_seconds (before the request), check_seconds
  bool worker_failed = false;  // infra_error: the process failed, not past its deadline, without a well-formed verdict
};

// The reference worker (`binary reference --task DIR --device DEV [--seeds
// S,...]`), started ahead of its request so that its start-up (LibTorch,
// the task, the CPU inputs of the seeds it is told of, its device context
// and the reference's weights) overlaps the candidate's run. Until finish()
// hands it the request on its stdin it computes nothing (no reference output
// exists) and reads nothing the candidate can write; it makes itself
// non-dumpable, and the candidate's seccomp filter denies signals, ptrace
// and process_vm_* to other processes. Call finish() only after the
// candidate's process group is gone. A worker never given its request (the
// object destroyed first) exits without a verdict.
class ReferenceWorker {
 public:
  // It works in a directory of its own under `scratch` (removed with it);
  // `wall_seconds` covers the wait as well.
  // `device_later`: it waits before any CUDA call until nameDevice() names
  // the device (`device` is then only a placeholder): a worker started ahead
  // of its GPU lease.
  ReferenceWorker(const std::filesystem::path& task_dir, const std::string& device,
                  const std::vector<uint64_t>& known_seeds, const std::filesystem::path& scratch,
                  const std::filesystem::path& binary, double wall_seconds, bool device_later = false);
  ~ReferenceWorker();
  ReferenceWorker(const ReferenceWorker&) = delete;
  ReferenceWorker& operator=(const ReferenceWorker&) = delete;

  // Names the device of a worker started with device_later, before
  // finish(); throws kb::Error otherwise, or when named twice.
  void nameDevice(const std::string& device);
  // Waits up to `timeout_seconds` for the worker's word that its
  // preparation is done (the context, the weights, the warm-up kernels on
  // the device: it then waits for its request with no GPU work in flight),
  // before finish(). kbprof times nothing while it prepares (profile.cpp).
  // Ended: gone, or it said something else (finish() says why).
  WaitingProcess::Word awaitReady(double timeout_seconds);
  // Sends the request, waits for the worker, reads its verdict. Once.
  // The request names one candidate.
  ReferenceVerdict finish(const CompareRequest& request);
  // The same for a request naming several candidates of the task: one
  // verdict each, in the request's order (all infra_error when the worker
  // failed).
  std::vector<ReferenceVerdict> finishAll(const CompareRequest& request);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Step 2 of verification in one go (a ReferenceWorker started and finished
// at once), for any result channel of "seed" records (kbprof sends the
// sampled timed calls' records the same way). Call only after the
// candidate's process group is gone.
ReferenceVerdict compareWithReference(const CompareRequest& request, const std::filesystem::path& scratch,
                                      const std::filesystem::path& binary, double timeout_seconds);

// "cpu", "cuda" or "cuda:N" checked without touching CUDA, normalised
// ("cuda" -> "cuda:0"); throws kb::UsageError for anything else or when the
// machine has no NVIDIA GPU.
std::string checkDevice(const std::string& name);

// Sizes a candidate worker from what the task says it produces, for a run
// whose result channel carries `records` sets of outputs (the correctness
// seeds, plus kbprof's checked timed calls) and which keeps `candidates`
// such channels on disk at once (a batch: verifySolutions).
// request.max_output_bytes: 4x the outputs and 1 MiB (room for an honest
// candidate's extra allocations, refused beyond). limits.result_limit:
// `records` records of that many bytes, but at most twice the honest size
// (4 GiB at least) and this candidate's share of `scratch`'s free space
// (less 1 GiB), so that a candidate flooding the channel fills neither.
// Outputs of gigabytes (KernelBench level 1: 6 GiB) get a channel to match
// instead of a fixed 4 GiB, past which an honest candidate's records were
// cut and read as a forged channel (hack_detected). Throws kb::Error when
// even the honest size (`records` x the outputs, for every candidate) does
// not fit on that disk: the machine's limit, not the candidate's fault.
// `channel_cap` (0: none) bounds the share as the disk does. The limits'
// wall and CPU seconds grow by the harness's own work with the records'
// inputs and outputs (4 s a GiB: making the inputs, copies, the channel),
// so that a task of gigabytes leaves the candidate its time; the request's
// host memory budget (when it has one) grows by one record's outputs, the
// host copy the harness makes of them for the channel.
void sizeWorkerForTask(const task::TaskInfo& info, uint64_t records, uint64_t candidates,
                       const std::filesystem::path& scratch, WorkerRequest& request, WorkerLimits& limits,
                       uint64_t channel_cap = 0);

// The bytes of one call's outputs and tensor inputs, from the task's own
// description (task.json): what kbprof's plausibility floor is computed
// from, never what a worker reports.
uint64_t taskOutputBytes(const task::TaskInfo& info);
uint64_t taskInputBytes(const task::TaskInfo& info);

// How many of `seeds` one candidate run can send: all of them when their
// honest channel fits `scratch`'s share (and `channel_cap`), else as many as
// fit, at least 1 (sizeWorkerForTask then says whether even one fits).
// verifySolutions verifies the seeds in runs of that many: KernelBench
// level 1's 6 GiB outputs x 5 seeds need 30 GiB at once otherwise.
size_t seedsPerRun(const task::TaskInfo& info, size_t seeds, uint64_t candidates,
                   const std::filesystem::path& scratch, uint64_t channel_cap = 0);

// Verifies `library` (a built solution.so) against the task bundle at
// `task_dir`. Throws kb::UsageError for a bad task or device name; every
// outcome of the candidate is a status.
VerifyResult verifySolution(const std::filesystem::path& task_dir,
                            const std::filesystem::path& library, const VerifyOptions& options);

// Several candidates of one task (kbtrain's toy environment scores many
// answers per task): each runs in its own worker process, one after the
// other, and one reference worker, handed the request once the last of them
// has ended, checks them all, running each seed's reference once. One
// process start (and, on a GPU, one CUDA context) per candidate instead of
// two. Each result's reference_seconds is the shared wait; its seconds, its
// own worker plus that wait. Results in the order of `libraries`.
std::vector<VerifyResult> verifySolutions(const std::filesystem::path& task_dir,
                                          const std::vector<std::filesystem::path>& libraries,
                                          const VerifyOptions& options);

}  // namespace kb::verify
