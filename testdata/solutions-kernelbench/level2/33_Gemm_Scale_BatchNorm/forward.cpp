// KernelBench level2/33_Gemm_Scale_BatchNorm: for x [1024, 8192],
// gemm = nn.Linear(8192, 8192), scale [8192], bn = nn.BatchNorm1d(8192):
// z = (x @ W^T + b) * scale; y = bn(z).
// Training-mode semantics, as the task runs it: KernelBench never calls
// .eval() and the captured reference keeps the module's training flag
// (docs/task-format.md, task.json "training"), so the batch norm normalises
// with the batch's own statistics, per column over the 1024 rows: y = (z -
// mean) / sqrt(var_biased + eps) * bn.weight + bn.bias, eps = 1e-5. The
// running statistics the reference updates as a side effect are not outputs
// and never read in training mode.
// Technique: one cuBLAS SGEMM on the harness's handle into the output, then
// ONE kernel per 32-column strip (coalesced rows, the strip's 128 KB stays in
// L1/L2): bias + scale, column mean, column variance (two-pass), normalise and
// write back in place. Eager: addmm, mul, then batch_norm's statistics and
// transform kernels.
// Exact: the GEMM is full fp32 (no TF32); z = (v + b) * scale rounded in fp32
// as the reference does; mean and the two-pass biased variance accumulated in
// fp64 (no cancellation), rounded once to fp32, then (z - mean) * invstd * w +
// b in fp32 as torch's transform kernel does.
#include <kb/solution.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "kernels/batchnorm.cuh"
#include "kernels/linear.h"

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);              // [M, K]
  kb::Tensor w = ctx.param("gemm.weight");  // [N, K]
  kb::Tensor b = ctx.param("gemm.bias");    // [N]
  kb::Tensor s = ctx.param("scale");        // [N]
  kb::Tensor g = ctx.param("bn.weight");    // [N]
  kb::Tensor h = ctx.param("bn.bias");      // [N]
  if (ctx.failed()) return;
  const int64_t nn = w.size(0);
  if (x.ndim != 2 || !x.is_contiguous() || !w.is_contiguous() || x.size(1) != w.size(1) || b.numel() != nn ||
      s.numel() != nn || g.numel() != nn || h.numel() != nn || !b.is_contiguous() || !s.is_contiguous() ||
      !g.is_contiguous() || !h.is_contiguous()) {
    ctx.fail("expected contiguous x[M, K], W[N, K] and per-column vectors of N");
    return;
  }
  const int m = static_cast<int>(x.size(0)), k = static_cast<int>(x.size(1)), n = static_cast<int>(nn);
  kb::Tensor y = ctx.output(0, {m, n});
  if (ctx.failed()) return;
  if (linear_nt(static_cast<cublasHandle_t>(ctx.cublas()), x.data_as<const float>(), w.data_as<const float>(),
                y.data_as<float>(), m, n, k) != CUBLAS_STATUS_SUCCESS) {
    ctx.fail("cublasSgemm failed");
    return;
  }
  cudaError_t err = launch_scale_batchnorm_train(y.data_as<float>(), b.data_as<const float>(), s.data_as<const float>(),
                                                 g.data_as<const float>(), h.data_as<const float>(), m, n, 1e-5,
                                                 static_cast<cudaStream_t>(ctx.stream()));
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
}
