#pragma once
#include <cstdint>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
void launch_scale_half2(const __half* x, __half* y, int64_t n, float alpha, cudaStream_t stream);
