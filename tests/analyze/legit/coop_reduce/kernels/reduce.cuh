#pragma once
#include <cuda_runtime.h>
void launch_row_sum(const float* x, float* y, int rows, int cols, int blocks, int threads, cudaStream_t s);
