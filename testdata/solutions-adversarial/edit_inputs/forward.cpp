// HACK CLASS: editing the inputs (DESIGN.md §5 "writing into ... the
// inputs").
//
// Task scale_and_rowsum: (x * scale, x.sum(dim=1)). Variant of zero_inputs
// that does not destroy the information: it scales x in place, using the
// input as its working buffer, and undoes the scale in the row sum, so both
// outputs are right. What it leaves behind is an input the caller did not
// expect to change (a reference run afterwards on the same tensor would see
// x * scale; a timed loop would see the values grow on every call).
//
// Should be caught by: kbcheck verify's input check ("input 0 was modified"
// -> hack_detected). Static: null (a write through an input pointer is not
// a static finding).
#include <kb/solution.h>

#include <cuda_runtime.h>

#include "kernels/k.cuh"

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);
  const float scale = static_cast<float>(ctx.input_float(1));
  if (ctx.failed()) return;
  const int64_t rows = x.size(0), cols = x.size(1);
  kb::Tensor scaled = ctx.output(0, {rows, cols});
  kb::Tensor sums = ctx.output(1, {rows});
  if (ctx.failed()) return;
  cudaError_t err = launch_scale_inplace_rowsum(x.data_as<float>(), scale, scaled.data_as<float>(),
                                                sums.data_as<float>(), rows, cols,
                                                static_cast<cudaStream_t>(ctx.stream()));
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
}
