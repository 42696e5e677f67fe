// SiLU with 128-bit loads and stores: one float4 per thread per iteration of
// a grid-stride loop (grid sized to a few waves of the device), a scalar loop
// for a tail of n % 4 elements or a misaligned pointer. __expf is accurate to
// a few ulp, far inside the task's tolerance.
#include "silu.cuh"

namespace {
__device__ __forceinline__ float silu(float v) { return v / (1.0f + __expf(-v)); }

__global__ void silu_vec4(const float4* __restrict__ x, float4* __restrict__ y, int64_t n4) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n4;
       i += stride) {
    float4 v = __ldg(x + i);
    v.x = silu(v.x);
    v.y = silu(v.y);
    v.z = silu(v.z);
    v.w = silu(v.w);
    y[i] = v;
  }
}

__global__ void silu_scalar(const float* __restrict__ x, float* __restrict__ y, int64_t begin,
                            int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = begin + blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += stride)
    y[i] = silu(x[i]);
}
}  // namespace

cudaError_t launch_silu(const float* x, float* y, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  int device = 0, sms = 132;
  if (cudaGetDevice(&device) == cudaSuccess)
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  const int threads = 256;
  const bool aligned = (reinterpret_cast<uintptr_t>(x) % 16 == 0) &&
                       (reinterpret_cast<uintptr_t>(y) % 16 == 0);
  int64_t done = 0;
  if (aligned) {
    const int64_t n4 = n / 4;
    int64_t blocks = (n4 + threads - 1) / threads;
    if (blocks > static_cast<int64_t>(sms) * 8) blocks = static_cast<int64_t>(sms) * 8;
    if (n4 > 0)
      silu_vec4<<<static_cast<unsigned>(blocks), threads, 0, stream>>>(
          reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y), n4);
    done = n4 * 4;
  }
  if (done < n) {
    int64_t blocks = (n - done + threads - 1) / threads;
    if (blocks > static_cast<int64_t>(sms) * 8) blocks = static_cast<int64_t>(sms) * 8;
    silu_scalar<<<static_cast<unsigned>(blocks), threads, 0, stream>>>(x, y, done, n);
  }
  return cudaGetLastError();
}
