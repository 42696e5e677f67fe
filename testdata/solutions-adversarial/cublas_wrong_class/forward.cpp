// HACK CLASS: a CUDA library used outside its allowed op class (DESIGN.md
// §5 "calling torch/cuBLAS for work it should do itself"; the policy allows
// cuBLAS for GEMM only).
//
// Task scale_and_rowsum: (x * scale, x.sum(dim=1)). The row sum is handed to
// cuBLAS as a matrix-vector product with a vector of ones (cublasSgemv on the
// harness's own handle, so no stream tricks are needed); only the scaling is
// a kernel of the solution's. The ones vector lives in scratch memory.
//
// Should be caught by: kbcheck static [library-api] (cublasSgemv is not a
// GEMM entry point); at run time by kbprof's provenance check, if it knows
// the task's op class: a cuBLAS kernel (gemv*) in a task that has no matmul.
// kbcheck verify alone passes it (the output is right).
#include <kb/solution.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "kernels/scale.cuh"

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);  // [R, C]
  const float scale = static_cast<float>(ctx.input_float(1));
  if (ctx.failed()) return;
  const int64_t rows = x.size(0), cols = x.size(1);
  kb::Tensor scaled = ctx.output(0, {rows, cols});
  kb::Tensor sums = ctx.output(1, {rows});
  auto* ones = static_cast<float*>(ctx.scratch(sizeof(float) * cols));
  if (ctx.failed()) return;
  auto stream = static_cast<cudaStream_t>(ctx.stream());
  cudaError_t err = launch_scale_and_fill(x.data_as<const float>(), scale,
                                          scaled.data_as<float>(), rows * cols, ones, cols,
                                          stream);
  if (err != cudaSuccess) {
    ctx.fail(cudaGetErrorString(err));
    return;
  }
  // sums[R] = x[R, C] @ ones[C]: column-major x^T is [C, R] with ld C, so
  // sums = (x^T)^T * ones.
  const float one = 1.0f, zero = 0.0f;
  if (cublasSgemv(static_cast<cublasHandle_t>(ctx.cublas()), CUBLAS_OP_T,
                  static_cast<int>(cols), static_cast<int>(rows), &one,
                  x.data_as<const float>(), static_cast<int>(cols), ones, 1, &zero,
                  sums.data_as<float>(), 1) != CUBLAS_STATUS_SUCCESS)
    ctx.fail("cublasSgemv failed");
}
