// KernelBench level2/12_Gemm_Multiply_LeakyReLU (imported with kbsynth import;
// the problem file stays in ../shared/kernelbench): y = leaky_relu((x @ W^T +
// b) * 2.0, 0.1) for x [1024, 8192], W [8192, 8192]. One cublasSgemm on the
// harness's handle (full fp32: the handle's default math), then one fused
// bias + multiply + LeakyReLU pass with 128-bit loads. A copy of
// testdata/solutions-bench/gemm_mul_leakyrelu (the iteration benchmark's
// solution). Exact: the GEMM is cuBLAS fp32 SGEMM (no TF32), the epilogue the
// reference's own fp32 ops in its order ((v + b) * 2, then the select).
#include <kb/solution.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "kernels/epilogue.cuh"

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);                // [M, K]
  kb::Tensor w = ctx.param("gemm.weight");    // [N, K]
  kb::Tensor b = ctx.param("gemm.bias");      // [N]
  if (ctx.failed()) return;
  if (!x.is_contiguous() || !w.is_contiguous() || x.size(1) != w.size(1)) {
    ctx.fail("expected contiguous x[M, K] and W[N, K]");
    return;
  }
  const int m = static_cast<int>(x.size(0)), k = static_cast<int>(x.size(1)), n = static_cast<int>(w.size(0));
  kb::Tensor y = ctx.output(0, {m, n});
  if (ctx.failed()) return;
  // Row-major y[M,N] = x[M,K] W[N,K]^T is column-major y^T = W x^T.
  const float one = 1.0f, zero = 0.0f;
  if (cublasSgemm(static_cast<cublasHandle_t>(ctx.cublas()), CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &one,
                  w.data_as<const float>(), k, x.data_as<const float>(), k, &zero, y.data_as<float>(),
                  n) != CUBLAS_STATUS_SUCCESS) {
    ctx.fail("cublasSgemm failed");
    return;
  }
  launch_bias_scale_leaky(y.data_as<float>(), b.data_as<const float>(), m, n, 2.0f, 0.1f,
                          static_cast<cudaStream_t>(ctx.stream()));
}
