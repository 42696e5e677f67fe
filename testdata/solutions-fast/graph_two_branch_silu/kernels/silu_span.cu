#include "silu_span.cuh"

namespace {
__device__ __forceinline__ float silu1(float v) { return v / (1.0f + expf(-v)); }

__global__ void silu_span(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const bool aligned = ((reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(y)) & 15) == 0;
  const int64_t n4 = aligned ? n / 4 : 0;
  const float4* x4 = reinterpret_cast<const float4*>(x);
  float4* y4 = reinterpret_cast<float4*>(y);
  for (int64_t i = first; i < n4; i += stride) {
    float4 v = x4[i];
    v.x = silu1(v.x);
    v.y = silu1(v.y);
    v.z = silu1(v.z);
    v.w = silu1(v.w);
    y4[i] = v;
  }
  for (int64_t i = 4 * n4 + first; i < n; i += stride) y[i] = silu1(x[i]);
}
}  // namespace

void* silu_span_kernel() { return reinterpret_cast<void*>(&silu_span); }
