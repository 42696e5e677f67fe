#include "agent/pool.h"

#include "core/error.h"

namespace kb::agent {

ResourcePool::ResourcePool(std::string kind, std::vector<std::string> slots)
    : kind_(std::move(kind)), slots_(std::move(slots)), busy_(slots_.size(), false),
      epoch_(std::chrono::steady_clock::now()) {
  if (slots_.empty()) throw UsageError("a " + kind_ + " pool needs at least one slot");
}

double ResourcePool::now() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - epoch_).count();
}

ResourcePool::Lease ResourcePool::acquire(const std::string& job) {
  std::unique_lock lock(mu_);
  double asked = now();
  size_t index = 0;
  // First come, first served: a ticket each, and only the oldest waiter
  // takes a free slot (a server's evaluation whose workers wait for this
  // GPU is not overtaken for as long as others keep coming).
  const uint64_t ticket = next_ticket_++;
  cv_.wait(lock, [&] {
    if (ticket != serving_) return false;
    for (index = 0; index < busy_.size(); ++index)
      if (!busy_[index]) return true;
    return false;
  });
  ++serving_;
  cv_.notify_all();  // the next ticket may take another free slot
  return take(index, job, asked);
}

std::optional<ResourcePool::Lease> ResourcePool::tryAcquire(const std::string& job) {
  std::lock_guard lock(mu_);
  if (serving_ != next_ticket_) return std::nullopt;  // others wait: they come first
  for (size_t index = 0; index < busy_.size(); ++index)
    if (!busy_[index]) return take(index, job, now());
  return std::nullopt;
}

ResourcePool::Lease ResourcePool::take(size_t index, const std::string& job, double asked) {
  busy_[index] = true;
  ++in_use_;
  if (in_use_ > max_in_use_) max_in_use_ = in_use_;
  double start = now();
  return Lease(this, index, slots_[index], job, start - asked, start);
}

void ResourcePool::release(size_t index, const std::string& job, double start, double waited) {
  std::lock_guard lock(mu_);
  busy_[index] = false;
  --in_use_;
  double end = now();
  busy_seconds_ += end - start;
  if (log_.size() >= kMaxTimeline) log_.erase(log_.begin());
  log_.push_back({{"kind", kind_}, {"slot", slots_[index]}, {"job", job},
                  {"waited_s", waited}, {"start_s", start}, {"end_s", end}});
  cv_.notify_all();  // the oldest ticket takes it
}

Json ResourcePool::timeline() const {
  std::lock_guard lock(mu_);
  return log_;
}

double ResourcePool::busySeconds() const {
  std::lock_guard lock(mu_);
  return busy_seconds_;
}

size_t ResourcePool::maxConcurrent() const {
  std::lock_guard lock(mu_);
  return max_in_use_;
}

ResourcePool::Lease::Lease(ResourcePool* pool, size_t index, std::string slot, std::string job,
                           double waited, double start)
    : pool_(pool), index_(index), slot_(std::move(slot)), job_(std::move(job)), waited_(waited),
      start_(start) {}

ResourcePool::Lease::Lease(Lease&& o) noexcept
    : pool_(o.pool_), index_(o.index_), slot_(std::move(o.slot_)), job_(std::move(o.job_)),
      waited_(o.waited_), start_(o.start_) {
  o.pool_ = nullptr;
}

ResourcePool::Lease::~Lease() {
  if (pool_) pool_->release(index_, job_, start_, waited_);
}

Json ResourcePool::Lease::record() const {
  return {{"kind", pool_ ? pool_->kind() : ""}, {"slot", slot_}, {"job", job_},
          {"waited_s", waited_}, {"start_s", start_}};
}

}  // namespace kb::agent
