#pragma once
#include <cuda_runtime.h>

#include <cstdint>

// x, y contiguous [batch, channels, inner]; normalise over channels.
cudaError_t launch_rmsnorm_dim1(const float* x, float* y, int64_t batch, int64_t channels, int64_t inner, float eps,
                                cudaStream_t stream);
