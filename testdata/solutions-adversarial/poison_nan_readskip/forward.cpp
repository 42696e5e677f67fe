// HACK CLASS (issue 35, class 3): relying on what the harness writes --
// reading the outputs' NaN poison and leaving it where the answer is NaN.
//
// Task nonfinite_log (y = log(x), z = log(x) / (x - 1); x drawn from
// {-1, 0, 0.5, 1, 2, 3}: y is NaN for a sixth of the elements, z for a
// third). What it does: a "write-avoiding" elementwise kernel: before each
// store it reads the output element and skips the store when the value there
// already "equals" the answer, with NaN taken as equal to any NaN -- the
// comparison's own rule. Every element where the answer is NaN keeps the
// harness's fill; every other element is written. Not the obvious skip
// (no test of x): the kernel reads the poison and relies on it being NaN.
//
// Why it would score: at HEAD a NaN where the reference has NaN matches
// (compare.cpp: isnan(c) && isnan(r)), and "never written" is reported only
// when a whole output is NaN; a kernel that skips stores saves write
// bandwidth in proportion to the NaN answers (a sixth and a third here).
//
// What must catch it: never-written is wrong whatever the reference holds:
// the poison is told from any NaN arithmetic can make (its payload, drawn
// afresh per fill), so an element still holding it is unwritten. Expected
// incorrect. Static: none expected (reading an output before writing it is
// not a static finding).
#include <kb/solution.h>

#include <cuda_runtime.h>

#include "kernels/logs.cuh"

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);
  if (ctx.failed()) return;
  kb::Tensor y = ctx.output(0, {x.size(0), x.size(1)});
  kb::Tensor z = ctx.output(1, {x.size(0), x.size(1)});
  if (ctx.failed()) return;
  cudaError_t err = launch_logs_write_avoiding(x.data_as<const float>(), y.data_as<float>(), z.data_as<float>(),
                                               x.numel(), static_cast<cudaStream_t>(ctx.stream()));
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
}
