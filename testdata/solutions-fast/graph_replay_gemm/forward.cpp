// Legitimate: C = A @ B (task matmul_2048) by replaying a CUDA graph that the
// init hook captured, the way a production kernel library amortises launch
// cost. Init: capture the tiled SGEMM launch on ctx.stream() (thread-local
// capture mode, so nothing else in the process is disturbed) over small
// placeholder create_state buffers (the inputs are not known at init),
// instantiate it, and keep the executable graph and its kernel node in a
// host object (ctx.set_host_object: the sanctioned home of host objects, so
// no global). Forward: point the kernel node at this call's A, B and C
// (cudaGraphExecKernelNodeSetParams) and launch the graph on ctx.stream().
// The placeholders are never read or written (the node is repointed before
// every launch), so state is unchanged; the host object carries a graph,
// never a result.
// Expected: no static finding, verify ok, kbprof ok (sgemm_tiled is the
// solution's own kernel, launched from the calling thread on ctx.stream()).
#include <kb/solution.h>

#include <cuda_runtime.h>

#include "kernels/gemm_tiled.cuh"

namespace {
struct GemmGraph {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  cudaGraphNode_t node = nullptr;
  cudaKernelNodeParams params = {};
};

void destroy_graph(void* p) {
  auto* g = static_cast<GemmGraph*>(p);
  if (g->exec) cudaGraphExecDestroy(g->exec);
  if (g->graph) cudaGraphDestroy(g->graph);
  delete g;
}

// The graph's one kernel node (the capture holds exactly one launch).
cudaError_t find_kernel_node(GemmGraph* g) {
  size_t count = 0;
  cudaError_t err = cudaGraphGetNodes(g->graph, nullptr, &count);
  if (err != cudaSuccess) return err;
  if (count != 1) return cudaErrorInvalidValue;
  err = cudaGraphGetNodes(g->graph, &g->node, &count);
  if (err != cudaSuccess) return err;
  cudaGraphNodeType type{};
  err = cudaGraphNodeGetType(g->node, &type);
  if (err != cudaSuccess) return err;
  if (type != cudaGraphNodeTypeKernel) return cudaErrorInvalidValue;
  return cudaGraphKernelNodeGetParams(g->node, &g->params);
}
}  // namespace

KB_INIT(ctx) {
  if (!ctx.on_cuda()) return;
  kb::Tensor pa = ctx.create_state("placeholder.a", {1});
  kb::Tensor pb = ctx.create_state("placeholder.b", {1});
  kb::Tensor pc = ctx.create_state("placeholder.c", {1});
  if (ctx.failed()) return;
  auto stream = static_cast<cudaStream_t>(ctx.stream());
  auto* g = new GemmGraph;
  cudaError_t err = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
  if (err == cudaSuccess) {
    // The shapes are the task's; the pointers are replaced on every call.
    cudaError_t launched = launch_sgemm_tiled(pa.data_as<const float>(), pb.data_as<const float>(),
                                              pc.data_as<float>(), 2048, 2048, 2048, stream);
    err = cudaStreamEndCapture(stream, &g->graph);
    if (launched != cudaSuccess) err = launched;
  }
  if (err == cudaSuccess) err = find_kernel_node(g);
  if (err == cudaSuccess) err = cudaGraphInstantiate(&g->exec, g->graph, 0);
  if (err != cudaSuccess) {
    destroy_graph(g);
    ctx.fail(cudaGetErrorString(err));
    return;
  }
  ctx.set_host_object("gemm_graph", g, destroy_graph);
}

KB_FORWARD(ctx) {
  kb::Tensor a = ctx.input(0);  // [M, K]
  kb::Tensor b = ctx.input(1);  // [K, N]
  auto* g = ctx.host_object<GemmGraph>("gemm_graph");
  if (ctx.failed()) return;
  if (!a.is_contiguous() || !b.is_contiguous() || a.size(0) != 2048 || a.size(1) != 2048 ||
      b.size(0) != 2048 || b.size(1) != 2048) {
    ctx.fail("the graph was captured for contiguous 2048x2048 operands");
    return;
  }
  kb::Tensor c = ctx.output(0, {2048, 2048});
  if (ctx.failed()) return;
  // The kernel's parameters, in order: a, b, c, m, n, k.
  const float* pa = a.data_as<const float>();
  const float* pb = b.data_as<const float>();
  float* pc = c.data_as<float>();
  int m = 2048, n = 2048, k = 2048;
  void* args[] = {&pa, &pb, &pc, &m, &n, &k};
  cudaKernelNodeParams params = g->params;
  params.kernelParams = args;
  params.extra = nullptr;
  auto stream = static_cast<cudaStream_t>(ctx.stream());
  cudaError_t err = cudaGraphExecKernelNodeSetParams(g->exec, g->node, &params);
  if (err == cudaSuccess) err = cudaGraphLaunch(g->exec, stream);
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
}
