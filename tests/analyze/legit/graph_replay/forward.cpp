// Legit (issue 17, class 5): a CUDA graph captured in KB_INIT on
// ctx.stream(), kept through ctx.set_host_object (no global), and replayed
// in KB_FORWARD on ctx.stream() with this call's tensors patched in.
#include <cuda_runtime.h>

#include <kb/solution.h>

#include "kernels/relu.cuh"

namespace {

struct Replay {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  cudaGraphNode_t node = nullptr;
  cudaKernelNodeParams params{};
};

void destroyReplay(void* object) {
  auto* r = static_cast<Replay*>(object);
  if (r->exec) cudaGraphExecDestroy(r->exec);
  if (r->graph) cudaGraphDestroy(r->graph);
  delete r;
}

}  // namespace

KB_INIT(ctx) {
  auto* r = new Replay;
  const auto stream = static_cast<cudaStream_t>(ctx.stream());
  // Captured with placeholder pointers: forward patches in its own.
  cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
  launch_relu(nullptr, nullptr, 0, stream);
  cudaStreamEndCapture(stream, &r->graph);
  size_t count = 1;
  cudaGraphGetNodes(r->graph, &r->node, &count);
  cudaGraphKernelNodeGetParams(r->node, &r->params);
  cudaGraphInstantiate(&r->exec, r->graph, 0);
  ctx.set_host_object("relu_graph", r, destroyReplay);
}

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);
  kb::Tensor y = ctx.output(0, {x.numel()});
  auto* r = ctx.host_object<Replay>("relu_graph");
  if (ctx.failed() || !r) return;
  const float* in = x.data_as<const float>();
  float* out = y.data_as<float>();
  int64_t n = x.numel();
  void* args[] = {&in, &out, &n};
  cudaKernelNodeParams p = r->params;
  p.gridDim = dim3(static_cast<unsigned>(n > 0 ? (n + 255) / 256 : 1));
  p.kernelParams = args;
  cudaGraphExecKernelNodeSetParams(r->exec, r->node, &p);
  cudaError_t err = cudaGraphLaunch(r->exec, static_cast<cudaStream_t>(ctx.stream()));
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
}
