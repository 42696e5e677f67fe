#pragma once
#include <cstdint>
#include <cuda_runtime.h>

// y = log(x), z = y / (x - 1), except that every infinity is replaced by 0
// (a finite value where the true result is +-inf).
cudaError_t launch_logs(const float* x, float* y, float* z, int64_t n, cudaStream_t stream);
