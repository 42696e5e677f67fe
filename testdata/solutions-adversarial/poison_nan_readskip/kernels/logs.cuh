#pragma once
#include <cuda_runtime.h>
#include <cstdint>

// y = log(x), z = log(x) / (x - 1), skipping every store whose target
// already holds what would be stored (NaN counting as equal to NaN).
cudaError_t launch_logs_write_avoiding(const float* x, float* y, float* z, int64_t n, cudaStream_t stream);
