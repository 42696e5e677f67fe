// Fails: asks the device for a petabyte before its kernel, so every run ends
// runtime_error with CUDA's "out of memory". kbserve --gpu-share runs such a
// failure once more with the GPU alone (tests/gpu/serve_gpu_test.sh); the
// verdict stays runtime_error. (The static stage would refuse the cudaMalloc,
// rule raw-alloc; the gpu suite runs build and verify without it.)
#include <kb/solution.h>

#include <cuda_runtime.h>

#include "kernels/k.cuh"

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);
  kb::Tensor w = ctx.param("linear.weight");
  kb::Tensor b = ctx.param("linear.bias");
  if (ctx.failed()) return;
  const int64_t m = x.size(0), k = x.size(1), n = w.size(0);
  kb::Tensor y = ctx.output(0, {m, n});
  if (ctx.failed()) return;

  void* huge = nullptr;
  cudaError_t err = cudaMalloc(&huge, size_t{1} << 50);
  if (err != cudaSuccess) {
    ctx.fail(cudaGetErrorString(err));
    return;
  }
  cudaFree(huge);
  err = launch(x.data_as<float>(), w.data_as<float>(), b.data_as<float>(), y.data_as<float>(), m, k, n,
               static_cast<cudaStream_t>(ctx.stream()));
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
}
