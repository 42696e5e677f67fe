#include "bias_relu.cuh"

__global__ void bias_relu_kernel(float* __restrict__ y, const float* __restrict__ bias,
                                 int64_t total, int64_t cols) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (; i < total; i += stride) {
    float v = y[i] + bias[i % cols];
    y[i] = v > 0.0f ? v : 0.0f;
  }
}

cudaError_t launch_bias_relu(float* y, const float* bias, int64_t rows, int64_t cols,
                             cudaStream_t stream) {
  const int64_t total = rows * cols;
  if (total == 0) return cudaSuccess;
  const int threads = 256;
  int64_t blocks = (total + threads - 1) / threads;
  if (blocks > 65535 * 8) blocks = 65535 * 8;
  bias_relu_kernel<<<static_cast<unsigned>(blocks), threads, 0, stream>>>(y, bias, total, cols);
  return cudaGetLastError();
}
