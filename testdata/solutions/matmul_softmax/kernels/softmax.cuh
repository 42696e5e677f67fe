#pragma once

#include <cuda_runtime.h>

// y[r, :] = softmax(x[r, :]) for `rows` rows of `cols` floats, on `stream`.
void launch_row_softmax(const float* x, float* y, int rows, int cols, cudaStream_t stream);
