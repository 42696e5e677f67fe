#pragma once
#include <cuda_runtime.h>
#include <cstdint>

// y = log(x), z = log(x) / (x - 1) by a table of the generator's six values.
cudaError_t launch_logs_table(const float* x, float* y, float* z, int64_t n, cudaStream_t stream);
