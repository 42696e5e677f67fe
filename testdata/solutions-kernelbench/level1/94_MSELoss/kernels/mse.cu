#include "mse.cuh"

namespace {

constexpr int kThreads = 512;

__device__ __forceinline__ double sq(float p, float t) {
  const float d = __fsub_rn(p, t);
  return static_cast<double>(__fmul_rn(d, d));
}

__device__ double block_sum(double v) {
  __shared__ double warp_sum[kThreads / 32];
  for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
  if (threadIdx.x % 32 == 0) warp_sum[threadIdx.x / 32] = v;
  __syncthreads();
  double total = 0.0;
  if (threadIdx.x < 32) {
    total = threadIdx.x < blockDim.x / 32 ? warp_sum[threadIdx.x] : 0.0;
    for (int off = 16; off > 0; off /= 2) total += __shfl_xor_sync(0xffffffffu, total, off);
  }
  return total;  // valid in thread 0
}

template <bool kVec>
__global__ void __launch_bounds__(kThreads) mse_partials(const float* __restrict__ p, const float* __restrict__ t,
                                                         int64_t n, double* __restrict__ partials) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  double acc0 = 0.0, acc1 = 0.0;
  int64_t tail = 0;
  if (kVec) {
    const float4* p4 = reinterpret_cast<const float4*>(p);
    const float4* t4 = reinterpret_cast<const float4*>(t);
    const int64_t n4 = n / 4;
    for (int64_t i = first; i < n4; i += stride) {
      const float4 a = __ldg(&p4[i]), b = __ldg(&t4[i]);
      acc0 += sq(a.x, b.x) + sq(a.y, b.y);
      acc1 += sq(a.z, b.z) + sq(a.w, b.w);
    }
    tail = n4 * 4;
  }
  for (int64_t i = tail + first; i < n; i += stride) acc0 += sq(p[i], t[i]);
  const double total = block_sum(acc0 + acc1);
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

__global__ void __launch_bounds__(kThreads) mse_finish(const double* __restrict__ partials, int blocks, int64_t n,
                                                       float* __restrict__ y) {
  double acc = 0.0;
  for (int i = threadIdx.x; i < blocks; i += kThreads) acc += partials[i];
  const double total = block_sum(acc);
  if (threadIdx.x == 0) y[0] = static_cast<float>(total / static_cast<double>(n));
}

}  // namespace

int mse_blocks() {
  int device = 0, sms = 132;
  if (cudaGetDevice(&device) == cudaSuccess) cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  return sms * 4;  // 4 x 512 threads fill an SM
}

cudaError_t launch_mse(const float* p, const float* t, int64_t n, float* y, double* partials, int blocks,
                       cudaStream_t stream) {
  if (blocks < 1) return cudaErrorInvalidValue;
  const bool vec = reinterpret_cast<uintptr_t>(p) % 16 == 0 && reinterpret_cast<uintptr_t>(t) % 16 == 0;
  if (vec)
    mse_partials<true><<<blocks, kThreads, 0, stream>>>(p, t, n, partials);
  else
    mse_partials<false><<<blocks, kThreads, 0, stream>>>(p, t, n, partials);
  mse_finish<<<1, kThreads, 0, stream>>>(partials, blocks, n, y);
  return cudaGetLastError();
}
