// kbsynth's torch.compile baseline builds: scripts/baseline.py over batches
// of bundles, several processes at once. Bundles may arrive while the pool
// runs (kbsynth import adds each bundle as its capture ends, so the
// CPU-bound AOTInductor builds overlap the captures instead of waiting for
// the last of them).
//
// A process builds a batch one bundle after another (one Python start-up and
// torch import per batch, not per bundle: seconds each) and reports each as
// it ends. A process that dies fails the bundle it was on alone (the first of
// its batch it had not reported); the rest of its batch goes back to the
// queue. Bundles that ran the GPU out of memory beside the others (reason
// "out_of_memory") are built again one at a time once the rest are done
// ("ran_alone": true in their line), with all the cores.
// No new batch starts once `stop` says so; the processes running get the stop
// from kbsynth (tools/cli_parse.h StopSignals) and end without a result.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
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

struct BaselinePoolOptions {
  std::string device;               // baseline.py --device
  std::string weights = "external"; // baseline.py --weights
  std::string python;               // the interpreter (python::pythonPath)
  bool force = false;               // build again even when current
  int jobs = 0;                     // processes at once (0: baselineJobs)
  size_t expected = 0;              // bundles expected in all: sizes the batches and the progress
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
  bool stopping() const { return o_.stop && o_.stop(); }
  void share(int at_once);  // each process's threads for `at_once` processes
  void start(int at_once);  // under mu_
  void join();
  void slot();
  void record(const Json& line);  // under mu_

  BaselinePoolOptions o_;
  int cores_;
  int jobs_;
  size_t batch_;
  python::EnvOverrides env_;
  Clock::time_point t0_ = Clock::now();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<std::string, Clock::time_point>> queue_;  // dir, when it was queued
  std::vector<std::string> added_;
  std::set<std::string> known_;
  std::map<std::string, Json> results_;
  size_t done_ = 0;
  bool closed_ = false, abandoned_ = false, no_device_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace kb::synth
