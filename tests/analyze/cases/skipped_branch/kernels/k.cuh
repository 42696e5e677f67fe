#pragma once
#include <cuda_runtime.h>
cudaError_t launch_k(float* y, int n, cudaStream_t s);
