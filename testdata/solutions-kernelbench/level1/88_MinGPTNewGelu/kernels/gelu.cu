#include "gelu.cuh"

namespace {

__device__ __forceinline__ float new_gelu(float x) {
  const float k = 0.7978845608028654f;  // math.sqrt(2.0 / math.pi) as an fp32 scalar
  const float cube = __fmul_rn(__fmul_rn(x, x), x);            // torch.pow(x, 3.0)
  const float inner = __fadd_rn(x, __fmul_rn(0.044715f, cube));  // x + 0.044715 * x^3
  const float t = tanhf(__fmul_rn(k, inner));                   // tanh(k * (...))
  return __fmul_rn(__fmul_rn(0.5f, x), __fadd_rn(1.0f, t));     // 0.5 * x * (1 + t)
}

__global__ void __launch_bounds__(256) new_gelu_vec4(const float4* __restrict__ x, float4* __restrict__ y,
                                                     int64_t n4) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n4;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float4 v = __ldg(&x[i]);
    y[i] = make_float4(new_gelu(v.x), new_gelu(v.y), new_gelu(v.z), new_gelu(v.w));
  }
}

__global__ void new_gelu_scalar(const float* __restrict__ x, float* __restrict__ y, int64_t begin, int64_t n) {
  for (int64_t i = begin + static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    y[i] = new_gelu(x[i]);
}

int grid_for(int64_t work, int threads) {
  int device = 0, sms = 132;
  if (cudaGetDevice(&device) == cudaSuccess) cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  int64_t blocks = (work + threads - 1) / threads;
  const int64_t cap = static_cast<int64_t>(sms) * 16;
  if (blocks > cap) blocks = cap;
  return blocks < 1 ? 1 : static_cast<int>(blocks);
}

}  // namespace

cudaError_t launch_new_gelu(const float* x, float* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  const int threads = 256;
  const bool aligned = reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 16 == 0;
  int64_t done = 0;
  if (aligned && n >= 4) {
    const int64_t n4 = n / 4;
    new_gelu_vec4<<<grid_for(n4, threads), threads, 0, stream>>>(reinterpret_cast<const float4*>(x),
                                                                  reinterpret_cast<float4*>(y), n4);
    done = n4 * 4;
  }
  if (done < n) new_gelu_scalar<<<grid_for(n - done, threads), threads, 0, stream>>>(x, y, done, n);
  return cudaGetLastError();
}
