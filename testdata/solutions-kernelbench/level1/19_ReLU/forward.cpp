// KernelBench level1/19_ReLU: y = relu(x) for x [4096, 393216] fp32 (6.4 GB).
// Technique: one memory-bound pass, 128-bit loads/stores (float4), a
// grid-stride loop with 64-bit indices (1.6e9 elements > 2^31), a scalar tail
// for sizes not divisible by 4. Exact: relu is a select, bit-identical to
// torch.relu (NaN stays NaN: `v < 0 ? 0 : v`).
#include <kb/solution.h>

#include <cuda_runtime.h>

#include "kernels/relu.cuh"

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);
  if (ctx.failed()) return;
  if (!x.is_contiguous() || x.dtype != KB_FLOAT32) {
    ctx.fail("expected a contiguous float32 input");
    return;
  }
  kb::Tensor y = ctx.output(0, x.ndim, x.sizes);
  if (ctx.failed()) return;
  cudaError_t err = launch_relu(x.data_as<const float>(), y.data_as<float>(), x.numel(),
                                static_cast<cudaStream_t>(ctx.stream()));
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
}
