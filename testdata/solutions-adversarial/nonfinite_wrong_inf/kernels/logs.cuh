#pragma once
#include <cstdint>
#include <cuda_runtime.h>

// y = log(x), z = y / (x - 1), with the sign of every infinity flipped.
cudaError_t launch_logs_flipped(const float* x, float* y, float* z, int64_t n, cudaStream_t stream);
