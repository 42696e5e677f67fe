// Legitimate: y = silu(x) (task silu_large, 32M floats), a float4
// grid-stride kernel whose loads and stores carry streaming cache hints
// (__ldcs / __stcs on float4, CUDA's own overloads), on ctx.stream().
// Expected: no static finding (the float4 overloads are beyond Clang 19's
// view of CUDA 13's headers: a parser limit, never the solution's fault),
// verify ok, kbprof ok.
#include <kb/solution.h>

#include <cuda_runtime.h>

#include "kernels/silu.cuh"

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);
  if (ctx.failed()) return;
  if (!x.is_contiguous()) {
    ctx.fail("expected a contiguous input");
    return;
  }
  kb::Tensor y = ctx.output(0, x.ndim, x.sizes);
  if (ctx.failed()) return;
  cudaError_t err = launch_silu_streaming(x.data_as<const float>(), y.data_as<float>(), x.numel(),
                                          static_cast<cudaStream_t>(ctx.stream()));
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
}
