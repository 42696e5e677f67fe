#include "softmax.cuh"

#include <math_constants.h>

namespace {

constexpr int kThreads = 1024;

struct MaxSum {
  float m, s;  // running max and sum of exp(v - m)
};

__device__ __forceinline__ MaxSum combine(MaxSum a, MaxSum b) {
  const float m = fmaxf(a.m, b.m);
  if (m == -CUDART_INF_F) return {m, 0.0f};
  return {m, a.s * expf(a.m - m) + b.s * expf(b.m - m)};
}

__device__ __forceinline__ MaxSum add(MaxSum a, float v) {
  if (v <= a.m) return {a.m, a.s + expf(v - a.m)};
  return {v, a.s * expf(a.m - v) + 1.0f};  // a.m = -inf gives 0 * 0 + 1
}

__device__ MaxSum block_reduce(MaxSum acc) {
  __shared__ MaxSum warp_acc[kThreads / 32];
  __shared__ MaxSum total;
  for (int off = 16; off > 0; off /= 2)
    acc = combine(acc, {__shfl_xor_sync(0xffffffffu, acc.m, off), __shfl_xor_sync(0xffffffffu, acc.s, off)});
  if (threadIdx.x % 32 == 0) warp_acc[threadIdx.x / 32] = acc;
  __syncthreads();
  if (threadIdx.x < 32) {
    acc = threadIdx.x < blockDim.x / 32 ? warp_acc[threadIdx.x] : MaxSum{-CUDART_INF_F, 0.0f};
    for (int off = 16; off > 0; off /= 2)
      acc = combine(acc, {__shfl_xor_sync(0xffffffffu, acc.m, off), __shfl_xor_sync(0xffffffffu, acc.s, off)});
    if (threadIdx.x == 0) total = acc;
  }
  __syncthreads();
  return total;
}

// cols % 4 == 0 and 16-byte aligned rows.
__global__ void __launch_bounds__(kThreads) softmax_rows_vec4(const float* __restrict__ x, float* __restrict__ y,
                                                              int64_t cols) {
  const float4* row = reinterpret_cast<const float4*>(x + static_cast<int64_t>(blockIdx.x) * cols);
  float4* out = reinterpret_cast<float4*>(y + static_cast<int64_t>(blockIdx.x) * cols);
  const int64_t n4 = cols / 4;
  MaxSum acc{-CUDART_INF_F, 0.0f};
  for (int64_t i = threadIdx.x; i < n4; i += kThreads) {
    const float4 v = __ldg(&row[i]);
    const float m = fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w));
    if (m == -CUDART_INF_F) continue;
    const float s = expf(v.x - m) + expf(v.y - m) + expf(v.z - m) + expf(v.w - m);
    acc = combine(acc, {m, s});
  }
  const MaxSum t = block_reduce(acc);
  const float m = t.m, s = t.s;
  for (int64_t i = threadIdx.x; i < n4; i += kThreads) {
    const float4 v = __ldg(&row[i]);
    out[i] = make_float4(expf(v.x - m) / s, expf(v.y - m) / s, expf(v.z - m) / s, expf(v.w - m) / s);
  }
}

__global__ void __launch_bounds__(kThreads) softmax_rows_scalar(const float* __restrict__ x, float* __restrict__ y,
                                                                int64_t cols) {
  const float* row = x + static_cast<int64_t>(blockIdx.x) * cols;
  float* out = y + static_cast<int64_t>(blockIdx.x) * cols;
  MaxSum acc{-CUDART_INF_F, 0.0f};
  for (int64_t i = threadIdx.x; i < cols; i += kThreads) acc = add(acc, row[i]);
  const MaxSum t = block_reduce(acc);
  for (int64_t i = threadIdx.x; i < cols; i += kThreads) out[i] = expf(row[i] - t.m) / t.s;
}

}  // namespace

cudaError_t launch_softmax_rows(const float* x, float* y, int64_t rows, int64_t cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  if (rows > 0x7fffffff) return cudaErrorInvalidValue;
  const bool vec = cols % 4 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 &&
                   reinterpret_cast<uintptr_t>(y) % 16 == 0;
  if (vec)
    softmax_rows_vec4<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(x, y, cols);
  else
    softmax_rows_scalar<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(x, y, cols);
  return cudaGetLastError();
}
