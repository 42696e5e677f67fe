#pragma once
#include <cuda_runtime.h>

#include <cstdint>

// Blocks of the first pass (and fp64 partials it writes).
int mse_blocks();

// y[0] = mean((p - t)^2) over n contiguous floats; partials: `blocks` doubles.
cudaError_t launch_mse(const float* p, const float* t, int64_t n, float* y, double* partials, int blocks,
                       cudaStream_t stream);
