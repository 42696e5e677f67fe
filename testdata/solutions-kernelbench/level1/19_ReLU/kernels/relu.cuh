#pragma once
#include <cuda_runtime.h>

#include <cstdint>

// y[i] = relu(x[i]) for n contiguous floats.
cudaError_t launch_relu(const float* x, float* y, int64_t n, cudaStream_t stream);
