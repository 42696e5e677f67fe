#include "gelu.cuh"

namespace {

__device__ __forceinline__ float gelu(float v) {
  constexpr float kAlpha = 0.7978845608028654f;  // sqrt(2 / pi)
  return 0.5f * v * (1.f + tanhf(kAlpha * (v + 0.044715f * v * v * v)));
}

// Grid-stride loop over float4s, then a scalar tail.
__global__ void gelu_vec4(const float4* __restrict__ x, float4* __restrict__ y, int64_t n4) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n4;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float4 v = x[i];
    v.x = gelu(v.x);
    v.y = gelu(v.y);
    v.z = gelu(v.z);
    v.w = gelu(v.w);
    y[i] = v;
  }
}

__global__ void gelu_tail(const float* __restrict__ x, float* __restrict__ y, int64_t begin, int64_t n) {
  const int64_t i = begin + blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) y[i] = gelu(x[i]);
}

}  // namespace

void launch_gelu(const float* x, float* y, int64_t n, cudaStream_t stream) {
  const int threads = 256;
  const int64_t n4 = n / 4;
  if (n4 > 0) {
    const int64_t blocks = (n4 + threads - 1) / threads;
    gelu_vec4<<<static_cast<unsigned>(blocks < 65535 * 8 ? blocks : 65535 * 8), threads, 0, stream>>>(
        reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y), n4);
  }
  const int64_t tail = n - n4 * 4;
  if (tail > 0) gelu_tail<<<1, threads, 0, stream>>>(x, y, n4 * 4, n);
}
