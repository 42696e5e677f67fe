#pragma once
#include <cuda_runtime.h>

#include <cstdint>

// Row softmax of a contiguous row-major [rows, cols] matrix.
cudaError_t launch_softmax_rows(const float* x, float* y, int64_t rows, int64_t cols, cudaStream_t stream);
