#include "k.cuh"
#include "cfg.h"

__global__ void k(float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  // Trusted: __CUDA_ARCH__ (both parses see their side), even when skipped
  // on both sides.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000
  y[i] = 2.0f;
#elif defined(__CUDA_ARCH__)
  y[i] = 1.0f;
#endif
}

// nvcc's host pass is -O3 (defines __OPTIMIZE__), its device pass is not:
// the device parse skips this.
#ifdef __OPTIMIZE__  // expect: [skipped-branch]
static const int kHostOptimized = 1;
#endif

// Both nvcc passes define __CUDACC__: trusted.
#ifndef __CUDACC__
static const int kNever = 1;
#endif

cudaError_t launch_k(float* y, int n, cudaStream_t s) {
  k<<<(n + 255) / 256, 256, 0, s>>>(y, n);
  return cudaGetLastError();
}
