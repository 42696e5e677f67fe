#include "split.cuh"

namespace {
__device__ float round_tf32(float v) {
  unsigned u = __float_as_uint(v);
  u = (u + 0x1000u) & ~0x1fffu;  // round the 13 dropped mantissa bits to nearest
  return __uint_as_float(u);
}

__global__ void split_tf32(const float* __restrict__ in, float* __restrict__ hi, float* __restrict__ lo, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    const float v = in[i];
    const float h = round_tf32(v);
    hi[i] = h;
    lo[i] = round_tf32(v - h);
  }
}
}  // namespace

cudaError_t launch_split_tf32(const float* in, float* hi, float* lo, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  int64_t blocks = (n + 255) / 256;
  if (blocks > 4096) blocks = 4096;
  split_tf32<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(in, hi, lo, n);
  return cudaGetLastError();
}
