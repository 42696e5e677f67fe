// y = gelu(x) (tanh approximation) for any contiguous float32 tensor, with
// 128-bit vectorised loads and stores.
#include <cuda_runtime.h>

#include <kb/solution.h>

#include "kernels/gelu.cuh"

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);
  if (!x.is_contiguous() || x.dtype != KB_FLOAT32) {
    ctx.fail("expects a contiguous float32 input");
    return;
  }
  kb::Tensor y = ctx.output(0, x.ndim, x.sizes, KB_FLOAT32);
  launch_gelu(x.data_as<const float>(), y.data_as<float>(), x.numel(),
              static_cast<cudaStream_t>(ctx.stream()));
}
