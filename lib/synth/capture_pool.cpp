#include "synth/capture_pool.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <shared_mutex>
#include <cmath>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include "core/clock.h"
#include "core/error.h"
#include "python/scripts.h"

namespace kb::synth {
namespace {

// /proc/meminfo's MemAvailable in bytes (0: unknown).
uint64_t memAvailable() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return 0;
}

std::string gib(uint64_t bytes) {
  std::ostringstream s;
  s.precision(2);
  s << std::fixed << static_cast<double>(bytes) / (1ull << 30) << " GiB";
  return s.str();
}

std::string signalText(int sig) {
  const char* name = sigabbrev_np(sig);
  return name ? std::string("SIG") + name : "signal " + std::to_string(sig);
}

Json failed(const Json& job, const std::string& reason, const std::string& message, double seconds) {
  return {{"dir", job.value("dir", "")}, {"id", job.value("id", "")}, {"status", "failed"},
          {"reason", reason},            {"message", message},       {"seconds", std::round(seconds * 1000) / 1000}};
}

}  // namespace

uint64_t residentBytes(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::strtoull(line.c_str() + 6, nullptr, 10) * 1024;
  return 0;
}

CapturePlan planCapture(size_t jobs, int requested, uint64_t memory_budget) {
  CapturePlan p;
  int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int want = requested > 0 ? requested : std::min(8, std::max(1, cores / 2));
  p.workers = static_cast<int>(std::max<size_t>(1, std::min<size_t>(static_cast<size_t>(want), jobs)));
  p.memory_budget_bytes = memory_budget > 0 ? memory_budget : memAvailable() / 10 * 8;
  return p;
}

