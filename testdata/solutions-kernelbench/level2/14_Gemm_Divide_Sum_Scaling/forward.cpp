// KernelBench level2/14_Gemm_Divide_Sum_Scaling: y = sum((x @ W^T) / 2, dim=1,
// keepdim) * 1.5 for x [1024, 8192], W [8192, 8192] (randn, no bias): y
// [1024, 1].
// Technique: the sum over the GEMM's columns is linear, so
//   y[m] = 0.75 * sum_k x[m, k] * s[k],   s[k] = sum_n W[n, k],
// an identity for every input (not a shortcut the test data allows). KB_INIT
// (untimed, sees the weights only) folds W into s, in fp64, as a read-only
// state buffer; the forward is one GEMV, one block per row, float4 loads of
// x: 32 MB read instead of a 1024x8192x8192 GEMM (137 GFLOP).
// Exact: s is kept in fp64 and each dot product is accumulated in fp64, so the
// result is within fp32 rounding of the exact value: closer to the float64
// reference than the fp32 reference itself (whose GEMM rounding the harness's
// fp64 rounding allowance covers).
#include <kb/solution.h>

#include <cuda_runtime.h>

#include "kernels/gemv.cuh"

KB_INIT(ctx) {
  kb::Tensor w = ctx.param("weight");  // [N, K]
  if (ctx.failed()) return;
  if (w.ndim != 2 || !w.is_contiguous() || w.dtype != KB_FLOAT32) {
    ctx.fail("expected a contiguous float32 weight [N, K]");
    return;
  }
  kb::Tensor s = ctx.create_state("colsum", {w.size(1)}, KB_FLOAT64);
  if (ctx.failed()) return;
  cudaError_t err = launch_column_sums(w.data_as<const float>(), s.data_as<double>(), w.size(0), w.size(1),
                                       static_cast<cudaStream_t>(ctx.stream()));
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
}

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);           // [M, K]
  kb::Tensor s = ctx.state("colsum");    // [K], fp64
  if (ctx.failed()) return;
  if (x.ndim != 2 || !x.is_contiguous() || x.dtype != KB_FLOAT32 || x.size(1) != s.size(0)) {
    ctx.fail("expected a contiguous float32 x [M, K] matching the weight");
    return;
  }
  kb::Tensor y = ctx.output(0, {x.size(0), 1});
  if (ctx.failed()) return;
  // (v / 2) summed, then * scaling_factor (1.5): 0.75 in all.
  cudaError_t err = launch_scaled_gemv(x.data_as<const float>(), s.data_as<const double>(), y.data_as<float>(),
                                       x.size(0), x.size(1), 0.5 * 1.5, static_cast<cudaStream_t>(ctx.stream()));
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
}
