#pragma once
#include <cstdint>

#include <cuda_runtime.h>

__global__ void relu_kernel(const float* x, float* y, int64_t n);
cudaError_t launch_relu(const float* x, float* y, int64_t n, cudaStream_t stream);
