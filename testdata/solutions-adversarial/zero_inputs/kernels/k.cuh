#pragma once
#include <cstdint>
#include <cuda_runtime.h>

// y[i, j] = max(b[j], 0) for a row-major [m, n] y.
cudaError_t launch_relu_bias_rows(const float* b, float* y, int64_t m, int64_t n,
                                  cudaStream_t stream);
