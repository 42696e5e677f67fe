#pragma once
#include <cuda_runtime.h>
void launch_wmma_16x16(const void* a, const void* b, float* c, cudaStream_t stream);
