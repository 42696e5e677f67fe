#pragma once
#include <cuda_runtime.h>

// C[M, N] = A[M, K] * B[K, N], all row-major fp32, on `stream`.
cudaError_t launch_sgemm_tiled(const float* a, const float* b, float* c, int m, int n, int k,
                               cudaStream_t stream);
