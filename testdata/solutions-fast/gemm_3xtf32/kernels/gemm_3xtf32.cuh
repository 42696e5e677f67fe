#pragma once
#include <cuda_runtime.h>

// C[M, N] = A[M, K] * B[K, N], all row-major fp32, with fp32 accuracy on
// TF32 tensor cores (3xTF32, see gemm_3xtf32.cu), on `stream`. sm_80+.
cudaError_t launch_gemm_3xtf32(const float* a, const float* b, float* c, int m, int n, int k,
                               cudaStream_t stream);
