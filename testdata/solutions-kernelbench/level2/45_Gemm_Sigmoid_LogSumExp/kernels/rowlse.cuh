#pragma once
#include <cuda_runtime.h>

#include <cstdint>

// out[r] = post(logsumexp_j(pre(z[r, j] + bias[j]))) over a contiguous
// row-major [m, n] matrix z; pre and post as in rowlse.cu.
cudaError_t launch_row_lse(const float* z, const float* bias, float* out, int64_t m, int64_t n, cudaStream_t stream);
