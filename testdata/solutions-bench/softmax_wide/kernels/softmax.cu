// Row softmax, one block per row: an online pass for the row's max and sum
// (Milakov & Gimelshein, "Online normalizer calculation for softmax", 2018),
// then a pass that writes exp(x - max) / sum. float4 loads; rows must be a
// multiple of 4 wide (the launcher checks).
#include <cuda_runtime.h>

#include <cfloat>

namespace {

constexpr int kThreads = 1024;

struct MaxSum {
  float m, s;
};

__device__ MaxSum combine(MaxSum a, MaxSum b) {
  float m = fmaxf(a.m, b.m);
  float s = (a.m == -FLT_MAX ? 0.f : a.s * __expf(a.m - m)) + (b.m == -FLT_MAX ? 0.f : b.s * __expf(b.m - m));
  return {m, s};
}

__global__ void __launch_bounds__(kThreads) softmax_rows(const float* __restrict__ x, float* __restrict__ y, int cols) {
  const float4* row = reinterpret_cast<const float4*>(x + static_cast<size_t>(blockIdx.x) * cols);
  float4* out = reinterpret_cast<float4*>(y + static_cast<size_t>(blockIdx.x) * cols);
  const int n4 = cols / 4;
  MaxSum acc{-FLT_MAX, 0.f};
  for (int i = threadIdx.x; i < n4; i += kThreads) {
    float4 v = row[i];
    float m = fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w));
    float s = __expf(v.x - m) + __expf(v.y - m) + __expf(v.z - m) + __expf(v.w - m);
    acc = combine(acc, {m, s});
  }
  for (int off = 16; off > 0; off /= 2) {
    MaxSum o{__shfl_xor_sync(0xffffffff, acc.m, off), __shfl_xor_sync(0xffffffff, acc.s, off)};
    acc = combine(acc, o);
  }
  __shared__ MaxSum warp[kThreads / 32];
  if (threadIdx.x % 32 == 0) warp[threadIdx.x / 32] = acc;
  __syncthreads();
  if (threadIdx.x < 32) {
    acc = threadIdx.x < kThreads / 32 ? warp[threadIdx.x] : MaxSum{-FLT_MAX, 0.f};
    for (int off = 16; off > 0; off /= 2) {
      MaxSum o{__shfl_xor_sync(0xffffffff, acc.m, off), __shfl_xor_sync(0xffffffff, acc.s, off)};
      acc = combine(acc, o);
    }
    if (threadIdx.x == 0) warp[0] = acc;
  }
  __syncthreads();
  const float m = warp[0].m, inv = 1.f / warp[0].s;
  for (int i = threadIdx.x; i < n4; i += kThreads) {
    float4 v = row[i];
    out[i] = make_float4(__expf(v.x - m) * inv, __expf(v.y - m) * inv, __expf(v.z - m) * inv, __expf(v.w - m) * inv);
  }
}

}  // namespace

cudaError_t launch_softmax_rows(const float* x, float* y, long rows, long cols, cudaStream_t stream) {
  if (cols % 4 != 0) return cudaErrorInvalidValue;
  softmax_rows<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(x, y, static_cast<int>(cols));
  return cudaGetLastError();
}
