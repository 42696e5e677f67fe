#include "logs.cuh"

namespace {

__global__ void logs(const float* __restrict__ x, float* __restrict__ y, float* __restrict__ z, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    const float l = logf(x[i]);
    y[i] = l;
    z[i] = l / (x[i] - 1.0f);
  }
}
}  // namespace

cudaError_t launch_logs(const float* x, float* y, float* z, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  int64_t blocks = (n + 255) / 256;
  if (blocks > 4096) blocks = 4096;
  logs<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(x, y, z, n);
  return cudaGetLastError();
}
