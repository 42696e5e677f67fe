// Legitimate: y = silu(x) (task silu_large, 32M floats) with a vectorised
// (float4) grid-stride kernel on ctx.stream(). Expected: no static finding,
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
  cudaError_t err = launch_silu(x.data_as<const float>(), y.data_as<float>(), x.numel(),
                                static_cast<cudaStream_t>(ctx.stream()));
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
}
