// Legitimate: C = A @ B (task matmul_2048) with fp32 accuracy on TF32 tensor
// cores ("3xTF32": each fp32 operand split into a TF32 big part and a TF32
// residual, three m16n8k8 products per k-step, the big one summed outside
// the tensor core in round-to-nearest fp32). Reduced-precision *inputs* to
// the tensor core, fp32-accurate *result*: kernels/gemm_3xtf32.cu has the
// error analysis. Expected accuracy at K = 2048 (N(0,1) operands): rms error
// ~1.4e-5 against exact, as an fp32 SGEMM, and no output outside
// atol = rtol = 1e-4 of an fp32 reference (emulated; not yet run on a GPU).
// Expected: no static finding, verify ok under the strict fp32 contract
// (1e-4), kbprof ok. A precision rule that judged kernels by the TF32 in
// their instructions rather than by their results would refuse it: this is
// the control that proves it does not.
#include <kb/solution.h>

#include <cuda_runtime.h>

#include "kernels/gemm_3xtf32.cuh"

KB_FORWARD(ctx) {
  kb::Tensor a = ctx.input(0);  // [M, K]
  kb::Tensor b = ctx.input(1);  // [K, N]
  if (ctx.failed()) return;
  if (!a.is_contiguous() || !b.is_contiguous() || a.size(1) != b.size(0)) {
    ctx.fail("expected contiguous A[M, K] and B[K, N]");
    return;
  }
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  kb::Tensor c = ctx.output(0, {m, n});
  if (ctx.failed()) return;
  cudaError_t err = launch_gemm_3xtf32(a.data_as<const float>(), b.data_as<const float>(),
                                       c.data_as<float>(), static_cast<int>(m),
                                       static_cast<int>(n), static_cast<int>(k),
                                       static_cast<cudaStream_t>(ctx.stream()));
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
}
