// KernelBench level1/88_MinGPTNewGelu: y = 0.5 * x * (1 + tanh(sqrt(2 / pi) *
// (x + 0.044715 * x^3))) for x [8192, 8192] fp32.
// Technique: the whole expression in ONE memory-bound pass with 128-bit loads
// and stores (eager runs pow, mul, add, mul, tanh, add, mul, mul: eight
// kernels and seven intermediate tensors of 256 MB).
// Exact: every step is the reference's own fp32 operation in its order,
// rounded as it is (explicit __fmul_rn/__fadd_rn: no fma contraction), x^3 as
// (x * x) * x like torch's pow(x, 3) kernel, full-precision tanhf (the
// function torch's tanh kernel calls), sqrt(2 / pi) as the fp32 constant
// Python's float becomes.
#include <kb/solution.h>

#include <cuda_runtime.h>

#include "kernels/gelu.cuh"

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);
  if (ctx.failed()) return;
  if (!x.is_contiguous() || x.dtype != KB_FLOAT32) {
    ctx.fail("expected a contiguous float32 input");
    return;
  }
  kb::Tensor y = ctx.output(0, x.ndim, x.sizes);
  if (ctx.failed()) return;
  cudaError_t err = launch_new_gelu(x.data_as<const float>(), y.data_as<float>(), x.numel(),
                                    static_cast<cudaStream_t>(ctx.stream()));
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
}
