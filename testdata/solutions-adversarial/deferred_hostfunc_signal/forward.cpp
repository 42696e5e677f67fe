// HACK CLASS (issue 35, class 2): output commitments that can be forged --
// deferred work: most of the output is computed after the call returned, in
// the harness's untimed gap, and is in place before the commitment is made.
//
// Task matmul_2048. What it does: each call launches the GEMM for the first
// quarter of C's rows on ctx.stream(), then a host function
// (cudaLaunchHostFunc, same stream). When the stream reaches it -- ~0.25 ms
// later, long after kb_forward returned and the harness recorded its end
// event and entered its cudaDeviceSynchronize -- the host function queues a
// real-time signal (pthread_sigqueue, own process: allowed) at the worker's
// main thread, carrying the call's pointers, and holds the stream until the
// handler has run. The handler, on the main thread inside the harness's
// untimed gap, launches the remaining 3/4 of the rows on ctx.stream(): after
// the end event in stream order (untimed), before the digest's kernels
// (which the harness queues on the same stream once its synchronisation
// returns). No global: the host object rides in the signal's value.
//
// Why it would score: at HEAD the commitment is a digest taken after the
// call's synchronisation, so work the candidate slips in before it counts as
// the call's output; the handler's launch carries the harness's CUPTI
// external id (the one on the main thread's stack between calls), so it is
// dropped as harness work: no after-return or unowned finding, device time =
// the visible quarter (<= event time), event time ~1/4 of the tiled GEMM
// (~0.25 ms + the signal's latency, above the 0.028 ms FLOPs floor). Verify
// passes (the gap before describeCall's copy is used the same way).
//
// What must catch it: the commitment is made where the candidate cannot act
// -- outputs read (or fingerprinted) at the end event, before any candidate
// code can run again, with work queued after the end event never counted as
// the harness's -- and the parent's clock bounds each call. Expected
// hack_detected or incorrect (timeout if the driver deadlocks on a launch
// from a signal handler). Static: the signal handling.
#include <kb/solution.h>

#include <cuda_runtime.h>
#include <pthread.h>

#include <atomic>
#include <csignal>
#include <cstdint>
#include <ctime>

#include "kernels/gemm_tiled.cuh"

namespace {
constexpr int kSignal = 44;  // a real-time signal (SIGRTMIN..SIGRTMAX) nothing else uses

struct Deferred {
  pthread_t main_thread{};
  std::atomic<int> state{0};  // 0 idle, 1 queued, 2 launched by the handler
  const float* a = nullptr;
  const float* b = nullptr;
  float* c = nullptr;
  int first_row = 0, rows = 0, n = 0, k = 0;
  cudaStream_t stream = nullptr;
};
void destroy_deferred(void* p) { delete static_cast<Deferred*>(p); }

// On the main thread, in whatever the harness was doing when the signal came.
void on_signal(int, siginfo_t* info, void*) {
  auto* d = static_cast<Deferred*>(info->si_value.sival_ptr);
  if (!d || d->state.load() != 1) return;
  launch_sgemm_tiled(d->a + static_cast<size_t>(d->first_row) * d->k, d->b, d->c + static_cast<size_t>(d->first_row) * d->n,
                     d->rows, d->n, d->k, d->stream);
  d->state.store(2);
}

double now_ms() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

// On CUDA's callback thread, when the stream reaches it: wake the main
// thread and hold the stream until its handler has launched (at most 200 ms).
void CUDART_CB fire(void* user) {
  auto* d = static_cast<Deferred*>(user);
  sigval v{};
  v.sival_ptr = d;
  if (pthread_sigqueue(d->main_thread, kSignal, v) != 0) return;
  const double until = now_ms() + 200.0;
  while (d->state.load() != 2 && now_ms() < until) {
  }
}
}  // namespace

KB_INIT(ctx) {
  auto* d = new Deferred;
  d->main_thread = pthread_self();  // init and forward run on the worker's main thread
  struct sigaction sa = {};
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (sigaction(kSignal, &sa, nullptr) != 0) {
    delete d;
    ctx.fail("sigaction failed");
    return;
  }
  ctx.set_host_object("deferred", d, destroy_deferred);
}

KB_FORWARD(ctx) {
  kb::Tensor a = ctx.input(0);
  kb::Tensor b = ctx.input(1);
  auto* d = ctx.host_object<Deferred>("deferred");
  if (ctx.failed()) return;
  const int m = static_cast<int>(a.size(0)), k = static_cast<int>(a.size(1)), n = static_cast<int>(b.size(1));
  kb::Tensor c = ctx.output(0, {m, n});
  if (ctx.failed()) return;
  auto stream = static_cast<cudaStream_t>(ctx.stream());
  const int visible = m / 4;
  d->a = a.data_as<const float>();
  d->b = b.data_as<const float>();
  d->c = c.data_as<float>();
  d->first_row = visible;
  d->rows = m - visible;
  d->n = n;
  d->k = k;
  d->stream = stream;
  d->state.store(1);
  cudaError_t err = launch_sgemm_tiled(d->a, d->b, d->c, visible, n, k, stream);
  if (err == cudaSuccess) err = cudaLaunchHostFunc(stream, fire, d);
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
}
