// KernelBench level1/1_Square_matrix_multiplication_: C = A @ B for A, B
// [4096, 4096] fp32.
// Technique: one cuBLAS SGEMM on the harness's handle (cuBLAS is allowed: the
// reference is a matmul). Row-major C[M, N] = A[M, K] B[K, N] is column-major
// C^T = B^T A^T, so B and A swap places and nothing is transposed. Expect ~1x
// of eager (the same library call); the task is here as an honest baseline of
// the set. Pattern of testdata/solutions-bench/matmul_square_cublas.
// Exact: full fp32 SGEMM (torch's handle, TF32 off), as torch.matmul does.
#include <kb/solution.h>

#include <cublas_v2.h>

KB_FORWARD(ctx) {
  kb::Tensor a = ctx.input(0);  // [M, K]
  kb::Tensor b = ctx.input(1);  // [K, N]
  if (ctx.failed()) return;
  if (a.ndim != 2 || b.ndim != 2 || !a.is_contiguous() || !b.is_contiguous() || a.size(1) != b.size(0) ||
      a.dtype != KB_FLOAT32 || b.dtype != KB_FLOAT32) {
    ctx.fail("expected contiguous float32 A[M, K] and B[K, N]");
    return;
  }
  const int m = static_cast<int>(a.size(0)), k = static_cast<int>(a.size(1)), n = static_cast<int>(b.size(1));
  kb::Tensor c = ctx.output(0, {a.size(0), b.size(1)});
  if (ctx.failed()) return;
  const float one = 1.0f, zero = 0.0f;
  if (cublasSgemm(static_cast<cublasHandle_t>(ctx.cublas()), CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one,
                  b.data_as<const float>(), n, a.data_as<const float>(), k, &zero, c.data_as<float>(),
                  n) != CUBLAS_STATUS_SUCCESS)
    ctx.fail("cublasSgemm failed");
}
