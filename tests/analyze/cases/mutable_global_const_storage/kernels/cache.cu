// A const __device__ array is ordinary, writable device memory: its
// address from cudaGetSymbolAddress, a copy into it, or a cast in a kernel
// writes it (testdata/solutions-adversarial/cache_const_symbol).
#include <cuda_runtime.h>

#include <kb/solution.h>

__device__ const float d_cache[1024] = {};
__device__ const float d_table[4] = {1.f, 2.f, 3.f, 4.f};
__constant__ float c_weight[4];

__global__ void put(float v) {
  const_cast<float*>(d_cache)[threadIdx.x] = v;  // expect: [mutable-global]
}
__global__ void use(float* y) { y[threadIdx.x] = d_table[threadIdx.x & 3] * c_weight[0]; }

void launch_cache(const kb::Context& ctx, float* y) {
  cudaStream_t s = static_cast<cudaStream_t>(ctx.stream());
  void* p = nullptr;
  cudaGetSymbolAddress(&p, d_cache);  // expect: [mutable-global]
  float v = 1.f;
  cudaMemcpyToSymbolAsync(d_cache, &v, sizeof v, 0, cudaMemcpyHostToDevice, s);  // expect: [mutable-global]
  // Fine: __constant__ memory written from the host (allow_constant_memory),
  // and reading a const __device__ table.
  cudaMemcpyToSymbolAsync(c_weight, &v, sizeof v, 0, cudaMemcpyHostToDevice, s);
  put<<<1, 32, 0, s>>>(v);
  use<<<1, 32, 0, s>>>(y);
}
