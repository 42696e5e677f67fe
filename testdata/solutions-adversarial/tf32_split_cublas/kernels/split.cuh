#pragma once
#include <cstdint>
#include <cuda_runtime.h>

// hi[i] = v rounded to TF32 (10 mantissa bits, to nearest), lo[i] = v - hi[i]
// rounded to TF32, for v = in[i]: hi + lo carries ~21 of fp32's 24 bits.
cudaError_t launch_split_tf32(const float* in, float* hi, float* lo, int64_t n, cudaStream_t stream);
