#pragma once
#include <cuda_runtime.h>
void launch_transpose(const float* in, float* out, int rows, int cols, cudaStream_t stream);
void upload_bias(const float* host, int n, cudaStream_t stream);
