// KernelBench level2/18_Matmul_Sum_Max_AvgPool_LogSumExp_LogSumExp: for x
// [1024, 8192] and nn.Linear(8192, 8192): z = linear(x); s = sum(z, dim=1,
// keepdim) [1024, 1]; then max, mean, logsumexp, logsumexp, each over that
// dimension of size 1: y = s.
// Technique: the row sum of a linear layer is linear,
//   s[m] = sum_k x[m, k] * colsum(W)[k] + sum(b),
// an identity for every input (not a shortcut of the test data). KB_INIT
// (untimed, sees the weights only) folds W into its column sums and b into
// its sum, in fp64, as read-only state; the forward is one GEMV, one block per
// row, float4 loads of x: 32 MB read instead of a 137 GFLOP GEMM. The four
// reductions over a size-1 dimension are identities: max and mean of one
// value are that value, logsumexp of one finite value v is log(exp(v - v)) + v
// = log(1) + v = v exactly.
// Exact: fp64 state and fp64 accumulation, one rounding to fp32 at the end:
// closer to the float64 reference than the fp32 reference itself (whose GEMM
// and sum rounding the harness's fp64 rounding allowance covers).
#include <kb/solution.h>

#include <cuda_runtime.h>

#include "kernels/fold.cuh"

KB_INIT(ctx) {
  kb::Tensor w = ctx.param("linear.weight");  // [N, K]
  kb::Tensor b = ctx.param("linear.bias");    // [N]
  if (ctx.failed()) return;
  if (w.ndim != 2 || !w.is_contiguous() || !b.is_contiguous() || w.dtype != KB_FLOAT32 || b.numel() != w.size(0)) {
    ctx.fail("expected a contiguous float32 weight [N, K] and bias [N]");
    return;
  }
  kb::Tensor colsum = ctx.create_state("colsum", {w.size(1)}, KB_FLOAT64);
  kb::Tensor c = ctx.create_state("bias_sum", {1}, KB_FLOAT64);
  if (ctx.failed()) return;
  cudaError_t err = launch_fold_weights(w.data_as<const float>(), w.size(0), w.size(1), b.data_as<const float>(),
                                        nullptr, colsum.data_as<double>(), c.data_as<double>(),
                                        static_cast<cudaStream_t>(ctx.stream()));
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
}

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);                // [M, K]
  kb::Tensor colsum = ctx.state("colsum");    // [K], fp64
  kb::Tensor c = ctx.state("bias_sum");       // [1], fp64
  if (ctx.failed()) return;
  if (x.ndim != 2 || !x.is_contiguous() || x.dtype != KB_FLOAT32 || x.size(1) != colsum.size(0)) {
    ctx.fail("expected a contiguous float32 x [M, K] matching the weight");
    return;
  }
  kb::Tensor y = ctx.output(0, {x.size(0), 1});
  if (ctx.failed()) return;
  cudaError_t err = launch_row_sums(x.data_as<const float>(), colsum.data_as<const double>(),
                                    c.data_as<const double>(), y.data_as<float>(), x.size(0), x.size(1),
                                    static_cast<cudaStream_t>(ctx.stream()));
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
}
