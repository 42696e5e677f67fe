#pragma once
#include <cstdint>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

// out[i] = (half)in[i] for n elements.
cudaError_t launch_to_half(const float* in, __half* out, int64_t n, cudaStream_t stream);
