#include <cfloat>

#include "softmax.cuh"

namespace {

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// One warp per row: max, then sum of exponentials, then normalise.
__global__ void row_softmax(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
  const int warps_per_block = blockDim.x / 32;
  const int row = blockIdx.x * warps_per_block + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const float* in = x + static_cast<long long>(row) * cols;
  float* out = y + static_cast<long long>(row) * cols;
  float m = -FLT_MAX;
  for (int c = lane; c < cols; c += 32) m = fmaxf(m, in[c]);
  m = warp_max(m);
  float s = 0.f;
  for (int c = lane; c < cols; c += 32) s += __expf(in[c] - m);
  s = warp_sum(s);
  const float inv = 1.f / s;
  for (int c = lane; c < cols; c += 32) out[c] = __expf(in[c] - m) * inv;
}

}  // namespace

void launch_row_softmax(const float* x, float* y, int rows, int cols, cudaStream_t stream) {
  const int threads = 256;
  const int rows_per_block = threads / 32;
  row_softmax<<<(rows + rows_per_block - 1) / rows_per_block, threads, 0, stream>>>(x, y, rows, cols);
}
