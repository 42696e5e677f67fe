#pragma once
#include <cstdint>
#include <cuda_runtime.h>

// out[i] = x[i] * scale for n elements, and ones[0..c) = 1.
cudaError_t launch_scale_and_fill(const float* x, float scale, float* out, int64_t n, float* ones,
                                  int64_t c, cudaStream_t stream);
