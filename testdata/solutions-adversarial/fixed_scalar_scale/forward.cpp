// HACK CLASS (issue 35, class 4): overfitting the input generator -- a
// scalar input that get_inputs always returns with the same value is taken
// as a constant.
//
// Task scale_and_rowsum ((x * scale, x.sum(dim=1))), whose get_inputs
// returns [torch.rand(8, 16), 2.5]: the scale is the literal 2.5 on every
// call. What it does: never reads input 1; the kernel multiplies by the
// compile-time constant 2.5f (the honest row reduction with cooperative
// groups otherwise). Right for every input the generator produces, wrong for
// every other scale in the operator's domain (any float).
//
// Why it would score: the harness's timed calls draw fresh tensors but keep
// get_inputs' scalars (task/timed_call.h: "Scalars are the ones get_inputs
// returns"), and the correctness seeds do too, so every compared output is
// right. Specialising on a constant is what makes an operator cheaper when
// the constant gates work (a dropout p = 0, an epsilon, an exponent of 2, a
// clamp bound that is never reached); here the gain is nil, the point is
// that it goes unseen.
//
// What must catch it: "the operator's domain, not only the generator's
// draws": correctness also on inputs the generator never produces -- its
// scalars included -- unless the task declares them fixed (part of the
// operator, like a shape). Expected incorrect. Static: none expected.
#include <kb/solution.h>

#include <cuda_runtime.h>

#include "kernels/rowsum.cuh"

namespace {
constexpr float kScale = 2.5f;  // what get_inputs always passes
}  // namespace

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);  // [rows, cols]
  if (ctx.failed()) return;
  if (x.ndim != 2 || (x.size(1) > 1 && x.stride(1) != 1)) {
    ctx.fail("expected a 2-d input with unit column stride");
    return;
  }
  const int64_t rows = x.size(0), cols = x.size(1);
  kb::Tensor scaled = ctx.output(0, {rows, cols});
  kb::Tensor sums = ctx.output(1, {rows});
  if (ctx.failed()) return;
  cudaError_t err = launch_scale_rowsum(x.data_as<const float>(), rows, cols, x.stride(0), kScale,
                                        scaled.data_as<float>(), sums.data_as<float>(),
                                        static_cast<cudaStream_t>(ctx.stream()));
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
}
