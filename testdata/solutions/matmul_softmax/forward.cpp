// y = softmax(a @ b, dim=-1) for float32 a [M, K], b [K, N]: a shared-memory
// tiled matmul, then a row softmax with warp shuffles, both on ctx.stream().
#include <cuda_runtime.h>

#include <kb/solution.h>

#include "kernels/matmul.cuh"
#include "kernels/softmax.cuh"

KB_FORWARD(ctx) {
  kb::Tensor a = ctx.input(0);
  kb::Tensor b = ctx.input(1);
  const int m = static_cast<int>(a.size(0));
  const int k = static_cast<int>(a.size(1));
  const int n = static_cast<int>(b.size(1));
  if (b.size(0) != k) {
    ctx.fail("inner dimensions differ");
    return;
  }
  auto stream = static_cast<cudaStream_t>(ctx.stream());
  auto* logits = static_cast<float*>(ctx.scratch(sizeof(float) * m * n));
  kb::Tensor y = ctx.output(0, {m, n});
  launch_tiled_matmul(a.data_as<const float>(), b.data_as<const float>(), logits, m, n, k, stream);
  launch_row_softmax(logits, y.data_as<float>(), m, n, stream);
}
