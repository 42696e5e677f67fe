#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

// How many chunks each row is split into, and the scratch the partials need.
int64_t layernorm_chunks(int64_t cols);
size_t layernorm_scratch_bytes(int64_t rows, int64_t chunks);

// y[r, :] = (x[r, :] - mean_r) * rstd_r * w + b over contiguous [rows, cols].
cudaError_t launch_layernorm(const float* x, const float* w, const float* b, float* y, int64_t rows, int64_t cols,
                             int64_t chunks, double eps, void* partials, cudaStream_t stream);
