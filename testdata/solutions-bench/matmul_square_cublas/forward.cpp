// C = A @ B for square fp32 matrices (gpu-timing level1/1_Matmul_Square):
// one cuBLAS SGEMM (allowed: GEMM only). Row-major C[M,N] = A[M,K] B[K,N] is
// column-major C^T = B^T A^T, so B and A swap places and nothing transposes.
// The fp32 path (no TF32), as torch.matmul does by default.
#include <kb/solution.h>

#include <cublas_v2.h>

KB_FORWARD(ctx) {
  kb::Tensor a = ctx.input(0);  // [M, K]
  kb::Tensor b = ctx.input(1);  // [K, N]
  if (ctx.failed()) return;
  const int m = static_cast<int>(a.size(0)), k = static_cast<int>(a.size(1)), n = static_cast<int>(b.size(1));
  kb::Tensor c = ctx.output(0, {a.size(0), b.size(1)});
  if (ctx.failed()) return;
  auto handle = static_cast<cublasHandle_t>(ctx.cublas());
  const float one = 1.0f, zero = 0.0f;
  cublasStatus_t st = cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, b.data_as<float>(), n,
                                  a.data_as<float>(), k, &zero, c.data_as<float>(), n);
  if (st != CUBLAS_STATUS_SUCCESS) ctx.fail("cublasSgemm failed");
}
