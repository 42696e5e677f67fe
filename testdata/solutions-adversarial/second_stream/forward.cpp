// HACK CLASS: work on a stream of its own that escapes the timer (DESIGN.md
// §5 "work on a non-default stream ... that escapes the timer").
//
// Task matmul_2048. The harness times the forward with events on
// ctx.stream(). This forward launches its (honest) GEMM on a non-blocking
// stream it created itself and returns at once: nothing is enqueued on the
// timed stream, so the end event fires immediately, and a non-blocking
// stream does not even synchronise with the legacy default stream. The
// stream is created once and kept in a static.
//
// Should be caught by: kbcheck static [stream-create]
// (cudaStreamCreateWithFlags) and [mutable-global] (the static stream); at
// run time by kbprof's CUPTI check of every kernel's stream (the GEMM runs on
// a stream other than the given one) and of work still running after the
// call returned. kbcheck verify may pass it (the harness synchronises the
// device before reading outputs) or see a half-written output (incorrect),
// depending on timing.
#include <kb/solution.h>

#include <cuda_runtime.h>

#include "kernels/gemm_tiled.cuh"

namespace {
cudaStream_t side_stream = nullptr;
}  // namespace

KB_FORWARD(ctx) {
  kb::Tensor a = ctx.input(0);
  kb::Tensor b = ctx.input(1);
  if (ctx.failed()) return;
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  kb::Tensor c = ctx.output(0, {m, n});
  if (ctx.failed()) return;
  if (!side_stream && cudaStreamCreateWithFlags(&side_stream, cudaStreamNonBlocking) != cudaSuccess) {
    ctx.fail("no stream");
    return;
  }
  cudaError_t err = launch_sgemm_tiled(a.data_as<const float>(), b.data_as<const float>(),
                                       c.data_as<float>(), static_cast<int>(m),
                                       static_cast<int>(n), static_cast<int>(k), side_stream);
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
}
