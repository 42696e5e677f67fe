#include "relu.cuh"

__global__ void relu_kernel(const float* x, float* y, int64_t n) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) y[i] = fmaxf(x[i], 0.0f);
}

cudaError_t launch_relu(const float* x, float* y, int64_t n, cudaStream_t stream) {
  const int64_t blocks = n > 0 ? (n + 255) / 256 : 1;
  relu_kernel<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(x, y, n);
  return cudaGetLastError();
}
