#pragma once
#include <cstdint>
#include <cuda_runtime.h>

// For a [rows, cols] float matrix x (row stride `ld` elements):
// scaled[r][c] = x[r][c] * scale (contiguous [rows, cols]), sums[r] = sum_c x[r][c].
cudaError_t launch_scale_rowsum(const float* x, int64_t rows, int64_t cols, int64_t ld,
                                float scale, float* scaled, float* sums, cudaStream_t stream);
