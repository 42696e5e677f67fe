// KernelBench level2/51_Gemm_Subtract_GlobalAvgPool_LogSumExp_GELU_ResidualAdd:
// for x [2048, 8192], gemm = nn.Linear(8192, 8192), subtract [8192]:
// u = mean(gemm(x) - subtract, dim=1, keepdim) [2048, 1]; l = logsumexp(u,
// dim=1, keepdim) over that size-1 dimension (= u); g = gelu(l) (erf form);
// y = g + x [2048, 8192] (x's values from before the GEMM).
// Technique: the mean over a linear layer's outputs is linear,
//   u[m] = (sum_k x[m, k] * colsum(W)[k] + sum(b) - sum(subtract)) / 8192,
// an identity for every input (not a shortcut of the test data). KB_INIT
// (untimed, sees the parameters only) folds W into its column sums and b,
// subtract into one constant, in fp64, as read-only state. The forward is ONE
// kernel, one block per row: the fp64 dot product of the row with the column
// sums, GELU of the mean, then the row written back as g + x (float4; the row
// is re-read from L1/L2): 64 MB read and 64 MB written instead of a 275 GFLOP
// GEMM and five more kernels.
// Exact: fp64 state and accumulation, u rounded once to fp32 (closer to the
// float64 reference than the fp32 reference's GEMM + mean); logsumexp of one
// finite value v is log(exp(v - v)) + v = v exactly; GELU is torch's fp32
// x * 0.5 * (1 + erf(x * M_SQRT1_2)) with full-precision erff, rounded step
// by step; the residual add is the same fp32 add.
#include <kb/solution.h>

#include <cuda_runtime.h>

#include "kernels/fold.cuh"

KB_INIT(ctx) {
  kb::Tensor w = ctx.param("gemm.weight");  // [N, K]
  kb::Tensor b = ctx.param("gemm.bias");    // [N]
  kb::Tensor s = ctx.param("subtract");     // [N]
  if (ctx.failed()) return;
  if (w.ndim != 2 || !w.is_contiguous() || !b.is_contiguous() || !s.is_contiguous() || w.dtype != KB_FLOAT32 ||
      b.numel() != w.size(0) || s.numel() != w.size(0)) {
    ctx.fail("expected a contiguous float32 weight [N, K], bias [N] and subtract [N]");
    return;
  }
  kb::Tensor colsum = ctx.create_state("colsum", {w.size(1)}, KB_FLOAT64);
  kb::Tensor c = ctx.create_state("offset", {1}, KB_FLOAT64);
  if (ctx.failed()) return;
  cudaError_t err = launch_fold_weights(w.data_as<const float>(), w.size(0), w.size(1), b.data_as<const float>(),
                                        s.data_as<const float>(), colsum.data_as<double>(), c.data_as<double>(),
                                        static_cast<cudaStream_t>(ctx.stream()));
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
}

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);                // [M, K]
  kb::Tensor w = ctx.param("gemm.weight");    // [N, K]: only N is read here
  kb::Tensor colsum = ctx.state("colsum");    // [K], fp64
  kb::Tensor c = ctx.state("offset");         // [1], fp64
  if (ctx.failed()) return;
  if (x.ndim != 2 || !x.is_contiguous() || x.dtype != KB_FLOAT32 || x.size(1) != colsum.size(0)) {
    ctx.fail("expected a contiguous float32 x [M, K] matching the weight");
    return;
  }
  kb::Tensor y = ctx.output(0, {x.size(0), x.size(1)});
  if (ctx.failed()) return;
  cudaError_t err = launch_mean_gelu_residual(x.data_as<const float>(), colsum.data_as<const double>(),
                                              c.data_as<const double>(), w.size(0), y.data_as<float>(), x.size(0),
                                              x.size(1), static_cast<cudaStream_t>(ctx.stream()));
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
}
