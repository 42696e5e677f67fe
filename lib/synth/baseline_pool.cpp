#include "synth/baseline_pool.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "core/error.h"
#include "core/report.h"
#include "task/bundle.h"

namespace kb::synth {
namespace {

namespace fs = std::filesystem;

constexpr double kPoll = 0.2;  // seconds between looks at a stop and the time
// baseline.py's own alarm ends a build at $KB_BASELINE_TIMEOUT; a worker
// still silent this much later (stuck in a call that ignores the alarm) is
// killed. On the H200 KernelBench's LSTM builds stayed silent past their
// alarm until the import was stopped. The wait is the timeout itself,
// between 10 s and 30 s: a short timeout (a test's) does not wait 30 s.
double timeoutGrace(double timeout_s) { return std::clamp(timeout_s, 10.0, 30.0); }

double baselineTimeout() {
  const char* v = std::getenv("KB_BASELINE_TIMEOUT");
  return v && *v ? std::max(0.0, std::atof(v)) : 900.0;
}

Json failedLine(const std::string& dir, const std::string& message) {
  return {{"dir", dir}, {"status", "failed"}, {"reason", "internal_error"}, {"message", message}};
}

// Records a build killed for its time as baseline.py records its own
// failures (compiled/<arch>.failed.json, docs/task-format.md), so that a
// resumed import does not build it again for as long; best effort.
void rememberTimeout(const Json& building, const Json& failed, double timeout_s) {
  if (!building.is_object() || !building.contains("memo")) return;
  Json memo = building;
  memo.erase("memo");
  memo.erase("id");
  memo.update({{"reason", "timeout"},
                {"message", failed.value("message", "")},
                {"error", "timeout: " + failed.value("message", "")},
                {"retry_alone", false},
                {"timeout_s", static_cast<int>(timeout_s)},
                {"at", nowIso8601()}});
  try {
    const fs::path path = building.value("memo", "");
    fs::create_directories(path.parent_path());
    writeJsonFile(path, memo);
  } catch (const std::exception&) {
  }
}

}  // namespace

int baselineJobs(int cores) { return std::clamp(cores / 4, 1, 8); }

namespace {

constexpr double kDeviceShare = 0.7;  // of the device's memory, for the builds together (captures share it)

template <class Spec>
uint64_t specBytes(const std::vector<Spec>& specs) {
  uint64_t total = 0;
  for (const Spec& t : specs) {
    uint64_t n = task::dtypeBytes(t.dtype);  // 0 for a scalar input (no dtype)
    for (int64_t d : t.shape) n *= static_cast<uint64_t>(d);
    total += n;
  }
  return total;
}

}  // namespace

uint64_t bundleDeviceBytes(const std::string& bundle_dir) {
  try {
    const fs::path file = fs::path(bundle_dir) / "task.json";
    const task::TaskInfo info = task::parseTaskInfo(readJsonFile(file), file.string());
    return 4 * (specBytes(info.inputs) + specBytes(info.outputs)) + 2 * specBytes(info.state);
  } catch (const std::exception&) {
    return 0;
  }
}

std::vector<BaselinePool::Queued>::iterator BaselinePool::nextFitting() {
  auto best = queue_.end();
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    const uint64_t need = device_bytes_[it->dir];
    if (device_budget_ > 0 && building_ > 0 && reserved_ + need > device_budget_) continue;
    if (best == queue_.end() || it->size > best->size || (it->size == best->size && it->order < best->order)) best = it;
  }
  return best;
}

