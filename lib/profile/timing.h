// The timing loop of a profile (kbprof), which runs inside the candidate
// worker: kbcheck-worker hands prepareTiming to workerMain (verify/worker.h).
// The protocol is described at the top of timing.cpp. Includes ATen; not for
// torch-free code.
#pragma once

#include <memory>

#include "task/task.h"
#include "verify/worker.h"
#include "verify/worker_internal.h"

namespace kb::profile {

// The timing session of `req` (its "profile" object): baselines first, then
// the candidate; on the CPU the host clock is the timer.
std::unique_ptr<verify::TimingSession> prepareTiming(const verify::WorkerRequest& req, const task::Task& task,
                                                     const task::Reference& reference, const verify::Device& dev,
                                                     const task::CallInputs& inputs);

}  // namespace kb::profile
