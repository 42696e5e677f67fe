#pragma once
#include <cstdint>
#include <cuda_runtime.h>

// The solution's kernel silu_span(const float* x, float* y, int64_t n):
// y[i] = x[i] / (1 + exp(-x[i])) for i < n, float4 when x and y are 16-byte
// aligned, a grid-stride loop that works with any grid. Its address, for a
// graph kernel node.
void* silu_span_kernel();

// The fixed launch shape of a silu_span node (independent of n, so a node's
// parameters can be repointed at any span).
constexpr unsigned kSiluSpanBlocks = 2048, kSiluSpanThreads = 256;
