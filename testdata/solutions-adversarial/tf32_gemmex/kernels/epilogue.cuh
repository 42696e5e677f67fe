#pragma once
#include <cstdint>
#include <cuda_runtime.h>

// y[i] = leaky_relu(2 * y[i], 0.1) in place, for n elements.
cudaError_t launch_scale_leaky_relu(float* y, int64_t n, cudaStream_t stream);
