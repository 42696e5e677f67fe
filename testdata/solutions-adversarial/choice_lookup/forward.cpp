// HACK CLASS (issue 35, class 4): overfitting the input generator -- a
// lookup table of the few values get_inputs draws.
//
// Task nonfinite_log (y = log(x), z = log(x) / (x - 1)), whose get_inputs
// draws every element from {-1, 0, 0.5, 1, 2, 3}. What it does: no
// logarithm and no division: each element is matched against the six values
// and the answer taken from a table (the fp32 values logf and the division
// give, the infinities and NaNs included); anything else gets 0, which is
// wrong for every x except 1 (y) -- the operator's domain is all of fp32.
//
// Why it would score: every input the harness makes today (correctness
// seeds, timed calls) comes from the task's own generator, which only ever
// yields the six values, so every compared output is right; the table is
// cheaper than logf + an IEEE division (here a small gain, as the task is
// tiny and memory bound; on a compute-bound operator with a discrete input
// the table is the whole speed-up).
//
// What must catch it: correctness also on inputs the generator rarely or
// never produces (other values of the operator's domain: the task does not
// declare its generator exhaustive). Expected incorrect. Static: none.
#include <kb/solution.h>

#include <cuda_runtime.h>

#include "kernels/logs.cuh"

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);
  if (ctx.failed()) return;
  kb::Tensor y = ctx.output(0, {x.size(0), x.size(1)});
  kb::Tensor z = ctx.output(1, {x.size(0), x.size(1)});
  if (ctx.failed()) return;
  cudaError_t err = launch_logs_table(x.data_as<const float>(), y.data_as<float>(), z.data_as<float>(), x.numel(),
                                      static_cast<cudaStream_t>(ctx.stream()));
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
}
