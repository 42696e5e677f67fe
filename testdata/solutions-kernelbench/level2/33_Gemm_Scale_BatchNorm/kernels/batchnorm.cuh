#pragma once
#include <cuda_runtime.h>

// In place over a row-major [m, n] matrix y: z = (y + bias) * scale per column,
// then training-mode batch norm over the m rows of each column:
// y = (z - mean) / sqrt(var_biased + eps) * gamma + beta.
cudaError_t launch_scale_batchnorm_train(float* y, const float* bias, const float* scale, const float* gamma,
                                         const float* beta, int m, int n, double eps, cudaStream_t stream);
