#include "leaky.cuh"

namespace {
__global__ void leaky_relu_inplace(float* __restrict__ y, int64_t n, float slope) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    const float v = y[i];
    y[i] = v > 0.0f ? v : v * slope;
  }
}
}  // namespace

void* leaky_relu_kernel() { return reinterpret_cast<void*>(&leaky_relu_inplace); }
