// The evaluation service behind kbserve's HTTP API (docs/kbserve.md): a
// priority queue of accepted evaluations, runner threads that take each
// through one eval::Session (static and build on a bounded CPU pool, then
// verify and profile on an exclusive GPU lease, or a CPU slot for CPU
// tasks; CPU verifications of one task batched), a journal
// that survives kill -9, idempotent resubmission, backpressure, deadlines,
// cancellation, stage events for streaming, and the metrics. It adds
// scheduling to lib/eval and nothing of evaluation: the reports are
// kbcheck's and kbprof's, the reward lib/reward's.
#pragma once

#include <atomic>
#include <condition_variable>
#include <initializer_list>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "agent/pool.h"
#include "core/json.h"
#include "eval/eval.h"
#include "eval/session.h"
#include "serve/gpu_gate.h"
#include "serve/journal.h"
#include "serve/metrics.h"
#include "serve/request.h"
#include "serve/task_store.h"

namespace kb::serve {

struct ServiceOptions {
  std::filesystem::path state_dir;        // journal.jsonl, work/<id>/
  size_t cpu_slots = 2;                   // static checks, builds, CPU verifications at once
  std::vector<std::string> gpus;          // CUDA ordinals leased one evaluation at a time
  // Evaluations holding one GPU at once (kbserve --gpu-share): their
  // untimed GPU work (device set-up, verify, the reference's checks) runs
  // side by side, each profile's baselines and candidate alone
  // (serve/gpu_gate.h). 1: one evaluation per GPU, the lease exclusive.
  // kbserve's default (--gpu-share auto, serve::parseGpuShare) gives 4 on an
  // H100 or H200: there it took level-2 evaluations from 1903 to 2697 an
  // hour, every timed call still alone on the GPU (docs/kbserve.md).
  size_t gpu_share = 1;
  size_t queue_limit = 256;               // queued + running; beyond it: 429
  size_t keep_results = 10000;            // finished evaluations kept (memory and journal)
  RequestLimits limits;
  std::filesystem::path build_cache;      // "": lib/build's default
  std::filesystem::path static_policy;    // "": the default policy
  std::string arch = "sm_90";
  double verify_timeout_seconds = 60;     // per worker (kbcheck --timeout)
  double profile_budget_seconds = 5;      // kbprof --budget-s
  // Which torch.compile figure a profile times (kbprof --compile-baseline):
  // "auto" (the task's AOTInductor package, else torch.compile in Python
  // in the worker, once per task: the figure is then cached), "aoti" (the
  // package or no figure), "python" (always Python's), "none". Never a
  // package build inside a GPU lease (ProfileOptions::build_compiled off):
  // kbsynth import --compiled cuda builds them. The default gives every
  // task a compile figure, which the paper's reward needs.
  std::string compile_baseline = "auto";
  // CPU verifications of one task taken together (one reference worker,
  // eval::evaluateBatch); 1: never.
  size_t batch_max = 8;
  // A GPU profile's workers start before its build, held before their
  // first CUDA call until the GPU lease names their GPU
  // (eval::Session::startProfileWorkers), for at most two evaluations per
  // GPU at once; the lease then holds no process start-up. Off (kbserve
  // --late-start): they start inside the lease. Held only where every
  // leased GPU is of one architecture.
  bool early_workers = true;
  // On cuda, verify and profile asked together run as one profile whose
  // correctness seeds are the verification (one worker pair in the lease,
  // not two). Off by default: a candidate that hangs then holds the GPU for
  // the profile's wall limit (300 s), not verify_timeout_seconds.
  bool verify_in_profile = false;
  // Readable by no candidate worker (Landlock): the state directory and the
  // build cache hold every client's files. Filled by the server.
  bool hide_state_from_workers = true;
};

// The profile options of every evaluation and session of the service,
// before each request's own (device, hidden directories): the budget, the
// compile figure, never a package build. Throws kb::UsageError for an
// unknown compile_baseline.
profile::ProfileOptions serviceProfileOptions(const ServiceOptions& options);

// A failed GPU stage that ran out of device memory (a runtime or
// infrastructure error whose message says so): on a shared GPU
// (--gpu-share) maybe a neighbour's doing, so its stages run again alone.
bool outOfDeviceMemory(const eval::Result& result);

enum class State { Queued, Running, Done, Cancelled };
std::string_view stateName(State s);

// Refused for a reason the client can act on later: 429 or 503 with a
// Retry-After in seconds.
class RetryLater : public RequestError {
 public:
  RetryLater(int http_status, const std::string& what, int retry_after)
      : RequestError(http_status, what), retry_after_(retry_after) {}
  int retryAfter() const { return retry_after_; }

 private:
  int retry_after_;
};

// PREFIX and 16 hex digits from the system's random source: evaluation and
// session ids, which are not to be guessed.
std::string randomId(const std::string& prefix);

struct Submitted {
  Json evaluation;
  bool existing = false;  // an idempotent resubmission: the earlier evaluation
};

class Service {
 public:
  // Replays the journal (finishing or answering what a crash left), then
  // starts the runners. Throws kb::Error when the state directory or the
  // journal cannot be used.
  Service(TaskStore& tasks, ServiceOptions options);
  ~Service();  // stops the runners; what is still queued stays journaled

