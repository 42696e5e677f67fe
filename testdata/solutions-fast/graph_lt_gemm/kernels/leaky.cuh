#pragma once
#include <cstdint>
#include <cuda_runtime.h>

// The solution's kernel leaky_relu_inplace(float* y, int64_t n, float slope):
// y[i] = y[i] > 0 ? y[i] : slope * y[i], a grid-stride loop that works with
// any grid. Its address, for a graph kernel node.
void* leaky_relu_kernel();

// The fixed launch shape of its graph node.
constexpr unsigned kLeakyBlocks = 512, kLeakyThreads = 256;
