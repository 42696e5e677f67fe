#include "layernorm.cuh"

namespace {

constexpr int kThreads = 256;
constexpr int64_t kChunk = 16384;  // elements of a row per block

__device__ __forceinline__ double2 add2(double2 a, double2 b) { return make_double2(a.x + b.x, a.y + b.y); }

__device__ double2 block_sum(double2 v) {
  __shared__ double2 warp_sum[kThreads / 32];
  __shared__ double2 total;
  for (int off = 16; off > 0; off /= 2)
    v = add2(v, make_double2(__shfl_xor_sync(0xffffffffu, v.x, off), __shfl_xor_sync(0xffffffffu, v.y, off)));
  if (threadIdx.x % 32 == 0) warp_sum[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    v = threadIdx.x < kThreads / 32 ? warp_sum[threadIdx.x] : make_double2(0.0, 0.0);
    for (int off = 16; off > 0; off /= 2)
      v = add2(v, make_double2(__shfl_xor_sync(0xffffffffu, v.x, off), __shfl_xor_sync(0xffffffffu, v.y, off)));
    if (threadIdx.x == 0) total = v;
  }
  __syncthreads();
  return total;
}

// grid (chunks, rows): partials[row * chunks + chunk] = (sum, sum of squares).
template <bool kVec>
__global__ void __launch_bounds__(kThreads) chunk_moments(const float* __restrict__ x, int64_t cols,
                                                          double2* __restrict__ partials) {
  const int64_t row = blockIdx.y, begin = blockIdx.x * kChunk;
  const int64_t end = begin + kChunk < cols ? begin + kChunk : cols;
  const float* src = x + row * cols;
  double s = 0.0, q = 0.0;
  if (kVec) {
    const float4* s4 = reinterpret_cast<const float4*>(src);
    for (int64_t i = begin / 4 + threadIdx.x; i < end / 4; i += kThreads) {
      const float4 v = __ldg(&s4[i]);
      // Four fp32 terms summed in fp32 first would round; keep them in double.
      s += static_cast<double>(v.x) + static_cast<double>(v.y) + static_cast<double>(v.z) + static_cast<double>(v.w);
      q += static_cast<double>(v.x) * v.x + static_cast<double>(v.y) * v.y + static_cast<double>(v.z) * v.z +
           static_cast<double>(v.w) * v.w;
    }
  } else {
    for (int64_t i = begin + threadIdx.x; i < end; i += kThreads) {
      const double v = src[i];
      s += v;
      q += v * v;
    }
  }
  const double2 t = block_sum(make_double2(s, q));
  if (threadIdx.x == 0) partials[row * gridDim.x + blockIdx.x] = t;
}

template <bool kVec>
__global__ void __launch_bounds__(kThreads) normalize(const float* __restrict__ x, const float* __restrict__ w,
                                                      const float* __restrict__ b, float* __restrict__ y, int64_t cols,
                                                      const double2* __restrict__ partials, double eps) {
  const int64_t row = blockIdx.y, begin = blockIdx.x * kChunk;
  const int64_t end = begin + kChunk < cols ? begin + kChunk : cols;
  double2 acc = make_double2(0.0, 0.0);
  for (int64_t i = threadIdx.x; i < gridDim.x; i += kThreads) acc = add2(acc, partials[row * gridDim.x + i]);
  const double2 t = block_sum(acc);
  const double mean_d = t.x / static_cast<double>(cols);
  double var = t.y / static_cast<double>(cols) - mean_d * mean_d;
  if (var < 0.0) var = 0.0;
  const float mean = static_cast<float>(mean_d);
  const float rstd = static_cast<float>(1.0 / sqrt(var + eps));
  const float* src = x + row * cols;
  float* dst = y + row * cols;
  if (kVec) {
    const float4* s4 = reinterpret_cast<const float4*>(src);
    const float4* w4 = reinterpret_cast<const float4*>(w);
    const float4* b4 = reinterpret_cast<const float4*>(b);
    float4* d4 = reinterpret_cast<float4*>(dst);
    for (int64_t i = begin / 4 + threadIdx.x; i < end / 4; i += kThreads) {
      const float4 v = __ldg(&s4[i]), g = __ldg(&w4[i]), h = __ldg(&b4[i]);
      d4[i] = make_float4((v.x - mean) * rstd * g.x + h.x, (v.y - mean) * rstd * g.y + h.y,
                          (v.z - mean) * rstd * g.z + h.z, (v.w - mean) * rstd * g.w + h.w);
    }
  } else {
    for (int64_t i = begin + threadIdx.x; i < end; i += kThreads) dst[i] = (src[i] - mean) * rstd * w[i] + b[i];
  }
}

}  // namespace

int64_t layernorm_chunks(int64_t cols) { return (cols + kChunk - 1) / kChunk; }

size_t layernorm_scratch_bytes(int64_t rows, int64_t chunks) {
  return static_cast<size_t>(rows * chunks) * sizeof(double2);
}

cudaError_t launch_layernorm(const float* x, const float* w, const float* b, float* y, int64_t rows, int64_t cols,
                             int64_t chunks, double eps, void* partials, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  if (rows > 65535 || chunks > 0x7fffffff) return cudaErrorInvalidValue;
  const dim3 grid(static_cast<unsigned>(chunks), static_cast<unsigned>(rows));
  auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  const bool vec = cols % 4 == 0 && aligned(x) && aligned(w) && aligned(b) && aligned(y);
  double2* parts = static_cast<double2*>(partials);
  if (vec) {
    chunk_moments<true><<<grid, kThreads, 0, stream>>>(x, cols, parts);
    normalize<true><<<grid, kThreads, 0, stream>>>(x, w, b, y, cols, parts, eps);
  } else {
    chunk_moments<false><<<grid, kThreads, 0, stream>>>(x, cols, parts);
    normalize<false><<<grid, kThreads, 0, stream>>>(x, w, b, y, cols, parts, eps);
  }
  return cudaGetLastError();
}
