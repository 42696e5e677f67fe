// Correct, on CUDA: (x * scale, x.sum(dim=1)) -- two outputs and a scalar input.
#include <kb/solution.h>

#include <cuda_runtime.h>

#include "kernels/scale_rowsum.cuh"

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);
  const float scale = static_cast<float>(ctx.input_float(1));
  if (ctx.failed()) return;
  const int64_t m = x.size(0), n = x.size(1);
  kb::Tensor scaled = ctx.output(0, {m, n});
  kb::Tensor sums = ctx.output(1, {m});
  if (ctx.failed()) return;
  cudaError_t err = launch_scale_rowsum(x.data_as<float>(), scale, scaled.data_as<float>(),
                                        sums.data_as<float>(), m, n,
                                        static_cast<cudaStream_t>(ctx.stream()));
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
}
