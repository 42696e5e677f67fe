// Legitimate: C = A @ B (task matmul_2048) with one cublasSgemm on the
// harness's handle (bound to ctx.stream()); cuBLAS is allowed for GEMM.
// Expected: no static finding, verify ok, kbprof ok (the cuBLAS kernel is an
// allowed library kernel for a GEMM task).
#include <kb/solution.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

KB_FORWARD(ctx) {
  kb::Tensor a = ctx.input(0);  // [M, K]
  kb::Tensor b = ctx.input(1);  // [K, N]
  if (ctx.failed()) return;
  if (!a.is_contiguous() || !b.is_contiguous() || a.size(1) != b.size(0)) {
    ctx.fail("expected contiguous A[M, K] and B[K, N]");
    return;
  }
  const int m = static_cast<int>(a.size(0)), k = static_cast<int>(a.size(1)),
            n = static_cast<int>(b.size(1));
  kb::Tensor c = ctx.output(0, {m, n});
  if (ctx.failed()) return;
  // Row-major C[M,N] = A B is column-major C^T[N,M] = B^T A^T: B^T is B's
  // buffer read column-major (ld N), A^T is A's (ld K).
  const float one = 1.0f, zero = 0.0f;
  cublasStatus_t st = cublasSgemm(static_cast<cublasHandle_t>(ctx.cublas()), CUBLAS_OP_N,
                                  CUBLAS_OP_N, n, m, k, &one, b.data_as<const float>(), n,
                                  a.data_as<const float>(), k, &zero, c.data_as<float>(), n);
  if (st != CUBLAS_STATUS_SUCCESS) ctx.fail("cublasSgemm failed");
}
