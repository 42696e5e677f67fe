#include <cuda_bf16.h>

#include "scale.cuh"

__global__ void scale_half2(const __half2* __restrict__ x, __half2* __restrict__ y, int64_t n2, __half2 a) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n2) y[i] = __hmul2(x[i], a);
}

__global__ void to_bf16(const float* x, __nv_bfloat16* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __float2bfloat16(x[i]);
}

void launch_scale_half2(const __half* x, __half* y, int64_t n, float alpha, cudaStream_t stream) {
  const int64_t n2 = n / 2;
  const __half2 a = __float2half2_rn(alpha);
  scale_half2<<<static_cast<unsigned>((n2 + 255) / 256), 256, 0, stream>>>(
      reinterpret_cast<const __half2*>(x), reinterpret_cast<__half2*>(y), n2, a);
}
