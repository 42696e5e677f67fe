#pragma once
#include <cstdint>
#include <cuda_runtime.h>

// y = log(x), z = y / (x - 1), IEEE special values included.
cudaError_t launch_logs(const float* x, float* y, float* z, int64_t n, cudaStream_t stream);
