#pragma once
#include <cstdint>
#include <cuda_runtime.h>

// y[r, c] = max(y[r, c] + bias[c], 0) for a row-major [rows, cols] y.
cudaError_t launch_bias_relu(float* y, const float* bias, int64_t rows, int64_t cols,
                             cudaStream_t stream);
