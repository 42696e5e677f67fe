// KernelBench level1/23_Softmax: y = softmax(x, dim=1) for x [4096, 393216]
// fp32 (1.5 MB rows). Technique: one block per row, two passes instead of
// eager's three reads: an online max+sum pass (Milakov & Gimelshein 2018:
// each thread keeps a running (max, sum) and rescales the sum when the max
// grows), a warp-shuffle + shared-memory merge of the (max, sum) pairs, then
// one pass writing exp(x - max) / sum, all with 128-bit loads. Exact: full
// fp32 expf (no __expf), the max subtracted before exp as torch does, one
// IEEE division per element; sums are fp32 like torch's.
#include <kb/solution.h>

#include <cuda_runtime.h>

#include "kernels/softmax.cuh"

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);  // [rows, cols]
  if (ctx.failed()) return;
  if (x.ndim != 2 || !x.is_contiguous() || x.dtype != KB_FLOAT32) {
    ctx.fail("expected a contiguous float32 [rows, cols] input");
    return;
  }
  kb::Tensor y = ctx.output(0, {x.size(0), x.size(1)});
  if (ctx.failed()) return;
  cudaError_t err = launch_softmax_rows(x.data_as<const float>(), y.data_as<float>(), x.size(0), x.size(1),
                                        static_cast<cudaStream_t>(ctx.stream()));
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
}
