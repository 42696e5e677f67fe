// HACK CLASS: a host thread that finishes the work after the call returns
// (DESIGN.md §5 "... or host thread that escapes the timer"), written to
// evade the obvious checks.
//
// Variant of host_thread_std: no <thread>, no <pthread.h> (both refused by
// the include rule) and no std::thread. <mutex> is an allowed header and
// pulls in glibc's pthread declarations, so ::pthread_create is there to
// call; glibc >= 2.34 has it in libc, so the link needs no -lpthread. The
// thread's argument block is heap-allocated and freed by the thread.
//
// Should be caught by: kbcheck static [host-thread] (::pthread_create, by
// the declaration the name resolves to, wherever it was declared); at run
// time by kbprof's CUPTI check of work launched or still running after the
// call returned. kbcheck verify: incorrect (output not yet written) or ok,
// depending on timing.
#include <kb/solution.h>

#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <mutex>

#include "kernels/gemm_tiled.cuh"

namespace {
struct LateWork {
  const float* a;
  const float* b;
  float* c;
  int m, n, k;
  cudaStream_t stream;
  std::atomic<bool> returned{false};
};

void* finish_later(void* arg) {
  auto* w = static_cast<LateWork*>(arg);
  while (!w->returned.load(std::memory_order_acquire)) {
  }
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
  while (std::chrono::steady_clock::now() < until) {
  }
  launch_sgemm_tiled(w->a, w->b, w->c, w->m, w->n, w->k, w->stream);
  delete w;
  return nullptr;
}
}  // namespace

KB_FORWARD(ctx) {
  kb::Tensor a = ctx.input(0);
  kb::Tensor b = ctx.input(1);
  if (ctx.failed()) return;
  const int m = static_cast<int>(a.size(0)), k = static_cast<int>(a.size(1)),
            n = static_cast<int>(b.size(1));
  kb::Tensor c = ctx.output(0, {m, n});
  if (ctx.failed()) return;
  auto* work = new LateWork{a.data_as<const float>(), b.data_as<const float>(), c.data_as<float>(),
                            m, n, k, static_cast<cudaStream_t>(ctx.stream())};
  pthread_t thread;
  if (pthread_create(&thread, nullptr, finish_later, work) != 0) {
    delete work;
    ctx.fail("no thread");
    return;
  }
  pthread_detach(thread);
  work->returned.store(true, std::memory_order_release);
}
