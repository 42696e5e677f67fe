// Legitimate (issue 35, class 6 control): y = silu(x) (task silu_large) by
// a CUDA graph with two parallel branches, built node by node in KB_INIT and
// replayed on ctx.stream(). Init: cudaGraphCreate, then two kernel nodes
// (cudaGraphAddKernelNode, no dependencies between them: two branches), each
// the solution's float4 silu_span kernel over one half, pointed at 1-element
// placeholder create_state buffers with length 0 (the inputs are not known
// at init); instantiate; keep graph, exec and nodes in a host object
// (ctx.set_host_object). Forward: repoint both nodes at this call's halves
// (cudaGraphExecKernelNodeSetParams) and cudaGraphLaunch on ctx.stream().
// The graph never runs on the placeholders, so state is unchanged; the host
// object carries a graph, never a result.
// Expected: no static finding wanted, verify ok, kbprof ok -- both branches'
// kernels are the solution's own and run on ctx.stream()'s graph launch,
// ending before the call's end event.
#include <kb/solution.h>

#include <cuda_runtime.h>

#include "kernels/silu_span.cuh"

namespace {
struct TwoBranch {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  cudaGraphNode_t node[2] = {nullptr, nullptr};
};

void destroy_two_branch(void* p) {
  auto* g = static_cast<TwoBranch*>(p);
  if (g->exec) cudaGraphExecDestroy(g->exec);
  if (g->graph) cudaGraphDestroy(g->graph);
  delete g;
}

cudaKernelNodeParams span_params(void** args) {
  cudaKernelNodeParams p = {};
  p.func = silu_span_kernel();
  p.gridDim = dim3(kSiluSpanBlocks);
  p.blockDim = dim3(kSiluSpanThreads);
  p.sharedMemBytes = 0;
  p.kernelParams = args;
  p.extra = nullptr;
  return p;
}
}  // namespace

KB_INIT(ctx) {
  if (!ctx.on_cuda()) return;
  kb::Tensor px = ctx.create_state("placeholder.x", {1});
  kb::Tensor py = ctx.create_state("placeholder.y", {1});
  if (ctx.failed()) return;
  auto* g = new TwoBranch;
  const float* x = px.data_as<const float>();
  float* y = py.data_as<float>();
  int64_t n = 0;
  void* args[] = {&x, &y, &n};
  const cudaKernelNodeParams params = span_params(args);
  cudaError_t err = cudaGraphCreate(&g->graph, 0);
  for (int h = 0; h < 2 && err == cudaSuccess; ++h)
    err = cudaGraphAddKernelNode(&g->node[h], g->graph, nullptr, 0, &params);
  if (err == cudaSuccess) err = cudaGraphInstantiate(&g->exec, g->graph, 0);
  if (err != cudaSuccess) {
    destroy_two_branch(g);
    ctx.fail(cudaGetErrorString(err));
    return;
  }
  ctx.set_host_object("two_branch", g, destroy_two_branch);
}

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);
  auto* g = ctx.host_object<TwoBranch>("two_branch");
  if (ctx.failed()) return;
  if (!x.is_contiguous()) {
    ctx.fail("expected a contiguous input");
    return;
  }
  kb::Tensor y = ctx.output(0, x.ndim, x.sizes);
  if (ctx.failed()) return;
  const int64_t n = x.numel();
  const int64_t first = (n / 2) & ~int64_t{3};  // keeps the second half 16-byte aligned
  const float* xs[2] = {x.data_as<const float>(), x.data_as<const float>() + first};
  float* ys[2] = {y.data_as<float>(), y.data_as<float>() + first};
  int64_t ns[2] = {first, n - first};
  cudaError_t err = cudaSuccess;
  for (int h = 0; h < 2 && err == cudaSuccess; ++h) {
    void* args[] = {&xs[h], &ys[h], &ns[h]};
    const cudaKernelNodeParams params = span_params(args);
    err = cudaGraphExecKernelNodeSetParams(g->exec, g->node[h], &params);
  }
  if (err == cudaSuccess) err = cudaGraphLaunch(g->exec, static_cast<cudaStream_t>(ctx.stream()));
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
}
