// Legitimate: task nonfinite_log, y = log(x) and z = log(x) / (x - 1) in one
// elementwise kernel, with the infinities and NaNs IEEE arithmetic gives
// (log(0) = -inf, -inf / -1 = +inf, 0 / 0 = NaN, log(-1) = NaN).
// Expected: no static finding, verify ok (every non-finite value matches
// the reference's exactly), kbprof ok: the control for the exact
// non-finite comparison (issue 17, class 7).
#include <kb/solution.h>

#include <cuda_runtime.h>

#include "kernels/logs.cuh"

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);
  if (ctx.failed()) return;
  kb::Tensor y = ctx.output(0, {x.size(0), x.size(1)});
  kb::Tensor z = ctx.output(1, {x.size(0), x.size(1)});
  if (ctx.failed()) return;
  cudaError_t err = launch_logs(x.data_as<const float>(), y.data_as<float>(), z.data_as<float>(), x.numel(),
                                static_cast<cudaStream_t>(ctx.stream()));
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
}
