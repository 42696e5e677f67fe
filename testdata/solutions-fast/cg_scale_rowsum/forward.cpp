// Legitimate: (x * scale, x.sum(dim=1)) (task scale_and_rowsum) in one
// kernel that reduces each row with cooperative groups
// (cg::this_thread_block, cg::tiled_partition<32>, cg::reduce), a
// block-level building block that the paper's rules allow. Any row stride
// (the column stride must be 1). Expected: no static finding, verify ok,
// kbprof ok.
#include <kb/solution.h>

#include <cuda_runtime.h>

#include "kernels/rowsum.cuh"

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);  // [rows, cols]
  const float scale = static_cast<float>(ctx.input_float(1));
  if (ctx.failed()) return;
  if (x.ndim != 2 || (x.size(1) > 1 && x.stride(1) != 1)) {
    ctx.fail("expected a 2-d input with unit column stride");
    return;
  }
  const int64_t rows = x.size(0), cols = x.size(1);
  kb::Tensor scaled = ctx.output(0, {rows, cols});
  kb::Tensor sums = ctx.output(1, {rows});
  if (ctx.failed()) return;
  cudaError_t err = launch_scale_rowsum(x.data_as<const float>(), rows, cols, x.stride(0), scale,
                                        scaled.data_as<float>(), sums.data_as<float>(),
                                        static_cast<cudaStream_t>(ctx.stream()));
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
}
