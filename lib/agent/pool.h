// A pool of exclusive slots (GPUs, or CPU workers): a job takes a slot, has it
// to itself, and gives it back. Every lease is logged with its times, so a run
// can show its timeline and that no two jobs ever shared a GPU.
#pragma once

#include <chrono>
#include <cstdint>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"

namespace kb::agent {

class ResourcePool {
 public:
  // `slots` are the names handed out, e.g. {"0","1"} for GPU ordinals.
  ResourcePool(std::string kind, std::vector<std::string> slots);

  class Lease {
   public:
    Lease(Lease&& other) noexcept;
    Lease& operator=(Lease&&) = delete;
    Lease(const Lease&) = delete;
    ~Lease();
    const std::string& slot() const { return slot_; }
    double waitedSeconds() const { return waited_; }
    // {"kind","slot","job","waited_s","start_s","end_s"}; times since the pool's start.
    Json record() const;

   private:
    friend class ResourcePool;
    Lease(ResourcePool* pool, size_t index, std::string slot, std::string job, double waited,
          double start);
    ResourcePool* pool_;
    size_t index_;
    std::string slot_;
    std::string job_;
    double waited_;
    double start_;
  };

  // Blocks until a slot is free and every earlier caller has one (first
  // come, first served); `job` names the holder in the log.
  Lease acquire(const std::string& job);
  // A slot now if one is free and nobody waits for one; else nothing.
  std::optional<Lease> tryAcquire(const std::string& job);

  const std::string& kind() const { return kind_; }
  size_t size() const { return slots_.size(); }
  // Every finished lease, in order of release.
  Json timeline() const;
  // The most leases held at once (<= size(), by construction).
  size_t maxConcurrent() const;
  // Seconds slots were held, summed over slots and over leases given back
  // (a long-running server's busy fraction: this over size() x uptime).
  double busySeconds() const;
  // The timeline keeps the last this many leases (a server runs for days).
  static constexpr size_t kMaxTimeline = 100000;

 private:
  // Marks slot `index` taken (mu_ held) and makes its lease.
  Lease take(size_t index, const std::string& job, double asked);
  void release(size_t index, const std::string& job, double start, double waited);
  double now() const;

  std::string kind_;
  std::vector<std::string> slots_;
  std::vector<bool> busy_;
  size_t in_use_ = 0, max_in_use_ = 0;
  uint64_t next_ticket_ = 0, serving_ = 0;  // acquire()'s queue
  double busy_seconds_ = 0;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  Json log_ = Json::array();
  std::chrono::steady_clock::time_point epoch_;
};

}  // namespace kb::agent
