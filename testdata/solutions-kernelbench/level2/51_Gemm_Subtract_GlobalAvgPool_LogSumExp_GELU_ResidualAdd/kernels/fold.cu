#include "fold.cuh"

namespace {

constexpr int kThreads = 256;

__device__ double block_sum(double v) {
  __shared__ double warp_sum[kThreads / 32];
  __syncthreads();  // warp_sum may still be read by a previous call
  for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
  if (threadIdx.x % 32 == 0) warp_sum[threadIdx.x / 32] = v;
  __syncthreads();
  double t = 0.0;
  if (threadIdx.x < 32) {
    t = threadIdx.x < kThreads / 32 ? warp_sum[threadIdx.x] : 0.0;
    for (int off = 16; off > 0; off /= 2) t += __shfl_xor_sync(0xffffffffu, t, off);
  }
  return t;  // valid in thread 0
}

// Init-time folds of the weights (untimed; they see parameters, never inputs).

// One thread per column; rows read in order (coalesced across the warp).
__global__ void column_sums(const float* __restrict__ w, double* __restrict__ s, int64_t n, int64_t k) {
  const int64_t col = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (col >= k) return;
  double acc = 0.0;
  for (int64_t r = 0; r < n; ++r) acc += static_cast<double>(w[r * k + col]);
  s[col] = acc;
}

// c[0] = sum(a) - sum(b) (b may be null), in fp64, one block.
__global__ void __launch_bounds__(kThreads) vector_sums(const float* __restrict__ a, const float* __restrict__ b,
                                                        int64_t n, double* __restrict__ c) {
  double acc = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += kThreads) {
    acc += static_cast<double>(a[i]);
    if (b) acc -= static_cast<double>(b[i]);
  }
  const double t = block_sum(acc);
  if (threadIdx.x == 0) c[0] = t;
}

// The fp64 dot product of one fp32 row of x with s, summed over the block
// (valid in thread 0).
template <bool kVec>
__device__ double row_dot(const float* __restrict__ row, const double* __restrict__ s, int64_t k) {
  double acc = 0.0;
  if (kVec) {
    const float4* r4 = reinterpret_cast<const float4*>(row);
    const double2* s2 = reinterpret_cast<const double2*>(s);
    for (int64_t i = threadIdx.x; i < k / 4; i += kThreads) {
      const float4 v = __ldg(&r4[i]);
      const double2 a = __ldg(&s2[2 * i]), b = __ldg(&s2[2 * i + 1]);
      acc = fma(static_cast<double>(v.x), a.x, acc);
      acc = fma(static_cast<double>(v.y), a.y, acc);
      acc = fma(static_cast<double>(v.z), b.x, acc);
      acc = fma(static_cast<double>(v.w), b.y, acc);
    }
  } else {
    for (int64_t i = threadIdx.x; i < k; i += kThreads) acc = fma(static_cast<double>(row[i]), s[i], acc);
  }
  return block_sum(acc);
}

// torch's exact GELU kernel (approximate='none'): x * 0.5 * (1 + erf(x / sqrt(2))).
__device__ __forceinline__ float gelu(float x) {
  const float k_alpha = 0.70710678118654752440f;  // M_SQRT1_2
  return __fmul_rn(__fmul_rn(x, 0.5f), __fadd_rn(1.0f, erff(__fmul_rn(x, k_alpha))));
}

template <bool kVec>
__global__ void __launch_bounds__(kThreads)
    mean_gelu_residual(const float* __restrict__ x, const double* __restrict__ colsum, const double* __restrict__ c,
                       double n_out, float* __restrict__ out, int64_t k) {
  __shared__ float g_shared;
  const float* row = x + static_cast<int64_t>(blockIdx.x) * k;
  float* dst = out + static_cast<int64_t>(blockIdx.x) * k;
  const double t = row_dot<kVec>(row, colsum, k);
  // mean over the GEMM's columns, then logsumexp over a dimension of size 1
  // (log(exp(u - u)) + u = u exactly), then GELU.
  if (threadIdx.x == 0) g_shared = gelu(static_cast<float>((t + c[0]) / n_out));
  __syncthreads();
  const float g = g_shared;
  if (kVec) {
    const float4* r4 = reinterpret_cast<const float4*>(row);
    float4* d4 = reinterpret_cast<float4*>(dst);
    for (int64_t i = threadIdx.x; i < k / 4; i += kThreads) {
      const float4 v = __ldg(&r4[i]);
      d4[i] = make_float4(g + v.x, g + v.y, g + v.z, g + v.w);
    }
  } else {
    for (int64_t i = threadIdx.x; i < k; i += kThreads) dst[i] = g + row[i];
  }
}

}  // namespace

cudaError_t launch_fold_weights(const float* w, int64_t n, int64_t k, const float* bias, const float* sub,
                                double* colsum, double* c, cudaStream_t stream) {
  if (k > 0) column_sums<<<static_cast<unsigned>((k + kThreads - 1) / kThreads), kThreads, 0, stream>>>(w, colsum, n, k);
  vector_sums<<<1, kThreads, 0, stream>>>(bias, sub, n, c);
  return cudaGetLastError();
}

cudaError_t launch_mean_gelu_residual(const float* x, const double* colsum, const double* c, int64_t n_out,
                                      float* out, int64_t m, int64_t k, cudaStream_t stream) {
  if (m <= 0) return cudaSuccess;
  if (m > 0x7fffffff) return cudaErrorInvalidValue;
  const bool vec = k % 4 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 &&
                   reinterpret_cast<uintptr_t>(colsum) % 16 == 0 && reinterpret_cast<uintptr_t>(out) % 16 == 0;
  const double n = static_cast<double>(n_out);
  if (vec)
    mean_gelu_residual<true><<<static_cast<unsigned>(m), kThreads, 0, stream>>>(x, colsum, c, n, out, k);
  else
    mean_gelu_residual<false><<<static_cast<unsigned>(m), kThreads, 0, stream>>>(x, colsum, c, n, out, k);
  return cudaGetLastError();
}
