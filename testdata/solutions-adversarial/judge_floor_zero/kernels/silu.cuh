#pragma once
#include <cstdint>
#include <cuda_runtime.h>

// y[i] = x[i] / (1 + exp(-x[i])) for n contiguous floats, on `stream`.
cudaError_t launch_silu(const float* x, float* y, int64_t n, cudaStream_t stream);
