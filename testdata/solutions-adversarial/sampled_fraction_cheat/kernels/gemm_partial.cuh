#pragma once
#include <cuda_runtime.h>

// C[M, N] = scale * A[:, 0:k_used] * B[0:k_used, :], A row-major with row
// stride lda, B row-major [K, N]; k_used = K, scale = 1 is the honest GEMM.
cudaError_t launch_sgemm_partial(const float* a, const float* b, float* c, int m, int n,
                                 int k_used, int lda, float scale, cudaStream_t stream);
