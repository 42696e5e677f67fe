#include "k.cuh"

__global__ void scale(float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] *= 2.f;
}

template <int N>
__global__ void add_n(float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += N;
}

void launch_all(float* y, int n, cudaStream_t stream) {
  scale<<<(n + 255) / 256, 256>>>(y, n);  // expect: [launch-stream]
  scale<<<(n + 255) / 256, 256, 0>>>(y, n);  // expect: [launch-stream]
  scale<<<(n + 255) / 256, 256, 0, 0>>>(y, n);  // expect: [launch-stream]
  scale<<<(n + 255) / 256, 256, 0, cudaStreamLegacy>>>(y, n);  // expect: [launch-stream]
  add_n<3><<<1, 32, 0, nullptr>>>(y, n);  // expect: [launch-stream]
  scale<<<(n + 255) / 256, 256, 0, stream>>>(y, n);  // fine
  add_n<1><<<1, 32, 0, stream>>>(y, n);  // fine
  void* args[] = {&y, &n};
  cudaLaunchKernel((const void*)scale, dim3(1), dim3(32), args, 0, 0);  // expect: [launch-stream]
  cudaLaunchKernel((const void*)scale, dim3(1), dim3(32), args, 0, stream);  // fine
}

static void launch_helper(float* y, int n, cudaStream_t s = 0) { scale<<<1, 32, 0, s>>>(y, n); }

void launch_more(float* y, int n, cudaStream_t stream) {
  cudaStream_t zero = 0;  // expect: [launch-stream]
  cudaStream_t copy = stream;  // fine
  launch_helper(y, n);  // expect: [launch-stream]
  launch_helper(y, n, 0);  // expect: [launch-stream]
  launch_helper(y, n, copy);  // fine
  cudaLaunchConfig_t cfg = {};
  cfg.stream = 0;  // expect: [launch-stream]
  cfg.stream = stream;  // fine
  cudaLaunchConfig_t cfg2 = {dim3(1), dim3(32), 0, nullptr};  // expect: [launch-stream]
  (void)zero;
  (void)cfg2;
}
