#pragma once
#include <cuda_runtime.h>

// C[M, N] = A[M, K] * B[K, N] (row-major fp32) by split-K: `splits` partial
// GEMMs over slices of K into `partials` ([splits][M][N] floats), then an
// epilogue that sums them in fp32 into C, launched with programmatic
// dependent launch when the device and the epilogue's code support it.
cudaError_t launch_splitk_gemm(const float* a, const float* b, float* c, float* partials, int m, int n, int k,
                               int splits, cudaStream_t stream);
