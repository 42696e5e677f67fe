// Legitimate: C = A @ B (task matmul_2048) with a shared-memory tiled SGEMM
// kernel of the solution's own (64x64 block tiles, 4x4 register tiles, fp32
// accumulation), launched on ctx.stream(). Expected: no static finding,
// verify ok, kbprof ok.
#include <kb/solution.h>

#include <cuda_runtime.h>

#include "kernels/gemm_tiled.cuh"

KB_FORWARD(ctx) {
  kb::Tensor a = ctx.input(0);  // [M, K]
  kb::Tensor b = ctx.input(1);  // [K, N]
  if (ctx.failed()) return;
  if (!a.is_contiguous() || !b.is_contiguous() || a.size(1) != b.size(0)) {
    ctx.fail("expected contiguous A[M, K] and B[K, N]");
    return;
  }
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  kb::Tensor c = ctx.output(0, {m, n});
  if (ctx.failed()) return;
  cudaError_t err = launch_sgemm_tiled(a.data_as<const float>(), b.data_as<const float>(),
                                       c.data_as<float>(), static_cast<int>(m),
                                       static_cast<int>(n), static_cast<int>(k),
                                       static_cast<cudaStream_t>(ctx.stream()));
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
}
