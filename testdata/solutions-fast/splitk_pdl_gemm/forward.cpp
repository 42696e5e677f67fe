// Legitimate (issue 35, class 6 control): C = A @ B (task matmul_2048) by
// split-K with a programmatic-dependent-launch epilogue, all on
// ctx.stream(). Kernel 1: the shared-memory tiled SGEMM over 4 slices of K
// (512 each), fp32 FMA, each slice's partial product into ctx.scratch()
// ([4][M][N] floats, 64 MiB); it executes griddepcontrol.launch_dependents
// once its main loop is done. Kernel 2 (the epilogue), launched with
// cudaLaunchKernelEx and cudaLaunchAttributeProgrammaticStreamSerialization
// on the same stream: griddepcontrol.wait (what cudaGridDependencySynchronize
// compiles to) before it reads a partial, then C = p0 + p1 + p2 + p3 in
// fp32 with float4 loads. Accuracy: as the plain tiled GEMM or better
// (shorter fp32 chains), within the strict 1e-4 contract.
// Expected: no static finding, verify ok, kbprof ok -- both kernels are the
// solution's own, launched from the calling thread on ctx.stream(); the
// epilogue may start before the GEMM has ended (PDL overlap), which is not
// work escaping the timer: both end before the call's end event.
#include <kb/solution.h>

#include <cuda_runtime.h>

#include "kernels/splitk.cuh"

namespace {
constexpr int kSplits = 4;
}  // namespace

KB_FORWARD(ctx) {
  kb::Tensor a = ctx.input(0);  // [M, K]
  kb::Tensor b = ctx.input(1);  // [K, N]
  if (ctx.failed()) return;
  if (!a.is_contiguous() || !b.is_contiguous()) {
    ctx.fail("expected contiguous operands");
    return;
  }
  const int m = static_cast<int>(a.size(0)), k = static_cast<int>(a.size(1)), n = static_cast<int>(b.size(1));
  kb::Tensor c = ctx.output(0, {m, n});
  void* partials = ctx.scratch(static_cast<size_t>(kSplits) * m * n * sizeof(float));
  if (ctx.failed()) return;
  cudaError_t err = launch_splitk_gemm(a.data_as<const float>(), b.data_as<const float>(), c.data_as<float>(),
                                       static_cast<float*>(partials), m, n, k, kSplits,
                                       static_cast<cudaStream_t>(ctx.stream()));
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
}
