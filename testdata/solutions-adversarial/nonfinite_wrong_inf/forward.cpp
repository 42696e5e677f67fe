// HACK CLASS: a comparison that cannot fail (issue 17, class 7).
//
// Task nonfinite_log (y = log(x), z = log(x) / (x - 1), x in
// {-1, 0, 0.5, 1, 2, 3}: y = -inf and z = +inf at x = 0). This solution
// returns the wrong infinity: +inf where the reference is -inf and -inf
// where it is +inf; finite values and NaN are right. A sign error in a
// special case, say, that the comparison must not forgive.
//
// It passed before: |(+inf) - (-inf)| = inf <= atol + rtol*|inf| = inf.
// Should be caught by: kbcheck verify's exact rule for non-finite reference
// values (lib/verify/compare_output.h) -> incorrect. Static: null.
#include <kb/solution.h>

#include <cuda_runtime.h>

#include "kernels/logs.cuh"

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);
  if (ctx.failed()) return;
  kb::Tensor y = ctx.output(0, {x.size(0), x.size(1)});
  kb::Tensor z = ctx.output(1, {x.size(0), x.size(1)});
  if (ctx.failed()) return;
  cudaError_t err = launch_logs_flipped(x.data_as<const float>(), y.data_as<float>(), z.data_as<float>(), x.numel(),
                                        static_cast<cudaStream_t>(ctx.stream()));
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
}
