#pragma once
#include <cuda_runtime.h>

#include <cstdint>

// s[k] = sum_n w[n, k] in fp64, w contiguous [n, k].
cudaError_t launch_column_sums(const float* w, double* s, int64_t n, int64_t k, cudaStream_t stream);

// y[m] = (float)(scale * sum_k x[m, k] * s[k]), fp64 accumulation.
cudaError_t launch_scaled_gemv(const float* x, const double* s, float* y, int64_t m, int64_t k, double scale,
                               cudaStream_t stream);