std::map<std::string, Json> runCapturePool(const std::vector<Json>& jobs, const CapturePoolOptions& o) {
  std::map<std::string, Json> results;
  if (jobs.empty()) return results;
  const int workers = std::max(1, o.workers);
  std::mutex mu;
  size_t next = 0;                // under mu: the next job never started
  std::deque<size_t> alone;       // under mu: jobs to run again with the machine to themselves
  size_t done = 0;
  std::string start_error;        // under mu: set when workers cannot start at all
  bool machine_fault = false;  // under mu: a failure was the machine's; no more tasks start
  std::vector<std::atomic<uint64_t>> rss(static_cast<size_t>(workers));
  std::atomic<bool> handing_back{false};  // a worker is being stopped to free memory
  // Ordinary tasks hold it shared; a task run alone holds it exclusively.
  std::shared_mutex machine;
  std::vector<std::string> args = {"-", "--timeout", std::to_string(static_cast<int>(std::ceil(o.task_timeout_s)))};
  if (o.threads > 0) args.insert(args.end(), {"--threads", std::to_string(o.threads)});
  if (!o.device.empty()) args.insert(args.end(), {"--device", o.device});
  auto stopping = [&] {
    if (o.stop && o.stop()) return true;
    std::lock_guard<std::mutex> lock(mu);
    return !start_error.empty() || machine_fault;
  };
  auto record = [&](const Json& given) {
    Json r = given;
    std::optional<std::string> fault;
    if (r.value("status", "") != "ok" && o.machine_fault) fault = o.machine_fault(r);
    std::lock_guard<std::mutex> lock(mu);
    if (fault) {
      machine_fault = true;
      r = {{"dir", r.value("dir", "")}, {"id", r.value("id", Json(nullptr))}, {"status", "interrupted"},
           {"reason", "machine_fault"}, {"message", *fault}};
    }
    results[r.value("dir", "")] = r;
    ++done;
    if (o.on_result) o.on_result(r, done, jobs.size());
  };
  // The next job and whether it must run alone; false when there is none.
  auto take = [&](size_t& k, bool& by_itself) {
    std::lock_guard<std::mutex> lock(mu);
    if (!alone.empty()) {
      k = alone.front();
      alone.pop_front();
      by_itself = true;
      return true;
    }
    if (next >= jobs.size()) return false;
    k = next++;
    by_itself = false;
    return true;
  };

  auto slot = [&](size_t me) {
    std::unique_ptr<python::ScriptWorker> w;
    int failed_starts = 0;
    // A fresh worker that has said hello; false when none could be started.
    auto start = [&]() -> bool {
      while (!stopping()) {
        w = std::make_unique<python::ScriptWorker>(o.python, "capture.py", args);
        std::string line;
        for (;;) {  // importing torch takes seconds
          if (w->readLine(line, 300) != python::ScriptWorker::Read::line) break;
          Json j = Json::parse(line, nullptr, false);
          if (j.is_object() && j.contains("hello")) return true;
        }
        w->kill();
        int code = w->wait();
        w.reset();
        if (++failed_starts >= 2) {
          std::lock_guard<std::mutex> lock(mu);
          start_error = "capture.py exited (status " + std::to_string(code) + ") before it was ready, twice";
          return false;
        }
      }
      return false;
    };
    size_t k = 0;
    bool by_itself = false;
    // A job handed back goes to `alone`, which the slot that handed it back
    // (still in this loop) or any other takes first.
    while (!stopping() && take(k, by_itself)) {
      const Json& job = jobs[k];
      std::shared_lock<std::shared_mutex> shared(machine, std::defer_lock);
      std::unique_lock<std::shared_mutex> exclusive(machine, std::defer_lock);
      if (by_itself) exclusive.lock(); else shared.lock();
      if (!w && !start()) return;
      auto t0 = Clock::now();
      enum { answered, died, timed_out, over_memory, handed_back, interrupted } outcome = died;
      uint64_t peak = 0;
      std::string line;
      bool sent = w->send(job.dump());
      rss[me] = 1;  // running (a byte until measured)
      while (sent) {
        auto r = w->readLine(line, 0.2);
        if (r == python::ScriptWorker::Read::eof) break;
        if (r == python::ScriptWorker::Read::line) {
          Json j = Json::parse(line, nullptr, false);
          if (!j.is_object() || j.value("dir", "") != job.value("dir", "")) continue;
          rss[me] = 0;
          if (by_itself) j["ran_alone"] = true;  // handed back once, when the workers together were over the budget
          record(j);
          outcome = answered;
          break;
        }
        // Every 0.2 s: memory (this task alone over the budget fails; the
        // workers together over it hand back the largest), time, a stop.
        uint64_t mine = std::max<uint64_t>(1, residentBytes(w->pid()));
        rss[me] = mine;
        peak = std::max(peak, mine);
        if (o.memory_budget_bytes > 0) {
          if (mine > o.memory_budget_bytes) {
            outcome = over_memory;
            break;
          }
          uint64_t total = 0, largest = 0;
          size_t largest_at = me;
          for (size_t i = 0; i < rss.size(); ++i) {
            uint64_t v = rss[i].load();
            total += v;
            if (v > largest) largest = v, largest_at = i;
          }
          // One hand-back at a time: the others judge again once its
          // memory is freed (their figures of it would be stale).
          bool expected = false;
          if (!by_itself && total > o.memory_budget_bytes && largest_at == me &&
              handing_back.compare_exchange_strong(expected, true)) {
            outcome = handed_back;
            break;
          }
        }
        if (since(t0) > o.task_timeout_s + std::min(30.0, o.task_timeout_s)) {
          outcome = timed_out;
          break;
        }
        if (o.stop && o.stop()) {
          outcome = interrupted;
          break;
        }
      }
      if (outcome == answered) continue;
      if (outcome != died) w->kill();
      int code = w->wait();
      w.reset();
      rss[me] = 0;
      const double s = since(t0);
      switch (outcome) {
        case answered:
        case interrupted:  // not recorded: the caller reports it as not done
          break;
        case handed_back: {
          std::lock_guard<std::mutex> lock(mu);
          alone.push_back(k);
          handing_back = false;  // its worker is gone and its memory counted as 0
          break;
        }
        case over_memory:
          record(failed(job, "out_of_memory",
                        "the capture used " + gib(peak) + " of host memory, over the whole budget (" +
                            gib(o.memory_budget_bytes) + ")" + (by_itself ? " with the machine to itself" : "") +
                            "; its worker was replaced",
                        s));
          break;
        case timed_out:
          record(failed(job, "timeout",
                        "no result within " + std::to_string(static_cast<int>(o.task_timeout_s)) +
                            " s (a call that ignored the capture's alarm); its worker was killed and replaced",
                        s));
          break;
        case died: {
          std::string how = code > 128 ? "killed by " + signalText(code - 128) : "exit " + std::to_string(code);
          if (code == 128 + SIGKILL) how += ", not by kbsynth: the kernel's out-of-memory killer, most likely";
          record(failed(job, "crash", "the capture process died on this task (" + how + "); its worker was replaced", s));
          break;
        }
      }
    }
    if (w) w->wait();  // end of input: the worker exits
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < workers; ++t) threads.emplace_back(slot, static_cast<size_t>(t));
  for (auto& t : threads) t.join();
  if (!start_error.empty() && results.empty()) throw Error(start_error);
  return results;
}

}  // namespace kb::synth
