#include "rowlse.cuh"

#include <math_constants.h>

#include <cstdint>

namespace {

constexpr int kThreads = 256;

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
  return {v, a.s * expf(a.m - v) + 1.0f};
}

__device__ MaxSum block_reduce(MaxSum acc) {
  __shared__ MaxSum warp_acc[kThreads / 32];
  for (int off = 16; off > 0; off /= 2)
    acc = combine(acc, {__shfl_xor_sync(0xffffffffu, acc.m, off), __shfl_xor_sync(0xffffffffu, acc.s, off)});
  if (threadIdx.x % 32 == 0) warp_acc[threadIdx.x / 32] = acc;
  __syncthreads();
  if (threadIdx.x < 32) {
    acc = threadIdx.x < kThreads / 32 ? warp_acc[threadIdx.x] : MaxSum{-CUDART_INF_F, 0.0f};
    for (int off = 16; off > 0; off /= 2)
      acc = combine(acc, {__shfl_xor_sync(0xffffffffu, acc.m, off), __shfl_xor_sync(0xffffffffu, acc.s, off)});
  }
  return acc;  // valid in thread 0
}

// Between the second GEMM (its bias added by the caller) and the logsumexp:
// nothing.
__device__ __forceinline__ float pre(float v) { return v; }
__device__ __forceinline__ float post(float v) { return v; }

// One block per row: t = pre(z[row, j] + bias[j]) for every column, then
// lse = log(sum_j exp(t - max)) + max, out[row] = post(lse).
template <bool kVec>
__global__ void __launch_bounds__(kThreads) row_lse(const float* __restrict__ z, const float* __restrict__ bias,
                                                    float* __restrict__ out, int64_t n) {
  const float* row = z + static_cast<int64_t>(blockIdx.x) * n;
  MaxSum acc{-CUDART_INF_F, 0.0f};
  if (kVec) {
    const float4* r4 = reinterpret_cast<const float4*>(row);
    const float4* b4 = reinterpret_cast<const float4*>(bias);
    for (int64_t i = threadIdx.x; i < n / 4; i += kThreads) {
      const float4 v = __ldg(&r4[i]), b = __ldg(&b4[i]);
      acc = add(acc, pre(v.x + b.x));
      acc = add(acc, pre(v.y + b.y));
      acc = add(acc, pre(v.z + b.z));
      acc = add(acc, pre(v.w + b.w));
    }
  } else {
    for (int64_t i = threadIdx.x; i < n; i += kThreads) acc = add(acc, pre(row[i] + bias[i]));
  }
  acc = block_reduce(acc);
  if (threadIdx.x == 0) {
    // torch.logsumexp for finite rows: log(sum(exp(x - max))) + max.
    out[blockIdx.x] = post(logf(acc.s) + acc.m);
  }
}

}  // namespace

cudaError_t launch_row_lse(const float* z, const float* bias, float* out, int64_t m, int64_t n, cudaStream_t stream) {
  if (m <= 0) return cudaSuccess;
  if (m > 0x7fffffff) return cudaErrorInvalidValue;
  const bool vec =
      n % 4 == 0 && reinterpret_cast<uintptr_t>(z) % 16 == 0 && reinterpret_cast<uintptr_t>(bias) % 16 == 0;
  if (vec)
    row_lse<true><<<static_cast<unsigned>(m), kThreads, 0, stream>>>(z, bias, out, n);
  else
    row_lse<false><<<static_cast<unsigned>(m), kThreads, 0, stream>>>(z, bias, out, n);
  return cudaGetLastError();
}
