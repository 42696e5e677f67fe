// Legitimate (issue 35, class 6 control): y = leaky_relu(2 * (x @ w), 0.1)
// (task gemm_scale_leakyrelu: x [256, 8192], w [8192, 512], fp32) with two
// host objects made in KB_INIT and kept with ctx.set_host_object:
//  - a cuBLASLt plan: matmul descriptor (CUBLAS_COMPUTE_32F: full fp32, no
//    TF32), the three matrix layouts for the task's shapes, a preference
//    (4 MiB workspace) and the heuristic's algorithm, chosen once on the
//    harness's cuBLASLt handle;
//  - a CUDA graph of one kernel node, the solution's leaky-ReLU epilogue,
//    built with cudaGraphAddKernelNode over a 1-element placeholder
//    create_state buffer and instantiated.
// Forward: cublasLtMatmul with alpha = 2 (exact) on ctx.stream(), workspace
// from ctx.scratch(); then the graph's node repointed at this call's output
// (cudaGraphExecKernelNodeSetParams) and cudaGraphLaunch on ctx.stream().
// cuBLASLt is allowed for GEMM; the graph never runs on the placeholder.
// Expected: no static finding wanted, verify ok (fp32 GEMM, ~3e-6 from the
// reference, within strict 1e-4), kbprof ok (a cuBLAS fp32 kernel in a task
// with a matmul, the solution's own epilogue, all on ctx.stream()).
#include <kb/solution.h>

#include <cublasLt.h>
#include <cuda_runtime.h>

#include "kernels/leaky.cuh"

namespace {
constexpr int kM = 256, kK = 8192, kN = 512;
constexpr size_t kWorkspaceBytes = size_t{4} << 20;
constexpr float kSlope = 0.1f;

struct LtPlan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  cublasLtMatmulAlgo_t algo = {};
};
void destroy_plan(void* p) {
  auto* plan = static_cast<LtPlan*>(p);
  if (plan->pref) cublasLtMatmulPreferenceDestroy(plan->pref);
  if (plan->c) cublasLtMatrixLayoutDestroy(plan->c);
  if (plan->b) cublasLtMatrixLayoutDestroy(plan->b);
  if (plan->a) cublasLtMatrixLayoutDestroy(plan->a);
  if (plan->op) cublasLtMatmulDescDestroy(plan->op);
  delete plan;
}

struct EpilogueGraph {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  cudaGraphNode_t node = nullptr;
};
void destroy_graph(void* p) {
  auto* g = static_cast<EpilogueGraph*>(p);
  if (g->exec) cudaGraphExecDestroy(g->exec);
  if (g->graph) cudaGraphDestroy(g->graph);
  delete g;
}

cudaKernelNodeParams leaky_params(void** args) {
  cudaKernelNodeParams p = {};
  p.func = leaky_relu_kernel();
  p.gridDim = dim3(kLeakyBlocks);
  p.blockDim = dim3(kLeakyThreads);
  p.sharedMemBytes = 0;
  p.kernelParams = args;
  p.extra = nullptr;
  return p;
}

