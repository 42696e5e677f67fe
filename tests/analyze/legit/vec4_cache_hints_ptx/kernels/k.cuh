#pragma once
#include <cstdint>

#include <cuda_runtime.h>

cudaError_t launch_scale4(const float* x, float* y, int64_t n, cudaStream_t stream);
cudaError_t launch_tf32_tile(const float* a, const float* b, float* c, cudaStream_t stream);
cudaError_t launch_row_sum(const float* x, float* y, int rows, int cols, cudaStream_t stream);
cudaError_t launch_surface_copy(cudaSurfaceObject_t dst, const float* x, int w, int h, cudaStream_t stream);
