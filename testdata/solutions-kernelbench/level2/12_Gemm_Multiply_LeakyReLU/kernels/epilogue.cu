#include "epilogue.cuh"

namespace {

__device__ __forceinline__ float leaky(float v, float scale, float slope) {
  v *= scale;
  return v > 0.0f ? v : v * slope;
}

// One thread per float4 of a row-major [m, n] matrix (n % 4 == 0).
__global__ void bias_scale_leaky_vec4(float4* y, const float4* bias, long long total4, int n4, float scale,
                                      float slope) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total4;
       i += (long long)gridDim.x * blockDim.x) {
    float4 v = y[i];
    float4 b = __ldg(&bias[i % n4]);
    v.x = leaky(v.x + b.x, scale, slope);
    v.y = leaky(v.y + b.y, scale, slope);
    v.z = leaky(v.z + b.z, scale, slope);
    v.w = leaky(v.w + b.w, scale, slope);
    y[i] = v;
  }
}

__global__ void bias_scale_leaky(float* y, const float* bias, long long total, int n, float scale, float slope) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
       i += (long long)gridDim.x * blockDim.x)
    y[i] = leaky(y[i] + bias[i % n], scale, slope);
}

}  // namespace

void launch_bias_scale_leaky(float* y, const float* bias, int m, int n, float scale, float slope,
                             cudaStream_t stream) {
  const int threads = 256;
  if (n % 4 == 0) {
    long long total4 = (long long)m * n / 4;
    int blocks = (int)((total4 + threads - 1) / threads);
    if (blocks > 65535 * 8) blocks = 65535 * 8;
    bias_scale_leaky_vec4<<<blocks, threads, 0, stream>>>(reinterpret_cast<float4*>(y),
                                                          reinterpret_cast<const float4*>(bias), total4, n / 4,
                                                          scale, slope);
  } else {
    long long total = (long long)m * n;
    int blocks = (int)((total + threads - 1) / threads);
    if (blocks > 65535 * 8) blocks = 65535 * 8;
    bias_scale_leaky<<<blocks, threads, 0, stream>>>(y, bias, total, n, scale, slope);
  }
}
