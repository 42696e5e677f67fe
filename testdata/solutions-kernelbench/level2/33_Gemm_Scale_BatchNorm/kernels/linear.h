#pragma once
// y[M, N] = x[M, K] W[N, K]^T in row-major storage, one cuBLAS SGEMM (full
// fp32: torch's handle with TF32 off) on the harness's handle. Row-major y is
// column-major y^T[N, M] = W x^T: W's buffer read column-major (K x N) and
// transposed, x's buffer as K x M.
#include <cublas_v2.h>

inline cublasStatus_t linear_nt(cublasHandle_t handle, const float* x, const float* w, float* y, int m, int n,
                                int k) {
  const float one = 1.0f, zero = 0.0f;
  return cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &one, w, k, x, k, &zero, y, n);
}
