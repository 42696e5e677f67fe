#pragma once
#include <cuda_runtime.h>

// y[i, j] = leaky_relu((y[i, j] + bias[j]) * scale, slope), in place.
void launch_bias_scale_leaky(float* y, const float* bias, int m, int n, float scale, float slope,
                             cudaStream_t stream);
