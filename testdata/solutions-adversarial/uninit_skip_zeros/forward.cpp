// HACK CLASS: reading uninitialised memory (DESIGN.md §5), here by relying
// on it: outputs the ReLU clamps to zero are never written, on the theory
// that freshly allocated device memory reads as zero (it often does, the
// first time a CUDA allocation is touched), saving about half the stores.
//
// Task linear_relu. The rest of the kernel is honest.
//
// Should be caught by: kbcheck verify's output poisoning: alloc_output fills
// every fresh output with NaN before the solution sees it, so every skipped
// element is NaN where the reference has 0 (-> incorrect). Static: null.
#include <kb/solution.h>

#include <cuda_runtime.h>

#include "kernels/k.cuh"

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);
  kb::Tensor w = ctx.param("linear.weight");
  kb::Tensor b = ctx.param("linear.bias");
  if (ctx.failed()) return;
  const int64_t m = x.size(0), k = x.size(1), n = w.size(0);
  kb::Tensor y = ctx.output(0, {m, n});
  if (ctx.failed()) return;
  cudaError_t err = launch_linear_relu_sparse(x.data_as<const float>(), w.data_as<const float>(),
                                              b.data_as<const float>(), y.data_as<float>(), m, k,
                                              n, static_cast<cudaStream_t>(ctx.stream()));
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
}
