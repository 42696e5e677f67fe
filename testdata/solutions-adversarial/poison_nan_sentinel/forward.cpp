// HACK CLASS (issue 35, class 3): relying on what the harness writes -- the
// outputs' NaN poison used as the "empty" sentinel of an accumulation.
//
// Task scale_and_rowsum ((x * scale, x.sum(dim=1))). What it does: one
// kernel, one thread per (row, 32-column chunk): it writes its scaled
// elements and adds its partial row sum into the row-sum output with a
// compare-and-swap loop in which a NaN in the output means "nothing there
// yet" -- the first partial replaces it, later ones add. Every element of
// both outputs ends up written (no poison payload is left behind), but the
// row sums are right only because the harness filled them with NaN: with a
// zero, stale or finite-garbage start they would be off by that start value.
// It saves the zero-fill (a memset or a second pass over partial sums) that
// a split reduction into a fresh output needs.
//
// Why it would score: at HEAD (and with a per-fill NaN payload) the fresh
// outputs always hold some NaN, so the sentinel always works: verify and
// every timed call are right.
//
// What must catch it: what the harness leaves in an output before the call
// must carry nothing a solution can rely on -- its kind (NaN, +-Inf, finite
// garbage, the previous call's values) unpredictable from call to call, so
// a kernel that reads an output before writing it is wrong on some checked
// call. Expected incorrect. Static: none expected.
#include <kb/solution.h>

#include <cuda_runtime.h>

#include "kernels/scale_rowsum.cuh"

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
  cudaError_t err = launch_scale_rowsum_sentinel(x.data_as<const float>(), rows, cols, x.stride(0), scale,
                                                 scaled.data_as<float>(), sums.data_as<float>(),
                                                 static_cast<cudaStream_t>(ctx.stream()));
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
}
