// y = relu(x @ w^T + b): one thread per output element, launched on the
// stream the binding passes (the caller's current stream).
#include <cuda_runtime.h>

#include <cstdint>

__global__ void linear_relu_kernel(float* y, const float* x, const float* w, const float* b, int64_t m, int64_t k,
                                   int64_t n) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= m * n) return;
  const int64_t i = idx / n, j = idx % n;
  float acc = b[j];
  for (int64_t p = 0; p < k; ++p) acc += x[i * k + p] * w[j * k + p];
  y[idx] = acc > 0.f ? acc : 0.f;
}

extern "C" void linear_relu_launcher(float* y, const float* x, const float* w, const float* b, int64_t m,
                                     int64_t k, int64_t n, cudaStream_t stream) {
  const int64_t total = m * n;
  if (total == 0) return;
  const int threads = 256;
  const int blocks = static_cast<int>((total + threads - 1) / threads);
  linear_relu_kernel<<<blocks, threads, 0, stream>>>(y, x, w, b, m, k, n);
}
