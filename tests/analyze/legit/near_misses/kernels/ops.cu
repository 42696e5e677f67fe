#include "ops.cuh"

__global__ void scale(const float* x, float* y, int n, float s) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * s;
}

void launch_scale(const float* x, float* y, int n, float s, cudaStream_t stream) {
  cudaStream_t same = stream;  // a copy of the given stream is still the given stream
  scale<<<(n + 255) / 256, 256, 0, same>>>(x, y, n, s);
}
