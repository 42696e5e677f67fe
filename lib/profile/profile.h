// `kbprof`: a built solution timed against the eager reference and the
// torch.compile baseline on one GPU (DESIGN.md §6), with its run-time
// provenance checked (§5) and the outputs of timed calls this process picks
// after the loop verified. Torch-free: the timing runs in the candidate
// worker (profile/timing.cpp), the comparison in the reference worker.
//
// Order of events:
//   1. the library's imports are read (profile/elf_symbols.h): torch
//      symbols or the dynamic loader's look-ups end it as hack_detected;
//   2. the compiled baseline is built if missing (scripts/baseline.py,
//      once per task and GPU architecture; not with build_compiled off);
//   3. one worker: the baselines first, before the candidate's library is
//      loaded (or, cached for this task, GPU, driver and torch, a short
//      re-check of them); then, confined, the correctness seeds (unless
//      verify is off), warm-up and timed calls, each on new input values
//      from a seed this process draws, paced by this process and timed by
//      its clock (profile/pacing.h), each committed (times, activities,
//      outputs) as it returns, until the 95% interval of the median is
//      within the target or the budget is spent;
//   4. one reference worker checks the correctness seeds and every timed
//      call;
//   5. the run-time judges (profile/judges.h) decide here.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/report.h"
#include "verify/worker.h"
#include "profile/plausibility.h"
#include "profile/precision.h"
#include "profile/provenance.h"
#include "profile/stats.h"
#include "verify/compare.h"

namespace kb::profile {

// The GPU held alone while it lives (ProfileOptions::exclusive_gpu): its
// deleter gives it back.
using ExclusiveGpu = std::shared_ptr<void>;

struct ProfileOptions {
  std::string device = "cuda";
  bool verify = true;                  // run the task's correctness seeds first
  bool compile_baseline = true;        // time torch.compile (builds it if missing)
  // Which torch.compile figure (docs/kbprof.md "Baselines"): "auto" (a
  // Python-format candidate: torch.compile in Python; a native one:
  // AOTInductor's package, or torch.compile in Python on a GPU where the
  // package is missing or failed), "aoti", "python", "none".
  std::string compile_baseline_mode = "auto";
  // Build AOTInductor's package when the bundle lacks it (scripts/baseline.py,
  // tens of seconds); off: a missing package is only a missing figure ("no
  // AOTInductor package": "aoti" has none, "auto" falls back to torch.compile
  // in Python on a GPU). kbserve: off, never a build inside a GPU lease.
  bool build_compiled = true;
  bool use_baseline_cache = true;
  std::filesystem::path baseline_cache_dir;  // empty: defaultBaselineCacheDir()
  double target_ci = 0.01;             // stop when the 95% CI of every median is within ±1%
  double budget_seconds = 10.0;        // ... or when the timed rounds took this long
  int warmup = 3;
  // GPU work (a spin kernel) queued after the L2 flush and before each
  // timed call's start event, so that the events do not see the host's
  // launch latency (lib/profile/timing.cpp); 0: none.
  double head_start_us = 200.0;
  int min_rounds = 10;
  // Every timed call's outputs go to the reference worker, which checks each
  // one (a reference run per call): the rounds are bounded accordingly.
  int max_rounds = 100;
  // The bytes of timed calls' outputs the result channel carries; the loop
  // stops ("keep_budget") when the next call's would not fit.
  uint64_t keep_bytes = 4ull << 30;
  // Null calls in the trusted phase: the timed call's harness steps with
  // nothing inside, timed by this process's clock, whose longest bounds
  // every timed call from below (profile/pacing.h).
  int null_calls = 10;
  // A cached baseline is re-checked with this many eager calls before use;
  // it stands when their median is within max(check_tolerance, 3 x its 95%
  // interval) of the cached one.
  int check_rounds = 10;
  double check_tolerance = 0.05;
  // Cache host-clock baselines of a CPU run too (off: a CPU run neither
  // reads nor writes the cache): the harness's own tests of the cache.
  bool cache_cpu_baselines = false;
  double plausibility_slack = 0.8;
  // The policy lets a Python-format candidate call torch operations in
  // forward (core/policy_file.h policyAllowsTorchOps: kernelbench): its
  // ATen, cuBLAS and cuDNN kernels are then library work in the run-time
  // provenance, not foreign kernels (Triton's stay foreign). Off (paper, the
  // default): only the candidate's own extension kernels may run.
  bool torch_ops_allowed = false;
  // "strict" or "paper": judge by this precision contract instead of the
  // task's (task/precision.h); empty: the task's.
  std::optional<std::string> precision;
  verify::WorkerLimits limits;                 // wall_seconds defaults higher below
  bool seccomp = true, landlock = true, allow_open_rdwr = false;
  // Unreadable to the timing worker once confined, besides what every worker
  // has hidden (verify/private_dirs.h) and the baseline cache; kbserve: its state.
  std::vector<std::filesystem::path> hidden_dirs;
  bool hide_private_dirs = true;       // false: nothing hidden (kbserve --no-hide-state)
  std::filesystem::path worker;        // empty: findWorkerBinary()
  std::filesystem::path scratch_dir;   // empty: verify::defaultScratchRoot()
  bool keep_worker_dir = false;        // keep the worker's directory (request, result channel)
  std::string python;                  // for building the compiled baseline
  std::string arch;                    // empty: asked of nvidia-smi
  double reference_timeout_seconds = 600.0;
  // The most the timed phase waits for the reference worker, started
  // beside the candidate, to end its preparation on the device (a worker
  // still preparing then: infra_error, nothing timed).
  double reference_ready_seconds = 120.0;
  // A caller that shares the GPU between evaluations' untimed work (kbserve
  // --gpu-share) closes it here: run() calls this once both workers have
  // ended their set-up, before the candidate's worker gets its library, and
  // keeps what it returns until the candidate's process group is gone; its
  // destruction opens the GPU again. Blocks until no other evaluation runs
  // anything on the GPU. Empty: the caller's lease is exclusive already.
  std::function<ExclusiveGpu()> exclusive_gpu;
  // Start both workers in prepareProfile (beside the caller's build); off:
  // each starts when it is needed, as before (kbprof --late-start, for
  // comparing the two).
  bool start_workers_early = true;
  // With start_workers_early: the workers start held before their first
  // CUDA call, `device` only a placeholder (a GPU of the same architecture),
  // until PreparedProfile::nameDevice() names the GPU. kbserve starts them
  // before its GPU lease, so that the lease holds no process start-up.
  bool device_named_later = false;
  // How long held workers may wait for their device and library.
  double hold_seconds = 3600.0;
  // > 0: the candidate worker's wall-clock limit until its timed loop asks
  // for its first seed (start-up, init, the correctness seeds), the task's
  // harness share added as to limits.wall_seconds; limits.wall_seconds from
  // then. kbserve sets verify's limit when the profile is the evaluation's
  // verification (--verify-in-profile): a candidate that hangs in a seed
  // then holds the GPU no longer than under a verify stage.
  double untimed_wall_seconds = 0;

