// KernelBench level1/94_MSELoss: y = mean((p - t)^2), a 0-d tensor, for p, t
// [32768, 32768] fp32 (4 GiB each).
// Technique: ONE streaming pass over both inputs (128-bit loads, a grid of a
// few blocks per SM, each thread accumulating its share), per-block partial
// sums in scratch, then one tiny block folds them and divides by n. Eager
// writes and rereads two 4 GiB intermediates (sub, pow) before its mean.
// Exact: each element's d = p - t and d * d are rounded in fp32 exactly as the
// reference's sub and pow (no fma contraction: __fmul_rn), and the 1.07e9
// squares are summed in fp64, so the sum carries no accumulation error the
// fp32 reference's cascade sum would not; one rounding to fp32 at the end.
#include <kb/solution.h>

#include <cuda_runtime.h>

#include "kernels/mse.cuh"

KB_FORWARD(ctx) {
  kb::Tensor p = ctx.input(0);
  kb::Tensor t = ctx.input(1);
  if (ctx.failed()) return;
  if (!p.is_contiguous() || !t.is_contiguous() || p.dtype != KB_FLOAT32 || t.dtype != KB_FLOAT32 ||
      p.numel() != t.numel()) {
    ctx.fail("expected two contiguous float32 inputs of the same shape");
    return;
  }
  kb::Tensor y = ctx.output(0, 0, nullptr);  // a 0-d tensor, as torch.mean returns
  const int blocks = mse_blocks();
  void* partials = ctx.scratch(sizeof(double) * static_cast<size_t>(blocks));
  if (ctx.failed()) return;
  cudaError_t err = launch_mse(p.data_as<const float>(), t.data_as<const float>(), p.numel(), y.data_as<float>(),
                               static_cast<double*>(partials), blocks, static_cast<cudaStream_t>(ctx.stream()));
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
}
