#include "sigmoid.cuh"

#include <cstdint>

namespace {

// torch's CUDA sigmoid: 1 / (1 + exp(-x)) in fp32; full-precision expf.
__device__ __forceinline__ float sigmoid(float v) { return 1.0f / (1.0f + expf(-v)); }

__global__ void __launch_bounds__(256) bias_sigmoid_vec4(float4* __restrict__ h, const float4* __restrict__ bias,
                                                         int64_t total4, int n4) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total4;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float4 v = h[i];
    const float4 b = __ldg(&bias[i % n4]);
    h[i] = make_float4(sigmoid(v.x + b.x), sigmoid(v.y + b.y), sigmoid(v.z + b.z), sigmoid(v.w + b.w));
  }
}

__global__ void bias_sigmoid(float* __restrict__ h, const float* __restrict__ bias, int64_t total, int n) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    h[i] = sigmoid(h[i] + bias[i % n]);
}

}  // namespace

cudaError_t launch_bias_sigmoid(float* h, const float* bias, int m, int n, cudaStream_t stream) {
  const int threads = 256;
  const int64_t total = static_cast<int64_t>(m) * n;
  if (total <= 0) return cudaSuccess;
  const bool vec =
      n % 4 == 0 && reinterpret_cast<uintptr_t>(h) % 16 == 0 && reinterpret_cast<uintptr_t>(bias) % 16 == 0;
  int64_t blocks = ((vec ? total / 4 : total) + threads - 1) / threads;
  if (blocks > 65535 * 8) blocks = 65535 * 8;
  if (vec)
    bias_sigmoid_vec4<<<static_cast<int>(blocks), threads, 0, stream>>>(
        reinterpret_cast<float4*>(h), reinterpret_cast<const float4*>(bias), total / 4, n / 4);
  else
    bias_sigmoid<<<static_cast<int>(blocks), threads, 0, stream>>>(h, bias, total, n);
  return cudaGetLastError();
}
