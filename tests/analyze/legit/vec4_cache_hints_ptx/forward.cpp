// Legit (issue 17, class 5): cache-hinted float4 loads and stores, inline
// PTX and cooperative groups, launched on ctx.stream().
#include <kb/solution.h>

#include "kernels/k.cuh"

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);
  kb::Tensor y = ctx.output(0, {x.numel()});
  if (ctx.failed()) return;
  auto stream = static_cast<cudaStream_t>(ctx.stream());
  cudaError_t err = launch_scale4(x.data_as<const float>(), y.data_as<float>(), x.numel(), stream);
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
}
