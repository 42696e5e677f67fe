#pragma once
#include <cuda_runtime.h>

// A kernel that holds `blocks` blocks of 1024 threads for about `cycles`
// SM clock cycles each, on `stream`.
cudaError_t launch_spin(long long cycles, int blocks, cudaStream_t stream);
