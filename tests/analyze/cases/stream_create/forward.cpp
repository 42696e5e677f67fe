#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <kb/solution.h>

// Graphs are allowed on ctx.stream() only (tests/analyze/legit/graph_replay).
static void replay(cudaGraphExec_t exec, cudaStream_t s) {
  cudaGraphLaunch(exec, s);  // expect: [stream-create]
}

static void host_side(void*) {}

KB_FORWARD(ctx) {
  cudaStream_t side;
  cudaStreamCreate(&side);  // expect: [stream-create]
  cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);  // expect: [stream-create]
  auto create = &cudaStreamCreateWithPriority;  // expect: [stream-create]
  cublasSetStream(static_cast<cublasHandle_t>(ctx.cublas()), side);  // expect: [stream-create] [library-api] [library-api]
  (void)create;

  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  cudaStreamBeginCapture(side, cudaStreamCaptureModeGlobal);  // expect: [stream-create]
  cudaStreamEndCapture(side, &graph);  // expect: [stream-create]
  cudaGraphLaunch(exec, 0);  // expect: [stream-create] [launch-stream]
  cudaStream_t reassigned = static_cast<cudaStream_t>(ctx.stream());
  reassigned = side;
  cudaGraphLaunch(exec, reassigned);  // expect: [stream-create]
  replay(exec, static_cast<cudaStream_t>(ctx.stream()));
  // A host node runs host code whenever the graph runs, like cudaLaunchHostFunc.
  cudaGraphNode_t node;
  cudaHostNodeParams host{host_side, nullptr};
  cudaGraphAddHostNode(&node, graph, nullptr, 0, &host);  // expect: [stream-create]
  cudaStream_t s = static_cast<cudaStream_t>(ctx.stream());
  cudaGraphLaunch(exec, s);  // fine: ctx.stream() through a local
}
