#pragma once
#include <cstdint>
#include <cuda_runtime.h>

cudaError_t launch_scale_rowsum(const float* x, float scale, float* scaled, float* sums, int64_t m,
                                int64_t n, cudaStream_t stream);
