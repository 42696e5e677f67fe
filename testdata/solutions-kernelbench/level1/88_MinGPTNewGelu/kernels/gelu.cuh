#pragma once
#include <cuda_runtime.h>

#include <cstdint>

// y[i] = 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))), n contiguous floats.
cudaError_t launch_new_gelu(const float* x, float* y, int64_t n, cudaStream_t stream);
