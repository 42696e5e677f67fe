#include <cuda_runtime.h>

#include <kb/solution.h>

#include "kernels/wmma.cuh"

KB_FORWARD(ctx) {
  kb::Tensor a = ctx.input(0), b = ctx.input(1);
  kb::Tensor c = ctx.output(0, {16, 16});
  launch_wmma_16x16(a.data, b.data, c.data_as<float>(), static_cast<cudaStream_t>(ctx.stream()));
}
