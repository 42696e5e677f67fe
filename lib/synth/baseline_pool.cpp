#include "synth/baseline_pool.h"

#include <algorithm>
#include <cstdio>

#include "core/error.h"

namespace kb::synth {
namespace {

// A slot that finds fewer bundles queued than a batch waits this long for
// more before it starts with what there is (captures arrive one by one).
constexpr auto kFillWait = std::chrono::seconds(5);
constexpr auto kPoll = std::chrono::milliseconds(200);

}  // namespace

int baselineJobs(int cores) { return std::clamp(cores / 4, 1, 8); }

BaselinePool::BaselinePool(BaselinePoolOptions o) : o_(std::move(o)) {
  cores_ = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const int expected = static_cast<int>(std::max<size_t>(1, o_.expected));
  jobs_ = std::clamp(o_.jobs > 0 ? o_.jobs : baselineJobs(cores_), 1, expected);
  // Batches small enough that the processes end together (about four per
  // process), at most 8 bundles.
  batch_ = std::clamp<size_t>(o_.expected / (static_cast<size_t>(jobs_) * 4), 1, 8);
  share(jobs_);
}

BaselinePool::~BaselinePool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = abandoned_ = true;
  }
  cv_.notify_all();
  join();
}

void BaselinePool::share(int at_once) {
  const std::string threads = std::to_string(std::max(1, cores_ / at_once));
  env_ = {{"TORCHINDUCTOR_COMPILE_THREADS", threads}, {"OMP_NUM_THREADS", threads}};
}

void BaselinePool::start(int at_once) {
  for (int t = 0; t < at_once; ++t) threads_.emplace_back([this] { slot(); });
}

void BaselinePool::join() {
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
}

void BaselinePool::add(const std::string& dir) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_ || !known_.insert(dir).second) return;
    added_.push_back(dir);
    queue_.emplace_back(dir, Clock::now());
    if (threads_.empty()) {
      std::fprintf(stderr, "kbsynth: baselines for %s: %zu bundles expected, %d at once (batches of up to %zu), "
                   "%s threads each\n", o_.device.c_str(), std::max(o_.expected, added_.size()), jobs_, batch_,
                   env_.front().second.c_str());
      start(jobs_);
    }
  }
  cv_.notify_one();
}

void BaselinePool::expectOneFewer() {
  std::lock_guard<std::mutex> lock(mu_);
  if (o_.expected > 0) --o_.expected;
}

void BaselinePool::record(const Json& line) {
  const std::string dir = line.value("dir", "");
  if (!known_.count(dir)) return;
  const bool first = !results_.count(dir);
  // A run again with another compiler reports what the first had built as cached.
  if (!first && line.value("status", "") == "cached" && results_[dir].value("status", "") == "ok") return;
  results_[dir] = line;
  if (!first) return;  // the same bundle again, after a run with another compiler
  ++done_;
  const size_t total = std::max(o_.expected, added_.size());
  const double s = std::chrono::duration<double>(Clock::now() - t0_).count();
  const double rate = s > 0 ? static_cast<double>(done_) / s : 0;
  const int eta = rate > 0 && total > done_ ? static_cast<int>(static_cast<double>(total - done_) / rate) : 0;
  const std::string what = line.value("status", "") == "failed"
                               ? line.value("reason", "") + ": " + line.value("message", "")
                               : line.value("status", "");
  std::fprintf(stderr, "kbsynth: baseline [%zu/%zu] %s: %s (%.2f/min, %dm%02ds left)\n", done_, total,
               line.value("id", "?").c_str(), what.c_str(), rate * 60, eta / 60, eta % 60);
}

void BaselinePool::slot() {
  for (;;) {
    std::vector<std::string> mine;
    {
      std::unique_lock<std::mutex> lock(mu_);
      for (;;) {
        if (abandoned_ || no_device_ || stopping()) return;
        if (queue_.empty() && closed_) return;
        // A full batch, the last of them, or one that has waited long enough.
        if (!queue_.empty() &&
            (closed_ || queue_.size() >= batch_ || Clock::now() - queue_.front().second >= kFillWait))
          break;
        cv_.wait_for(lock, kPoll);
      }
      while (!queue_.empty() && mine.size() < batch_) {
        mine.push_back(queue_.front().first);
        queue_.pop_front();
      }
    }
    std::vector<std::string> args = {"--device", o_.device, "--weights", o_.weights};
    if (o_.force) args.push_back("--force");
    args.insert(args.end(), mine.begin(), mine.end());
    python::ScriptResult r = python::runBaselineScript(
        o_.python, args,
        [&](const Json& line) {
          std::lock_guard<std::mutex> lock(mu_);
          record(line);
        },
        env_);
    std::lock_guard<std::mutex> lock(mu_);
    if (r.exit_code == 3) {  // baseline.py: no such device
      no_device_ = true;
      cv_.notify_all();
      return;
    }
    if (!r.note.empty())
      for (const auto& d : mine)
        if (results_.count(d)) results_[d]["note"] = r.note.substr(1);
    if (stopping()) return;
    // The process ended before reporting all of its batch: it died on the
    // first one it did not report; the others go back to the queue.
    bool culprit = true;
    std::vector<std::pair<std::string, Clock::time_point>> again;
    for (const auto& d : mine) {
      if (results_.count(d)) continue;
      if (culprit) {
        record({{"dir", d}, {"status", "failed"}, {"reason", "internal_error"},
                {"message", "baseline.py ended on this bundle without reporting it (exit " +
                                std::to_string(r.exit_code) + (r.exit_code >= 128 ? ": killed by a signal)" : ")")}});
        culprit = false;
      } else {
        again.emplace_back(d, Clock::time_point{});  // at the front, and taken at once
      }
    }
    queue_.insert(queue_.begin(), again.begin(), again.end());
    if (!again.empty()) cv_.notify_all();
  }
}

std::map<std::string, Json> BaselinePool::finish() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }
  cv_.notify_all();
  join();
  if (no_device_) throw Error("baseline.py: no CUDA device for --device " + o_.device);
  std::vector<std::string> alone;
  for (const auto& d : added_)
    if (results_.count(d) && results_[d].value("reason", "") == "out_of_memory") alone.push_back(d);
  if (jobs_ > 1 && !alone.empty() && !stopping()) {
    std::fprintf(stderr, "kbsynth: %zu baseline(s) ran the GPU out of memory beside the others: building them again "
                 "one at a time\n", alone.size());
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& d : alone) {
        results_.erase(d);
        queue_.emplace_back(d, Clock::time_point{});
      }
      done_ -= alone.size();
      batch_ = 1;
      share(1);
      start(1);
    }
    join();
    for (const auto& d : alone)
      if (results_.count(d)) results_[d]["ran_alone"] = true;
  }
  const bool stopped = stopping();
  for (const auto& d : added_)
    if (!results_.count(d) && !stopped)
      results_[d] = {{"dir", d}, {"status", "failed"}, {"reason", "internal_error"},
                     {"message", "baseline.py stopped before it reported this bundle (the process died)"}};
  return results_;
}

}  // namespace kb::synth
