#include <cuda_runtime.h>

#include <kb/solution.h>

#include "kernels/k.cuh"

KB_FORWARD(ctx) {
  auto stream = static_cast<cudaStream_t>(ctx.stream());
  kb::Tensor x = ctx.input(0);
  kb::Tensor y = ctx.output(0, {x.size(0)});
  cudaMemcpy(y.data, x.data, 4 * x.numel(), cudaMemcpyDeviceToDevice);  // expect: [launch-stream]
  cudaMemcpyAsync(y.data, x.data, 4 * x.numel(), cudaMemcpyDeviceToDevice);  // expect: [launch-stream]
  cudaMemcpyAsync(y.data, x.data, 4 * x.numel(), cudaMemcpyDeviceToDevice, 0);  // expect: [launch-stream]
  cudaMemsetAsync(y.data, 0, 4 * x.numel(), cudaStreamPerThread);  // expect: [launch-stream]
  cudaMemcpyAsync(y.data, x.data, 4 * x.numel(), cudaMemcpyDeviceToDevice, stream);  // fine
  launch_all(y.data_as<float>(), static_cast<int>(x.numel()), stream);
}