BaselinePool::BaselinePool(BaselinePoolOptions o) : o_(std::move(o)) {
  cores_ = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const int expected = static_cast<int>(std::max<size_t>(1, o_.expected));
  jobs_ = std::clamp(o_.jobs > 0 ? o_.jobs : baselineJobs(cores_), 1, expected);
  timeout_s_ = baselineTimeout();
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
  // One compile cache for all the workers (kernels recur across tasks), where
  // Inductor keeps it by default, not in each worker's own $TMPDIR.
  if (!std::getenv("TORCHINDUCTOR_CACHE_DIR")) {
    const char* tmp = std::getenv("TMPDIR");
    const char* user = std::getenv("USER");
    env_.emplace_back("TORCHINDUCTOR_CACHE_DIR", (fs::path(tmp && *tmp ? tmp : "/tmp") /
                                                  ("torchinductor_" + std::string(user && *user ? user : "kb")))
                                                     .string());
  }
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
  std::error_code ec;
  const uintmax_t size = fs::file_size(fs::path(dir) / "model.py", ec);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_ || !known_.insert(dir).second) return;
    added_.push_back(dir);
    device_bytes_[dir] = o_.device == "cpu" ? 0 : bundleDeviceBytes(dir);
    queue_.push_back({dir, ec ? 0 : size, added_.size()});
    if (threads_.empty()) {
      std::fprintf(stderr, "kbsynth: baselines for %s: %zu bundles expected, %d at once (the largest programs "
                   "first), %s threads each\n", o_.device.c_str(), std::max(o_.expected, added_.size()), jobs_,
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
  if (!known_.count(dir) || results_.count(dir)) return;
  results_[dir] = line;
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

std::unique_ptr<python::ScriptWorker> BaselinePool::startWorker(std::string& why, bool& system_cxx) {
  std::vector<std::string> args = {"--device", o_.device, "--weights", o_.weights};
  if (o_.force) args.push_back("--force");
  args.push_back("-");
  python::EnvOverrides env;
  {
    std::lock_guard<std::mutex> lock(mu_);
    env = env_;
    system_cxx = system_cxx_;
    if (system_cxx_) env.insert(env.end(), {{"CXX", "/usr/bin/c++"}, {"CC", "/usr/bin/cc"}});
  }
  auto w = std::make_unique<python::ScriptWorker>(o_.python, "baseline.py", args, env);
  std::string line;
  while (w->readLine(line, 300) == python::ScriptWorker::Read::line) {  // importing torch takes seconds
    Json j = Json::parse(line, nullptr, false);
    if (j.is_object() && j.contains("hello")) {
      const Json& hello = j["hello"];
      if (hello.is_object() && hello.contains("device_memory") && hello["device_memory"].is_number_unsigned()) {
        std::lock_guard<std::mutex> lock(mu_);
        device_budget_ = static_cast<uint64_t>(kDeviceShare * static_cast<double>(hello["device_memory"].get<uint64_t>()));
      }
      return w;
    }
  }
  w->kill();
  const int code = w->wait();
  if (code == 3) {  // baseline.py: no such device
    std::lock_guard<std::mutex> lock(mu_);
    no_device_ = true;
    cv_.notify_all();
  }
  why = "baseline.py exited (status " + std::to_string(code) + ") before it was ready";
  return nullptr;
}

void BaselinePool::slot() {
  std::unique_ptr<python::ScriptWorker> w;
  bool w_system_cxx = false;  // the compiler `w` builds with
  for (;;) {
    std::string dir;
    uint64_t need = 0;  // the build's device bytes, reserved while it runs
    std::string start_failed;  // why a worker could not start: the next bundle fails with it
    for (bool ready = false; !ready;) {
      std::unique_lock<std::mutex> lock(mu_);
      for (;;) {
        if (abandoned_ || no_device_ || stopping()) return;  // `w` is killed as it goes
        if (!queue_.empty()) break;
        if (closed_) {
          lock.unlock();
          if (w) w->wait();  // end of input: the worker exits
          return;
        }
        cv_.wait_for(lock, std::chrono::duration<double>(kPoll));
      }
      if (!w && start_failed.empty()) {
        // The worker first: its hello says how much memory the device has,
        // which the choice below needs.
        lock.unlock();
        w = startWorker(start_failed, w_system_cxx);
        continue;
      }
      auto it = start_failed.empty() ? nextFitting() : queue_.begin();
      if (it == queue_.end()) {  // none fits beside the builds running: wait for one to end
        cv_.wait_for(lock, std::chrono::duration<double>(kPoll));
        continue;
      }
      dir = it->dir;
      queue_.erase(it);
      if (!start_failed.empty()) {
        if (!no_device_) record(failedLine(dir, start_failed));
        start_failed.clear();
        continue;
      }
      need = device_bytes_[dir];
      reserved_ += need;
      ++building_;
      ready = true;
    }
    // Whatever way the build ends, its reservation ends with it.
    struct Release {
      BaselinePool* pool;
      uint64_t bytes;
      ~Release() {
        std::lock_guard<std::mutex> lock(pool->mu_);
        pool->reserved_ -= bytes;
        --pool->building_;
        pool->cv_.notify_all();
      }
    } release{this, need};
    const auto t0 = Clock::now();
    bool answered = false, stop = false, timed_out = false;
    Json building;  // baseline.py's "building" line: what its failure record needs
    std::string line;
    bool sent = w->send(Json{{"dir", dir}}.dump());
    while (sent) {
      auto r = w->readLine(line, kPoll);
      if (r == python::ScriptWorker::Read::eof) break;
      if (r == python::ScriptWorker::Read::line) {
        Json j = Json::parse(line, nullptr, false);
        if (!j.is_object() || j.value("dir", "") != dir) continue;
        if (j.contains("building")) {
          building = j["building"];
          building["id"] = j.value("id", "");
          continue;
        }
        j["started_s"] = std::round(std::chrono::duration<double>(t0 - t0_).count() * 10) / 10;
        std::lock_guard<std::mutex> lock(mu_);
        record(j);
        answered = true;
        break;
      }
      if (stopping()) {
        stop = true;
        break;
      }
      if (timeout_s_ > 0 && std::chrono::duration<double>(Clock::now() - t0).count() > timeout_s_ + timeoutGrace(timeout_s_)) {
        timed_out = true;
        break;
      }
    }
    if (answered) continue;
    if (stop) return;  // not recorded: a stop's bundles are not done
    if (timed_out) w->kill();
    const int code = w->wait();
    w.reset();
    std::lock_guard<std::mutex> lock(mu_);
    if (timed_out) {
      Json failed = {{"dir", dir}, {"id", building.is_object() ? building.value("id", "?") : "?"},
                     {"status", "failed"}, {"reason", "timeout"},
                     {"message", "no result within " + std::to_string(static_cast<int>(timeout_s_ + timeoutGrace(timeout_s_))) +
                                     " s (a call that ignored baseline.py's alarm); its worker was killed and replaced"}};
      rememberTimeout(building, failed, timeout_s_);
      record(failed);
      continue;
    }
    // A worker killed by a signal while it built with another $CXX than the
    // system's: its bundle is built again, once, by a worker with /usr/bin/c++,
    // and so are all later builds. Every worker started before the switch
    // counts, not only the first to die: the builds start together (16 at once
    // on the GPU machine, 2026-12-06) and all of them died with /opt/gcc's g++.
    if (code >= 128 && !w_system_cxx && python::otherCxxThanSystem() && retried_.insert(dir).second) {
      if (!system_cxx_)
        std::fprintf(stderr, "kbsynth: baseline.py was killed by signal %d with CXX=%s; building with /usr/bin/c++ "
                     "from now on\n", code - 128, std::getenv("CXX"));
      system_cxx_ = true;
      queue_.push_back({dir, UINTMAX_MAX, 0});
      cv_.notify_one();
      continue;
    }
    record(failedLine(dir, "baseline.py died on this bundle (exit " + std::to_string(code) +
                               (code >= 128 ? ": killed by a signal" : "") + "); its worker was replaced"));
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
    if (results_.count(d) && (results_[d].value("retry_alone", false) || results_[d].value("reason", "") == "out_of_memory"))
      alone.push_back(d);
  if (jobs_ > 1 && !alone.empty() && !stopping()) {
    std::fprintf(stderr, "kbsynth: %zu baseline(s) ran the GPU out of memory beside the others (or failed as if "
                 "they had): building them again one at a time\n", alone.size());
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& d : alone) {
        results_.erase(d);
        queue_.push_back({d, 0, queue_.size()});
      }
      done_ -= alone.size();
      share(1);
      start(1);
    }
    join();
    for (const auto& d : alone)
      if (results_.count(d)) results_[d]["ran_alone"] = true;
  }
  const bool stopped = stopping();
  for (const auto& d : retried_)
    if (results_.count(d))
      results_[d]["note"] = "baseline.py was killed by a signal with CXX=" + std::string(std::getenv("CXX")) +
                            "; built again with /usr/bin/c++";
  for (const auto& d : added_)
    if (!results_.count(d) && !stopped) results_[d] = failedLine(d, "the baseline pool ended before this bundle");
  return results_;
}

}  // namespace kb::synth
