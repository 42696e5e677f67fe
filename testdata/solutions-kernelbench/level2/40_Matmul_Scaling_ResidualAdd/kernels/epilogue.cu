#include "epilogue.cuh"

#include <cstdint>

namespace {

// The reference's ops after the GEMM's bias add, in its order, in fp32.
__device__ __forceinline__ float f(float v) {
  // x * scaling_factor + original_x, scaling_factor = 0.5: v * 0.5f is exact,
  // so the sum rounds once, as in the reference (an fma contraction rounds the
  // same).
  return v * 0.5f + v;
}

// One thread per float4 of the row-major [m, n] matrix (n % 4 == 0), bias via
// the read-only path; grid-stride.
__global__ void __launch_bounds__(256) bias_epilogue_vec4(float4* __restrict__ y, const float4* __restrict__ bias,
                                                          int64_t total4, int n4) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total4;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float4 v = y[i];
    const float4 b = __ldg(&bias[i % n4]);
    v.x = f(v.x + b.x);
    v.y = f(v.y + b.y);
    v.z = f(v.z + b.z);
    v.w = f(v.w + b.w);
    y[i] = v;
  }
}

__global__ void bias_epilogue(float* __restrict__ y, const float* __restrict__ bias, int64_t total, int n) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    y[i] = f(y[i] + bias[i % n]);
}

}  // namespace

cudaError_t launch_bias_epilogue(float* y, const float* bias, int m, int n, cudaStream_t stream) {
  const int threads = 256;
  const int64_t total = static_cast<int64_t>(m) * n;
  if (total <= 0) return cudaSuccess;
  const bool vec =
      n % 4 == 0 && reinterpret_cast<uintptr_t>(y) % 16 == 0 && reinterpret_cast<uintptr_t>(bias) % 16 == 0;
  const int64_t work = vec ? total / 4 : total;
  int64_t blocks = (work + threads - 1) / threads;
  if (blocks > 65535 * 8) blocks = 65535 * 8;
  if (vec)
    bias_epilogue_vec4<<<static_cast<int>(blocks), threads, 0, stream>>>(
        reinterpret_cast<float4*>(y), reinterpret_cast<const float4*>(bias), total / 4, n / 4);
  else
    bias_epilogue<<<static_cast<int>(blocks), threads, 0, stream>>>(y, bias, total, n);
  return cudaGetLastError();
}
