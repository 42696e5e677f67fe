#include <cuda_runtime.h>

#include <kb/solution.h>

KB_FORWARD(ctx) {
  auto stream = static_cast<cudaStream_t>(ctx.stream());
  cudaEvent_t e;
  cudaEventCreate(&e);  // expect: [device-control]
  cudaEventRecord(e, stream);  // expect: [device-control]
  cudaDeviceSetLimit(cudaLimitStackSize, 1 << 20);  // expect: [device-control]
  cudaDeviceReset();  // expect: [device-control]
  CUevent ev;
  cuEventRecord(ev, nullptr);  // expect: [device-control] [launch-stream]
}
