#pragma once
#include <cstdint>
#include <cuda_runtime.h>

// scaled[r][c] = x[r][c] * scale; sums[r] = sum_c x[r][c], accumulated into
// `sums` as it is handed over (no initialisation pass).
cudaError_t launch_scale_rowsum_sentinel(const float* x, int64_t rows, int64_t cols, int64_t ld, float scale,
                                         float* scaled, float* sums, cudaStream_t stream);
