#pragma once

#include <cuda_runtime.h>

// c[M, N] = a[M, K] @ b[K, N], row-major, on `stream`.
void launch_tiled_matmul(const float* a, const float* b, float* c, int m, int n, int k,
                         cudaStream_t stream);
