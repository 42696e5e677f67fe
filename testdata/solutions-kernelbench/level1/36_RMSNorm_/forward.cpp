// KernelBench level1/36_RMSNorm_: y = x / sqrt(mean(x^2, dim=1) + eps), eps =
// 1e-5 (the module's default, get_init_inputs passes only features), for x
// [112, 64, 512, 512] fp32 (7.5 GB). The mean runs over the 64 channels at
// each (batch, spatial) position, channels 512*512 elements apart.
// Technique: one pass over memory, one thread per spatial position: its 64
// channel values are loaded once (coalesced across the warp: consecutive
// threads, consecutive positions) into registers, squared and summed, then
// divided and stored; eager torch needs pow, mean, add, sqrt and div (five
// kernels, ~4 round trips to DRAM). Exact: fp32 like torch, mean = sum / C,
// sqrtf and an IEEE division x / rms as the reference does (no rsqrt).
// Other channel counts take a two-read fallback kernel.
#include <kb/solution.h>

#include <cuda_runtime.h>

#include "kernels/rmsnorm.cuh"

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);  // [B, C, *]
  if (ctx.failed()) return;
  if (x.ndim < 2 || !x.is_contiguous() || x.dtype != KB_FLOAT32) {
    ctx.fail("expected a contiguous float32 [B, C, ...] input");
    return;
  }
  int64_t inner = 1;
  for (int d = 2; d < x.ndim; ++d) inner *= x.size(d);
  kb::Tensor y = ctx.output(0, x.ndim, x.sizes);
  if (ctx.failed()) return;
  const float eps = 1e-5f;
  cudaError_t err = launch_rmsnorm_dim1(x.data_as<const float>(), y.data_as<float>(), x.size(0), x.size(1), inner,
                                        eps, static_cast<cudaStream_t>(ctx.stream()));
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
}
