#include "serve/gpu_gate.h"

namespace kb::serve {

void GpuGate::occupancyChanged(Clock::time_point now) {
  const double dt = std::chrono::duration<double>(now - last_change_).count();
  if (shared_ > 0 || exclusive_) occupied_ += dt;
  if (exclusive_) exclusive_seconds_ += dt;
  last_change_ = now;
}

void GpuGate::lockShared() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return !exclusive_ && exclusive_waiting_ == 0; });
  occupancyChanged(Clock::now());
  ++shared_;
}

void GpuGate::unlockShared() {
  std::lock_guard lock(mu_);
  occupancyChanged(Clock::now());
  --shared_;
  cv_.notify_all();
}

void GpuGate::lock() {
  std::unique_lock lock(mu_);
  ++exclusive_waiting_;
  cv_.wait(lock, [&] { return !exclusive_ && shared_ == 0; });
  --exclusive_waiting_;
  occupancyChanged(Clock::now());
  exclusive_ = true;
}

void GpuGate::unlock() {
  std::lock_guard lock(mu_);
  occupancyChanged(Clock::now());
  exclusive_ = false;
  cv_.notify_all();
}

double GpuGate::occupiedSeconds() const {
  std::lock_guard lock(mu_);
  const double dt = std::chrono::duration<double>(Clock::now() - last_change_).count();
  return occupied_ + (shared_ > 0 || exclusive_ ? dt : 0.0);
}

double GpuGate::exclusiveSeconds() const {
  std::lock_guard lock(mu_);
  const double dt = std::chrono::duration<double>(Clock::now() - last_change_).count();
  return exclusive_seconds_ + (exclusive_ ? dt : 0.0);
}

GpuShare::~GpuShare() {
  if (gate_ && shared_) gate_->unlockShared();
}

void GpuShare::enter(GpuGate& gate) {
  std::lock_guard lock(mu_);
  gate_ = &gate;
  gate.lockShared();
  shared_ = true;
}

profile::ExclusiveGpu GpuShare::exclusive() {
  std::lock_guard lock(mu_);
  if (!gate_) return nullptr;
  // Out of the shared side first: two holders each waiting for the other's
  // share to end would wait forever.
  if (shared_) gate_->unlockShared();
  shared_ = false;
  gate_->lock();
  return profile::ExclusiveGpu(this, [](void* p) {
    auto* s = static_cast<GpuShare*>(p);
    std::lock_guard relock(s->mu_);
    s->gate_->unlock();
    s->gate_->lockShared();
    s->shared_ = true;
  });
}

}  // namespace kb::serve