  // Accepts one evaluation. Throws RequestError: 404 unknown task, 409 an
  // idempotency key reused with another request, 422 a CUDA request on a
  // server without GPUs or a solution loadSolution refuses; RetryLater: 429
  // the queue is full, 503 draining.
  Submitted submit(const EvaluationRequest& request);
  std::optional<Json> get(const std::string& id) const;
  // Blocks until the evaluation is finished (or cancelled) or `timeout`
  // passes; nullopt: no such id.
  std::optional<Json> wait(const std::string& id, double timeout_seconds) const;
  // The events from index `from` on ({"seq","event","data"}), waiting up to
  // `timeout` for one when there is none yet; `finished` when the last one
  // has been given. False: no such id.
  bool events(const std::string& id, size_t from, double timeout_seconds, std::vector<Json>& out,
              bool& finished) const;
  // Cancels a queued evaluation at once, a running one at its next stage
  // boundary. nullopt: no such id.
  std::optional<Json> cancel(const std::string& id);

  std::string metricsText() const;
  bool ready() const;              // accepting, and the queue below its limit
  bool hasGpus() const { return gpu_pool_ != nullptr; }
  // Stops accepting and waits up to `timeout` for every accepted evaluation.
  // True when none is left.
  bool drain(double timeout_seconds);

  // The pools, shared with agent sessions so that their stages queue for the
  // same CPU slots and GPUs.
  std::shared_ptr<agent::ResourcePool> cpuPool() const { return cpu_pool_; }
  std::shared_ptr<agent::ResourcePool> gpuPool() const { return gpu_pool_; }
  // For an agent session's GPU stage on a shared GPU: the whole stage
  // exclusive (empty holder without sharing: the lease is).
  profile::ExclusiveGpu exclusiveGpu(const std::string& slot);
  const eval::StaticChecker& staticChecker() const { return checker_; }
  TaskStore& tasks() const { return tasks_; }
  const ServiceOptions& options() const { return options_; }
  Metrics& metrics() { return metrics_; }

 private:
  struct Job;
  void runner();
  void run(Job& job);
  void runBatch(std::vector<std::shared_ptr<Job>>& batch);
  bool batchable(const EvaluationRequest& r) const;
  bool cancelRequested(Job& job);
  bool pastDeadline(const Job& job) const;
  bool endedBeforeStart(Job& job);
  bool endedAfterBuild(Job& job, const eval::Result& result, const std::string& when,
                       const std::string& when_deadline);
  eval::Request baseRequest(const Job& job) const;
 public:
  // What no candidate worker may read (ServiceOptions::hide_state_from_workers).
  std::vector<std::filesystem::path> hiddenDirs() const;

 private:
  void recordStages(Job& job, const eval::Result& r, std::initializer_list<const char*> names);
  void complete(Job& job, const eval::Result& result);
  void prepare(Job& job);
  void finish(Job& job, std::optional<Status> status, const std::string& message, Json report, Json profile,
              Json reward, State state);
  void publish(Job& job, const std::string& event, Json data);
  Json toJson(const Job& job) const;
  void evictFinished();
  bool startHeldProfile(eval::Session& session, const Job& job);
  void endHeldProfile();
  void replayJournal();

  TaskStore& tasks_;
  ServiceOptions options_;
  eval::StaticChecker checker_;
  bool torch_ops_allowed_ = false;  // the policy's (core/policy_file.h), for the run-time provenance
  std::shared_ptr<agent::ResourcePool> cpu_pool_, gpu_pool_;
  // gpu_share > 1: each GPU's gate, by CUDA ordinal (gpu_pool_ then names
  // each GPU gpu_share times).
  std::map<std::string, std::unique_ptr<GpuGate>> gates_;
  std::unique_ptr<Journal> journal_;
  Metrics metrics_;

  mutable std::mutex mu_;
  mutable std::condition_variable changed_;   // any job's state or events
  std::condition_variable work_;              // a job was queued, or stop
  std::map<std::string, std::shared_ptr<Job>> jobs_;
  std::set<std::pair<int, uint64_t>> pending_;  // (-priority, seq)
  std::map<uint64_t, std::string> by_seq_;
  std::map<std::string, std::string> by_key_;   // idempotency key -> id
  std::vector<std::string> finished_order_;
  uint64_t next_seq_ = 0;
  size_t running_ = 0;
  size_t preparing_ = 0;                         // accepted ids whose files are being written
  size_t held_profiles_ = 0;                     // evaluations whose profile workers wait for a GPU
  size_t max_held_profiles_ = 0;                 // 0: none held (ServiceOptions::early_workers)
  std::shared_ptr<agent::ResourcePool> hold_pool_;  // max_held_profiles_ slots: the next in line for a GPU
  bool draining_ = false, stopping_ = false;
  double started_at_ = 0;
  double seconds_per_evaluation_ = 1;            // moving average, for Retry-After
  std::vector<std::thread> runners_;
};

}  // namespace kb::serve
