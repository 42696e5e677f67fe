// kbsynth's torch.compile baseline builds: scripts/baseline.py workers, several
// at once. Bundles may arrive while the pool runs (kbsynth import adds each
// bundle as its capture ends, so the CPU-bound AOTInductor builds overlap the
// captures instead of waiting for the last of them).
//
// A worker is one long-lived `baseline.py -` (one Python start-up and torch
// import, seconds, for all its builds) that builds one bundle at a time: the
// pool hands each idle worker the largest program queued (model.py's size:
// KernelBench level 3's networks build for minutes, level 1's operators in
// seconds), so that the slow builds start first and no build waits behind
// another in a batch. A worker that dies fails the bundle it was on alone and
// is replaced. Bundles that may have failed for the others' sake (GPU out of
// memory; "retry_alone" in their line) are built again one at a time once the
// rest are done ("ran_alone": true in their line), with all the cores.
// On a GPU the builds share its memory: each bundle's estimated need
// (bundleDeviceBytes, from its task.json) is reserved while it builds, and a
// build starts only while the reservations fit in 70% of the device's memory
// (baseline.py's hello says how much it has); one build always runs, however
// large. Without this, 8 of KernelBench level 1's 6-8 GiB operators at once
// ran an H100 out of memory and were built a second time, alone, at the end.
// On a stop no new build starts and the workers are killed; what they were
// building has no line.
#pragma once

#include <chrono>
#include <cstdint>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/json.h"
#include "python/scripts.h"

namespace kb::synth {

// How many baseline.py processes build at once by default on `cores` cores:
// a quarter of the cores (an AOTInductor build runs its own compile
// workers), at least 1, at most 8 (on a GPU, each holds a CUDA context and
// the task's tensors).
int baselineJobs(int cores);

// What building `bundle_dir`'s baseline is estimated to hold on the device:
// four times its inputs' and outputs' bytes (eager's output, the package's,
// Inductor's autotuning copies) and twice its state's, from task.json; 0
// when task.json is missing or not a valid one.
uint64_t bundleDeviceBytes(const std::string& bundle_dir);

struct BaselinePoolOptions {
  std::string device;               // baseline.py --device
  std::string weights = "external"; // baseline.py --weights
  std::string python;               // the interpreter (python::pythonPath)
  bool force = false;               // build again even when current
  int jobs = 0;                     // processes at once (0: baselineJobs)
  size_t expected = 0;              // bundles expected in all: the progress's total
  std::function<bool()> stop;       // asked between batches
};

class BaselinePool {
 public:
  explicit BaselinePool(BaselinePoolOptions o);
  ~BaselinePool();  // abandons what has not started and waits for the running batches
  BaselinePool(const BaselinePool&) = delete;
  BaselinePool& operator=(const BaselinePool&) = delete;

  // Queues a bundle folder (thread-safe; the first call starts the processes).
  void add(const std::string& dir);
  // One of the bundles expected will not come (its capture failed).
  void expectOneFewer();

  // No more bundles: waits for every queued one, builds the out-of-memory ones
  // again alone, and returns one line per bundle added (baseline.py's, or an
  // internal_error for one never reported), by dir. After a stop, bundles not
  // reached have no line. kb::Error when the device does not exist.
  std::map<std::string, Json> finish();

 private:
  using Clock = std::chrono::steady_clock;
  struct Queued {
    std::string dir;
    uintmax_t size;  // model.py's bytes: the larger first
    size_t order;    // then the first added
  };
  // Under mu_: the queued bundle to build next (the largest program whose
  // device bytes fit beside the builds running), or queue_.end().
  std::vector<Queued>::iterator nextFitting();
  bool stopping() const { return o_.stop && o_.stop(); }
  void share(int at_once);  // each process's threads for `at_once` processes
  void start(int at_once);  // under mu_
  void join();
  void slot();
  // A ready worker (it said hello), or null: no device (no_device_ set), or
  // `why` says why it could not start.
  // `system_cxx`: whether the worker builds with /usr/bin/c++ (runBaselineScript's fallback).
  std::unique_ptr<python::ScriptWorker> startWorker(std::string& why, bool& system_cxx);
  void record(const Json& line);  // under mu_

  BaselinePoolOptions o_;
  int cores_;
  int jobs_;
  double timeout_s_;  // $KB_BASELINE_TIMEOUT (baseline.py's alarm); 0: none
  python::EnvOverrides env_;
  Clock::time_point t0_ = Clock::now();

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Queued> queue_;
  std::vector<std::string> added_;
  std::set<std::string> known_;
  std::map<std::string, Json> results_;
  size_t done_ = 0;
  bool closed_ = false, abandoned_ = false, no_device_ = false;
  bool system_cxx_ = false;      // workers run with CXX=/usr/bin/c++ (runBaselineScript's fallback)
  std::set<std::string> retried_;  // bundles sent again after a worker died with another $CXX
  std::map<std::string, uint64_t> device_bytes_;  // bundleDeviceBytes, by dir
  uint64_t device_budget_ = 0;  // 70% of the device's memory (0: not known, no limit)
  uint64_t reserved_ = 0;       // device bytes of the builds running
  int building_ = 0;            // builds running
  std::vector<std::thread> threads_;
};

}  // namespace kb::synth
