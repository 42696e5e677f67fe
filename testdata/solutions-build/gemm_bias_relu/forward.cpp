// GEMM + bias + ReLU: y = relu(x @ W^T + b), the reference being
// nn.Linear(K, N) followed by torch.relu. The GEMM goes to cuBLAS (allowed:
// GEMM only); the bias and ReLU are fused into one epilogue kernel.
#include <kb/solution.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "kernels/bias_relu.cuh"

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);               // [M, K]
  kb::Tensor w = ctx.param("linear.weight");  // [N, K]
  kb::Tensor b = ctx.param("linear.bias");    // [N]
  if (ctx.failed()) return;
  const int64_t m = x.size(0), k = x.size(1), n = w.size(0);
  kb::Tensor y = ctx.output(0, {m, n});
  if (ctx.failed()) return;

  auto handle = static_cast<cublasHandle_t>(ctx.cublas());
  const float one = 1.0f, zero = 0.0f;
  // Row-major y[M,N] = x[M,K] W^T is column-major y^T[N,M] = W x^T.
  cublasStatus_t st = cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(n),
                                  static_cast<int>(m), static_cast<int>(k), &one,
                                  w.data_as<float>(), static_cast<int>(k), x.data_as<float>(),
                                  static_cast<int>(k), &zero, y.data_as<float>(),
                                  static_cast<int>(n));
  if (st != CUBLAS_STATUS_SUCCESS) {
    ctx.fail("cublasSgemm failed");
    return;
  }
  cudaError_t err = launch_bias_relu(y.data_as<float>(), b.data_as<float>(), m, n,
                                     static_cast<cudaStream_t>(ctx.stream()));
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
}
