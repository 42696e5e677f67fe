// kbsynth's capture pool: scripts/capture.py as long-lived workers
// (`capture.py - --timeout S --threads N`), several at once, one task at a
// time each, so that an import of hundreds of tasks pays one Python start-up
// per worker and uses the machine's cores.
//
// A task fails alone, with its true reason, and its worker is replaced so the
// rest go on:
//   timeout        no result within the limit (capture.py's own alarm, or,
//                  when a C call ignores it, the pool kills the worker once
//                  the limit has passed again, by at most 30 s)
//   out_of_memory  the task's worker alone passed the whole memory budget
//                  (the pool measures every worker's resident memory every
//                  0.2 s). When the workers together pass it, the largest is
//                  stopped and its task runs again later with the machine to
//                  itself (the others wait): only a task too big on its own fails.
//   crash          the worker died on the task (a signal or an exit); a
//                  SIGKILL the pool did not send is named in the message as
//                  the kernel's out-of-memory killer's, most likely
// Tasks not started when a stop is asked are left out of the results (the
// caller reports them as not done).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"

namespace kb::synth {

struct CapturePoolOptions {
  std::string python;               // the interpreter (task/scripts.h pythonPath)
  int workers = 1;                  // processes at once
  int threads = 0;                  // torch threads per worker (0: capture.py's default)
  std::string device;               // where capture.py runs the forwards: cpu, cuda, cuda:N ("": its default)
  double task_timeout_s = 300;      // per task
  uint64_t memory_budget_bytes = 0; // all workers together (0: no limit)
  std::function<bool()> stop;       // asked between tasks and while waiting
  // Asked when a task fails: a message when the failure is the machine's
  // (a full disk: core/file.h outOfSpace), not the task's. Then the task is
  // recorded as not done ({"status": "interrupted", "reason":
  // "machine_fault", "message": ...}), never as failed, and the pool stops
  // starting tasks.
  std::function<std::optional<std::string>(const Json& failed)> machine_fault;
  // Called (under a lock, in completion order) for each result.
  std::function<void(const Json& result, size_t done, size_t total)> on_result;
};

// The workers the machine affords: at most `requested` (0: one per two
// cores, at most 8), at most one per job, at least one; the memory budget
// is `memory_budget` (0: 80% of MemAvailable).
struct CapturePlan {
  int workers = 1;
  uint64_t memory_budget_bytes = 0;
};
CapturePlan planCapture(size_t jobs, int requested, uint64_t memory_budget);

// Captures `jobs` (capture.py's job lines); one result per job started, by
// its "dir". Throws kb::Error when no worker could be started at all.
std::map<std::string, Json> runCapturePool(const std::vector<Json>& jobs, const CapturePoolOptions& o);

// Resident memory of a process in bytes (/proc/PID/status VmRSS); 0 when gone.
uint64_t residentBytes(int pid);

}  // namespace kb::synth
