#pragma once
#include <cstdint>
#include <cuda_runtime.h>

// x[r, :] *= scale in place; out[r, :] = x[r, :]; sums[r] = sum(x[r, :]) / scale.
cudaError_t launch_scale_inplace_rowsum(float* x, float scale, float* out, float* sums,
                                        int64_t rows, int64_t cols, cudaStream_t stream);
