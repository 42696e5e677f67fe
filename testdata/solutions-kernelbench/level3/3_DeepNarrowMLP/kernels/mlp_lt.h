#pragma once
// One nn.Linear layer (+ optional ReLU) as ONE cuBLASLt matmul: the bias and
// the ReLU run in the matmul's epilogue (CUBLASLT_EPILOGUE_RELU_BIAS /
// CUBLASLT_EPILOGUE_BIAS), full fp32 (CUBLAS_COMPUTE_32F: no TF32, no fast
// modes), on the harness's cuBLASLt handle and stream.
//
// Row-major y[M, N] = x[M, K] W[N, K]^T + b is column-major y^T[N, M] =
// op(W) x^T with W's buffer read as a K x N column-major matrix and transposed,
// x's as K x M; the bias has one entry per row of y^T, as the epilogue wants.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace mlp {

// Owns the descriptors of one matmul; destroys them on every path.
struct LtPlan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  LtPlan() = default;
  LtPlan(const LtPlan&) = delete;
  LtPlan& operator=(const LtPlan&) = delete;
  ~LtPlan() {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

// y = x W^T + b, then ReLU when `relu`. Returns nullptr or what failed.
inline const char* linear(cublasLtHandle_t lt, cudaStream_t stream, const float* x, const float* w, const float* bias,
                          float* y, int64_t m, int64_t k, int64_t n, bool relu, void* workspace,
                          size_t workspace_bytes) {
  LtPlan p;
  const cublasOperation_t trans_a = CUBLAS_OP_T, trans_b = CUBLAS_OP_N;
  const cublasLtEpilogue_t epilogue = relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
  const void* bias_ptr = bias;
  const bool ok =
      cublasLtMatmulDescCreate(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS &&
      cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof trans_a) ==
          CUBLAS_STATUS_SUCCESS &&
      cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b, sizeof trans_b) ==
          CUBLAS_STATUS_SUCCESS &&
      cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue) ==
          CUBLAS_STATUS_SUCCESS &&
      cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_ptr, sizeof bias_ptr) ==
          CUBLAS_STATUS_SUCCESS &&
      cublasLtMatrixLayoutCreate(&p.a, CUDA_R_32F, k, n, k) == CUBLAS_STATUS_SUCCESS &&
      cublasLtMatrixLayoutCreate(&p.b, CUDA_R_32F, k, m, k) == CUBLAS_STATUS_SUCCESS &&
      cublasLtMatrixLayoutCreate(&p.c, CUDA_R_32F, n, m, n) == CUBLAS_STATUS_SUCCESS &&
      cublasLtMatmulPreferenceCreate(&p.pref) == CUBLAS_STATUS_SUCCESS &&
      cublasLtMatmulPreferenceSetAttribute(p.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
                                           sizeof workspace_bytes) == CUBLAS_STATUS_SUCCESS;
  if (!ok) return "cuBLASLt descriptor setup failed";
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  if (cublasLtMatmulAlgoGetHeuristic(lt, p.op, p.a, p.b, p.c, p.c, p.pref, 1, &heuristic, &found) !=
          CUBLAS_STATUS_SUCCESS ||
      found == 0)
    return "cuBLASLt found no algorithm for a linear layer";
  const float one = 1.0f, zero = 0.0f;
  if (cublasLtMatmul(lt, p.op, &one, w, p.a, x, p.b, &zero, y, p.c, y, p.c, &heuristic.algo, workspace,
                     workspace_bytes, stream) != CUBLAS_STATUS_SUCCESS)
    return "cublasLtMatmul failed";
  return nullptr;
}

}  // namespace mlp
