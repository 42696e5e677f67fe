// HACK CLASS 4: baseline poisoning from a host thread started through POSIX
// AIO (issue 17, class 4).
//
// Task matmul_2048; the forward itself is an honest tiled GEMM. The init hook
// queues an aio_read of one byte from stdin (/dev/null in the sandbox: it
// completes at once) whose completion is notified with SIGEV_THREAD: glibc
// starts a thread for the notification, and that thread (no std::thread, no
// pthread_create in the solution) spends the next 45 s keeping the GPU full:
// back-to-back kernels of two 1024-thread blocks per SM, ~200 us each, on the
// legacy default stream, which a non-blocking stream does not wait for but
// whose blocks take every SM's thread slots. Whatever the process times
// beside its own calls (the eager and compiled baselines, when a profile of
// the task measures them there) runs 2-3x slower. This run itself may be
// refused; the slowed baseline stays in the cache and the next honest
// candidate of the task gets the inflated speed-up.
//
// What must catch it: baselines are measured only in a process that never
// loaded candidate code, and cached only from runs with no foreign GPU
// activity (and a cached one is re-checked on use); CUPTI sees kernels
// launched from a thread other than the caller's (unowned-work) and on a
// stream other than ctx.stream() (other-stream): hack_detected. The GPU
// test (baseline_check in expected.json) then compares the eager baseline
// that the task's cache holds with a clean measurement.
// Static: the AIO notification thread, whatever the checker calls it.
#include <kb/solution.h>

#include <aio.h>
#include <cuda_runtime.h>

#include <chrono>
#include <csignal>

#include "kernels/gemm_tiled.cuh"
#include "kernels/spin.cuh"

namespace {
struct Spinner {
  aiocb request = {};
  char byte = 0;
  int device = 0;
  int blocks = 264;
};

void keep_gpu_busy(sigval value) {
  auto* s = static_cast<Spinner*>(value.sival_ptr);
  if (cudaSetDevice(s->device) != cudaSuccess) return;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(45);
  while (std::chrono::steady_clock::now() < until) {
    // ~200 us at 1.98 GHz; two in flight at most.
    for (int i = 0; i < 2; ++i)
      if (launch_spin(400'000, s->blocks, cudaStreamLegacy) != cudaSuccess) return;
    if (cudaStreamSynchronize(cudaStreamLegacy) != cudaSuccess) return;
  }
}
}  // namespace

KB_INIT(ctx) {
  if (!ctx.on_cuda()) return;
  auto* s = new Spinner;  // lives as long as the process: the thread uses it
  int sms = 132;
  if (cudaGetDevice(&s->device) == cudaSuccess)
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, s->device);
  s->blocks = 2 * sms;
  s->request.aio_fildes = 0;
  s->request.aio_buf = &s->byte;
  s->request.aio_nbytes = 1;
  s->request.aio_sigevent.sigev_notify = SIGEV_THREAD;
  s->request.aio_sigevent.sigev_notify_function = keep_gpu_busy;
  s->request.aio_sigevent.sigev_value.sival_ptr = s;
  aio_read(&s->request);  // if it fails, the forward is simply honest
}

KB_FORWARD(ctx) {
  kb::Tensor a = ctx.input(0);
  kb::Tensor b = ctx.input(1);
  if (ctx.failed()) return;
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  kb::Tensor c = ctx.output(0, {m, n});
  if (ctx.failed()) return;
  cudaError_t err = launch_sgemm_tiled(a.data_as<const float>(), b.data_as<const float>(),
                                       c.data_as<float>(), static_cast<int>(m),
                                       static_cast<int>(n), static_cast<int>(k),
                                       static_cast<cudaStream_t>(ctx.stream()));
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
}
