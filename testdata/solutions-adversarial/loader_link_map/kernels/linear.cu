#include "linear.cuh"

namespace {
__global__ void add_bias(float* __restrict__ y, const float* __restrict__ b, int64_t total,
                         int64_t n) {
  const int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (e < total) y[e] += b[e % n];
}

__global__ void linear_relu(const float* __restrict__ x, const float* __restrict__ w,
                            const float* __restrict__ b, float* __restrict__ y, int64_t m,
                            int64_t k, int64_t n) {
  const int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (e >= m * n) return;
  const int64_t i = e / n, j = e % n;
  float acc = b[j];
  for (int64_t p = 0; p < k; ++p) acc = fmaf(x[i * k + p], w[j * k + p], acc);
  y[e] = acc > 0.0f ? acc : 0.0f;
}
}  // namespace

cudaError_t launch_add_bias(float* y, const float* b, int64_t m, int64_t n, cudaStream_t stream) {
  const int64_t total = m * n;
  if (total == 0) return cudaSuccess;
  add_bias<<<static_cast<unsigned>((total + 255) / 256), 256, 0, stream>>>(y, b, total, n);
  return cudaGetLastError();
}

cudaError_t launch_linear_relu(const float* x, const float* w, const float* b, float* y,
                               int64_t m, int64_t k, int64_t n, cudaStream_t stream) {
  const int64_t total = m * n;
  if (total == 0) return cudaSuccess;
  linear_relu<<<static_cast<unsigned>((total + 127) / 128), 128, 0, stream>>>(x, w, b, y, m, k,
                                                                              n);
  return cudaGetLastError();
}