// Row-major y[M, N] = x[M, K] @ w[K, N] is column-major y^T[N, M] =
// w^T[N, K] * x^T[K, M]: w's buffer is column-major N x K (ld N), x's is
// column-major K x M (ld K), y's column-major N x M (ld N); no transposes.
bool make_plan(cublasLtHandle_t lt, LtPlan* p) {
  const cublasOperation_t no = CUBLAS_OP_N;
  const size_t workspace = kWorkspaceBytes;
  bool ok = cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS &&
            cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &no, sizeof no) ==
                CUBLAS_STATUS_SUCCESS &&
            cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &no, sizeof no) ==
                CUBLAS_STATUS_SUCCESS &&
            cublasLtMatrixLayoutCreate(&p->a, CUDA_R_32F, kN, kK, kN) == CUBLAS_STATUS_SUCCESS &&
            cublasLtMatrixLayoutCreate(&p->b, CUDA_R_32F, kK, kM, kK) == CUBLAS_STATUS_SUCCESS &&
            cublasLtMatrixLayoutCreate(&p->c, CUDA_R_32F, kN, kM, kN) == CUBLAS_STATUS_SUCCESS &&
            cublasLtMatmulPreferenceCreate(&p->pref) == CUBLAS_STATUS_SUCCESS &&
            cublasLtMatmulPreferenceSetAttribute(p->pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                                 sizeof workspace) == CUBLAS_STATUS_SUCCESS;
  if (!ok) return false;
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  if (cublasLtMatmulAlgoGetHeuristic(lt, p->op, p->a, p->b, p->c, p->c, p->pref, 1, &heuristic, &found) !=
          CUBLAS_STATUS_SUCCESS ||
      found == 0)
    return false;
  p->algo = heuristic.algo;
  return true;
}
}  // namespace

KB_INIT(ctx) {
  if (!ctx.on_cuda()) return;
  auto* plan = new LtPlan;
  if (!make_plan(static_cast<cublasLtHandle_t>(ctx.cublaslt()), plan)) {
    destroy_plan(plan);
    ctx.fail("cuBLASLt: no fp32 plan for the task's GEMM");
    return;
  }
  ctx.set_host_object("lt_plan", plan, destroy_plan);

  kb::Tensor placeholder = ctx.create_state("placeholder.y", {1});
  if (ctx.failed()) return;
  auto* g = new EpilogueGraph;
  float* y = placeholder.data_as<float>();
  int64_t n = 0;
  float slope = kSlope;
  void* args[] = {&y, &n, &slope};
  const cudaKernelNodeParams params = leaky_params(args);
  cudaError_t err = cudaGraphCreate(&g->graph, 0);
  if (err == cudaSuccess) err = cudaGraphAddKernelNode(&g->node, g->graph, nullptr, 0, &params);
  if (err == cudaSuccess) err = cudaGraphInstantiate(&g->exec, g->graph, 0);
  if (err != cudaSuccess) {
    destroy_graph(g);
    ctx.fail(cudaGetErrorString(err));
    return;
  }
  ctx.set_host_object("epilogue_graph", g, destroy_graph);
}

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);  // [M, K]
  kb::Tensor w = ctx.input(1);  // [K, N]
  auto* plan = ctx.host_object<LtPlan>("lt_plan");
  auto* g = ctx.host_object<EpilogueGraph>("epilogue_graph");
  if (ctx.failed()) return;
  if (!x.is_contiguous() || !w.is_contiguous() || x.size(0) != kM || x.size(1) != kK || w.size(0) != kK ||
      w.size(1) != kN) {
    ctx.fail("the plan was made for contiguous [256, 8192] x [8192, 512] operands");
    return;
  }
  kb::Tensor y = ctx.output(0, {kM, kN});
  void* workspace = ctx.scratch(kWorkspaceBytes);
  if (ctx.failed()) return;
  auto stream = static_cast<cudaStream_t>(ctx.stream());
  const float alpha = 2.0f, beta = 0.0f;
  if (cublasLtMatmul(static_cast<cublasLtHandle_t>(ctx.cublaslt()), plan->op, &alpha, w.data, plan->a, x.data,
                     plan->b, &beta, y.data, plan->c, y.data, plan->c, &plan->algo, workspace, kWorkspaceBytes,
                     stream) != CUBLAS_STATUS_SUCCESS) {
    ctx.fail("cublasLtMatmul failed");
    return;
  }
  float* py = y.data_as<float>();
  int64_t n = y.numel();
  float slope = kSlope;
  void* args[] = {&py, &n, &slope};
  const cudaKernelNodeParams params = leaky_params(args);
  cudaError_t err = cudaGraphExecKernelNodeSetParams(g->exec, g->node, &params);
  if (err == cudaSuccess) err = cudaGraphLaunch(g->exec, stream);
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
}