  ProfileOptions() { limits.wall_seconds = 300.0; limits.cpu_seconds = 600; }
};

// One participant's timings.
struct TimingStats {
  SampleStats event;   // CUDA events on the launch stream, per call (ms)
  SampleStats device;  // CUPTI: sum of the call's kernel/memcpy/memset durations (ms)
  bool cached = false;
  std::string error;   // why it was not timed ("" when it was)
  bool present() const { return event.n > 0; }
  Json toJson() const;  // kbreward's fields (median_ms, ...) plus "device"
  static TimingStats fromJson(const Json& j);
};

struct ProfileResult {
  Status status = Status::InfraError;
  std::string message;
  std::vector<std::string> evidence;  // what hack_detected rests on
  std::string task_id, solution_hash, device, gpu, arch, driver, torch_version;
  std::string started_at, finished_at;
  TimingStats eager, compile, candidate;
  // Which baselines those are: eager "libtorch" or "python"; compile "aoti",
  // "python_compile" or "" (none); why the compile figure is not AOTInductor's
  // (or why there is none).
  std::string eager_baseline, compile_baseline, compile_baseline_reason;
  Json python_baselines;              // the worker's report of building them (compile seconds, check)
  std::optional<double> speedup_vs_eager, speedup_vs_compile;  // median ratios
  std::vector<KernelStat> kernels;    // the candidate's, heaviest first
  ProvenanceReport provenance;
  Plausibility plausibility;
  PrecisionReport precision;          // the contract judged by, the candidate kernels' precision classes
  uint64_t clamped_samples = 0;       // timed calls raised to the physical floor
  std::vector<verify::SeedCheck> seeds;       // correctness seeds and every timed call
  uint64_t timed_calls = 0;           // committed by the worker
  std::vector<uint64_t> checked_calls;  // the timed calls the reference checked: all of them
  Json parent_clock;                  // this process's clock around the timed calls (docs/kbprof.md)
  std::string input_method;           // "spec", "scripted" or "scripted-cpu" (task/timed_call.h)
  std::string timing_method;          // "cuda_events" or "host_clock" (CPU)
  Json baseline_check;                // the re-check of a cached baseline (null: none)
  bool baselines_written = false;     // this run's baselines went to the cache
  bool baselines_cached = false;      // this run's baselines came from the cache (re-checked)
  std::string baseline_cache_note;    // why they did not, when measured here
  int rounds = 0;
  std::string stop;                   // "precise", "budget" or "max_rounds"
  double bandwidth_gbps = 0;
  double head_start_us = 0;           // the spin before each timed call (0: none)
  double seconds = 0, worker_seconds = 0, reference_seconds = 0, baseline_build_seconds = 0;
  double prepare_seconds = 0, after_seconds = 0;  // before the workers started; after the verdict
  double reference_ready_wait_seconds = 0;        // the timed phase waiting for the reference's GPU preparation
  std::string reference_retry_after;               // the reference process's failure before a second, fresh one ("": none)
  double exclusive_wait_seconds = 0;              // waiting for ProfileOptions::exclusive_gpu (kbserve's gate)
  Json reference_phases;  // the reference worker's own clock: prepare_seconds (beside the candidate), check_seconds
  verify::WorkerRun worker;
  Json toJson() const;  // docs/kbprof.md
};

// Profiles `library` (built from `solution_dir`, whose hash names it) for
// the task at `task_dir`. Throws kb::UsageError for a bad task or device;
// every outcome of the candidate is a status.
ProfileResult profileSolution(const std::filesystem::path& task_dir, const std::filesystem::path& library,
                              const std::string& solution_hash, const ProfileOptions& options);

// A profile whose workers start before the candidate's library exists:
// prepareProfile() does steps 2 and 3's set-up (task, compiled baseline,
// the worker's request) and starts the candidate's worker and the reference
// worker, which get ready (LibTorch, CUDA, inputs, timing set-up) while the
// caller builds; run() checks the library's imports, hands it over and
// finishes as profileSolution does. Destroyed without run() (the build
// failed): both workers leave before any candidate code. `with_candidate`
// false (--baseline-only): nothing starts until run({}, "").
class PreparedProfile {
 public:
  ~PreparedProfile();
  PreparedProfile(const PreparedProfile&) = delete;
  PreparedProfile& operator=(const PreparedProfile&) = delete;
  ProfileResult run(const std::filesystem::path& library, const std::string& solution_hash);
  // Names the GPU of a profile prepared with device_named_later, before
  // run() (which throws kb::Error without it); a no-op otherwise. Throws
  // kb::UsageError for a bad device name.
  void nameDevice(const std::string& device);
  // Its workers wait for nameDevice().
  bool waitsForDevice() const;

 private:
  PreparedProfile();
  friend std::unique_ptr<PreparedProfile> prepareProfile(const std::filesystem::path&, const ProfileOptions&, bool);
  struct State;
  ProfileResult judge(const std::filesystem::path& library, const std::string& solution_hash);
  std::unique_ptr<State> state_;
};
std::unique_ptr<PreparedProfile> prepareProfile(const std::filesystem::path& task_dir, const ProfileOptions& options,
                                                bool with_candidate = true);

// "sm_90" for a device ("cuda:N"), from nvidia-smi; "" when it cannot say.
std::string detectGpuArch(const std::string& device);

// $KB_BASELINE_CACHE, else $XDG_CACHE_HOME/kernelbench-rl/baselines, else
// ~/.cache/kernelbench-rl/baselines.
std::filesystem::path defaultBaselineCacheDir();

// Which libraries the reference's ops allow (cuBLAS for GEMMs, cuDNN for
// convolutions), from Reference::opKinds() names.
void allowLibrariesForOps(const std::vector<std::string>& ops, ProvenancePolicy& policy);

// The short table and the per-kernel breakdown (kbprof's default output).
std::string renderProfileText(const ProfileResult& r, std::size_t max_kernels = 10);

}  // namespace kb::profile
