// Device, context and stream settings the harness owns that no banned name
// reached before a review by attack (2026-12-07): the harness's stream's
// attributes, the persisting-L2 reset, the memory pools, and the driver
// API's context cache configuration and primary-context flags. (The
// deprecated cudaThreadExit / cudaThreadSetLimit / cudaThreadSetCacheConfig
// are banned too, but CUDA 12's headers no longer declare them: a hand
// declaration is extern-symbol's.)
#include <cuda.h>
#include <cuda_runtime.h>

#include <kb/solution.h>

KB_FORWARD(ctx) {
  cudaStream_t s = static_cast<cudaStream_t>(ctx.stream());
  cudaStreamAttrValue v = {};
  v.syncPolicy = cudaSyncPolicyYield;
  cudaStreamSetAttribute(s, cudaStreamAttributeSynchronizationPolicy, &v);  // expect: [device-control]
  cudaCtxResetPersistingL2Cache();  // expect: [device-control]
  cudaMemPool_t pool;
  cudaDeviceGetDefaultMemPool(&pool, 0);
  unsigned long long t = ~0ull;
  cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &t);  // expect: [device-control]
  cuCtxSetCacheConfig(CU_FUNC_CACHE_PREFER_L1);  // expect: [device-control]
  cuCtxResetPersistingL2Cache();  // expect: [device-control]
  cuDevicePrimaryCtxSetFlags(0, 0);  // expect: [device-control]
}
