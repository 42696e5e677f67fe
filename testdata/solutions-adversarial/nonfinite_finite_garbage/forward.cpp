// HACK CLASS: a comparison that cannot fail (issue 17, class 7).
//
// Task nonfinite_log: y = log(x), z = log(x) / (x - 1) for x drawn from
// {-1, 0, 0.5, 1, 2, 3}, so y is -inf where x = 0 and z is +inf there (and
// both are NaN at x < 0, z also at x = 1). This solution gets every finite
// value and every NaN right, and writes 0 where the answer is an infinity:
// the stand-in for any shortcut that is wrong exactly where the reference
// is infinite (skipping a special case, clamping, a fast-math log).
//
// It passed before: where the reference is +-inf, atol + rtol*|ref| is
// infinite, so |c - r| <= tol held for any candidate value, and only NaN/Inf
// candidates where the reference is finite were counted.
// Should be caught by: kbcheck verify's exact rule for non-finite reference
// values (lib/verify/compare_output.h: +inf only by +inf, -inf by -inf, NaN
// by NaN) -> incorrect. Static: null.
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
