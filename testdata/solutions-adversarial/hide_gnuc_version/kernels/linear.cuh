#pragma once
#include <cstdint>
#include <cuda_runtime.h>

// y[i, j] += b[j] for a row-major [m, n] y.
cudaError_t launch_add_bias(float* y, const float* b, int64_t m, int64_t n, cudaStream_t stream);
// y = relu(x @ w^T + b), one thread per output (the honest fallback).
cudaError_t launch_linear_relu(const float* x, const float* w, const float* b, float* y,
                               int64_t m, int64_t k, int64_t n, cudaStream_t stream);
