#pragma once
#include <cuda_runtime.h>

// h[i, j] = sigmoid(h[i, j] + bias[j]) in place over a row-major [m, n] matrix.
cudaError_t launch_bias_sigmoid(float* h, const float* bias, int m, int n, cudaStream_t stream);
