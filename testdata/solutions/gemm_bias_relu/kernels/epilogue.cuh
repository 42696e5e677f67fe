#pragma once

#include <cuda_runtime.h>

// y[i, j] = max(y[i, j] + bias[j], 0) in place, on `stream`.
void launch_bias_relu(float* y, const float* bias, int rows, int cols, cudaStream_t stream);
