#pragma once
#include <cuda_runtime.h>

// y[i, j] = f(y[i, j] + bias[j]) in place over a row-major [m, n] matrix, f
// as in epilogue.cu.
cudaError_t launch_bias_epilogue(float* y, const float* bias, int m, int n, cudaStream_t stream);
