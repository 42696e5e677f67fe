// One GPU shared by several evaluations' untimed work, timed work alone
// (kbserve --gpu-share K, docs/kbserve.md "Scheduling"): a reader-writer
// gate. Shared holders are evaluations whose workers set up their device,
// verify, or check a profile's outputs once its candidate is gone; the
// exclusive holder runs a profile's baselines and candidate, from the
// library's hand-over to the end of the candidate's process group
// (profile::ProfileOptions::exclusive_gpu). Waiting exclusive holders go
// first: no new shared holder enters while one waits, so timing is never
// starved by a stream of set-ups.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "profile/profile.h"

namespace kb::serve {

class GpuGate {
 public:
  void lockShared();
  void unlockShared();
  void lock();
  void unlock();
  // Seconds with any holder, and with the exclusive one, since construction.
  double occupiedSeconds() const;
  double exclusiveSeconds() const;

 private:
  using Clock = std::chrono::steady_clock;
  void occupancyChanged(Clock::time_point now);  // mu_ held, before a change of holders

  mutable std::mutex mu_;
  std::condition_variable cv_;
  int shared_ = 0;
  bool exclusive_ = false;
  int exclusive_waiting_ = 0;
  Clock::time_point last_change_ = Clock::now();
  double occupied_ = 0, exclusive_seconds_ = 0;
};

// One evaluation's share of its GPU: shared from enter() to its end, but
// exclusive while exclusive()'s result lives (shared again afterwards).
// Without enter() (no sharing, or a CPU evaluation) exclusive() returns an
// empty holder: the lease is exclusive already.
class GpuShare {
 public:
  GpuShare() = default;
  GpuShare(const GpuShare&) = delete;
  GpuShare& operator=(const GpuShare&) = delete;
  ~GpuShare();
  void enter(GpuGate& gate);
  profile::ExclusiveGpu exclusive();

 private:
  std::mutex mu_;  // (one evaluation's thread; the lock keeps the states plain)
  GpuGate* gate_ = nullptr;
  bool shared_ = false;
};

}  // namespace kb::serve
