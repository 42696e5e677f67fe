__device__ float d_result_cache[1024];  // expect: [mutable-global]
__managed__ int m_flag;  // expect: [mutable-global]
__constant__ float c_weights[64];  // fine: read-only on the device, set in init

__global__ void k(float* y) {
  __shared__ float tile[256];  // fine
  extern __shared__ float dyn[];  // fine
  tile[threadIdx.x] = c_weights[threadIdx.x % 64] + dyn[0];
  y[threadIdx.x] = tile[threadIdx.x] + d_result_cache[threadIdx.x];
}
