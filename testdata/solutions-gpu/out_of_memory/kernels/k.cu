#include "k.cuh"

// One thread per output element: y[i, j] = relu(b[j] + sum_p x[i, p] w[j, p]).
__global__ void kernel(const float* __restrict__ x, const float* __restrict__ w,
                       const float* __restrict__ b, float* __restrict__ y, int64_t m, int64_t k,
                       int64_t n) {
  const int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (e >= m * n) return;
  const int64_t i = e / n, j = e % n;
  float acc = b[j];
  for (int64_t p = 0; p < k; ++p) acc += x[i * k + p] * w[j * k + p];
  y[e] = acc > 0.0f ? acc : 0.0f;
}

cudaError_t launch(const float* x, const float* w, const float* b, float* y, int64_t m, int64_t k,
                   int64_t n, cudaStream_t stream) {
  const int64_t total = m * n;
  const int threads = 128;
  const unsigned blocks = static_cast<unsigned>((total + threads - 1) / threads);
  kernel<<<blocks, threads, 0, stream>>>(x, w, b, y, m, k, n);
  return cudaGetLastError();
}
