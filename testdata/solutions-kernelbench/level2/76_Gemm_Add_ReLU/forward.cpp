// KernelBench level2/76_Gemm_Add_ReLU: y = relu(x @ W^T + bias) for x [1024,
// 8192], nn.Linear(8192, 8192, bias=False) and a separate bias parameter [8192].
// Technique: ONE cuBLASLt matmul whose epilogue adds the bias and applies the
// ReLU (CUBLASLT_EPILOGUE_RELU_BIAS), on the harness's cuBLASLt handle and
// ctx.stream(), workspace from ctx.scratch(): no pass over the output after
// the GEMM (eager: mm, add, relu = three kernels). Exact: CUBLAS_COMPUTE_32F
// (full fp32, no TF32 or fast modes), the bias added to the fp32 accumulator
// and the ReLU a select. Pattern of testdata/solutions-fast/gemm_bias_relu_lt.
#include <kb/solution.h>

#include <cublasLt.h>
#include <cuda_runtime.h>

namespace {
// Owns the cuBLASLt descriptors of one call; destroys them on every path.
struct LtPlan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  ~LtPlan() {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};
constexpr size_t kWorkspaceBytes = size_t{4} << 20;
}  // namespace

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);               // [M, K]
  kb::Tensor w = ctx.param("gemm.weight");  // [N, K]
  kb::Tensor bias = ctx.param("bias");  // [N]
  if (ctx.failed()) return;
  if (x.ndim != 2 || !x.is_contiguous() || !w.is_contiguous() || !bias.is_contiguous() || x.size(1) != w.size(1) ||
      bias.numel() != w.size(0)) {
    ctx.fail("expected contiguous x[M, K], W[N, K], bias[N]");
    return;
  }
  const int64_t m = x.size(0), k = x.size(1), n = w.size(0);
  kb::Tensor y = ctx.output(0, {m, n});
  void* workspace = ctx.scratch(kWorkspaceBytes);
  if (ctx.failed()) return;

  // Column-major view: y^T[N, M] = op(W)[N, K] * x^T[K, M], with W's buffer
  // read as a K x N column-major matrix (transposed by the op) and x's as
  // K x M. The bias has one entry per row of y^T, as the epilogue wants.
  auto lt = static_cast<cublasLtHandle_t>(ctx.cublaslt());
  LtPlan p;
  const cublasOperation_t trans_a = CUBLAS_OP_T, trans_b = CUBLAS_OP_N;
  const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_RELU_BIAS;
  const void* bias_ptr = bias.data;
  bool ok =
      cublasLtMatmulDescCreate(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS &&
      cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a,
                                     sizeof trans_a) == CUBLAS_STATUS_SUCCESS &&
      cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b,
                                     sizeof trans_b) == CUBLAS_STATUS_SUCCESS &&
      cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                     sizeof epilogue) == CUBLAS_STATUS_SUCCESS &&
      cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_ptr,
                                     sizeof bias_ptr) == CUBLAS_STATUS_SUCCESS &&
      cublasLtMatrixLayoutCreate(&p.a, CUDA_R_32F, k, n, k) == CUBLAS_STATUS_SUCCESS &&
      cublasLtMatrixLayoutCreate(&p.b, CUDA_R_32F, k, m, k) == CUBLAS_STATUS_SUCCESS &&
      cublasLtMatrixLayoutCreate(&p.c, CUDA_R_32F, n, m, n) == CUBLAS_STATUS_SUCCESS &&
      cublasLtMatmulPreferenceCreate(&p.pref) == CUBLAS_STATUS_SUCCESS &&
      cublasLtMatmulPreferenceSetAttribute(p.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                           &kWorkspaceBytes,
                                           sizeof kWorkspaceBytes) == CUBLAS_STATUS_SUCCESS;
  if (!ok) {
    ctx.fail("cuBLASLt descriptor setup failed");
    return;
  }
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  if (cublasLtMatmulAlgoGetHeuristic(lt, p.op, p.a, p.b, p.c, p.c, p.pref, 1, &heuristic,
                                     &found) != CUBLAS_STATUS_SUCCESS ||
      found == 0) {
    ctx.fail("cuBLASLt found no algorithm for GEMM + bias + ReLU");
    return;
  }
  const float one = 1.0f, zero = 0.0f;
  if (cublasLtMatmul(lt, p.op, &one, w.data, p.a, x.data, p.b, &zero, y.data, p.c, y.data, p.c,
                     &heuristic.algo, workspace, kWorkspaceBytes,
                     static_cast<cudaStream_t>(ctx.stream())) != CUBLAS_STATUS_SUCCESS)
    ctx.fail("cublasLtMatmul failed");
}
