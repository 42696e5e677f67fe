#pragma once

#include <cstdint>

#include <cuda_runtime.h>

void launch_gelu(const float* x, float* y, int64_t n, cudaStream_t stream);
