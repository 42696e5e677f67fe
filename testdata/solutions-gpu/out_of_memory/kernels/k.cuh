#pragma once
#include <cstdint>
#include <cuda_runtime.h>

cudaError_t launch(const float* x, const float* w, const float* b, float* y, int64_t m, int64_t k,
                   int64_t n, cudaStream_t stream);
