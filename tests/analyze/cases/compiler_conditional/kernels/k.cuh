#pragma once
// __CUDA_ARCH__ separates host and device code; both sides are checked.
__host__ __device__ inline int lanes() {
#ifdef __CUDA_ARCH__
  return 32;
#else
  return 1;
#endif
}
