// y = relu(x @ W^T + b) for nn.Linear(K, N) followed by ReLU.
// The GEMM goes to cuBLAS on the harness's handle (allowed: GEMM only); bias
// and ReLU are fused into one epilogue kernel of our own.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <kb/solution.h>

#include "kernels/epilogue.cuh"

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);                // [M, K]
  kb::Tensor w = ctx.param("linear.weight");  // [N, K]
  kb::Tensor b = ctx.param("linear.bias");    // [N]
  const int m = static_cast<int>(x.size(0));
  const int k = static_cast<int>(x.size(1));
  const int n = static_cast<int>(w.size(0));
  kb::Tensor y = ctx.output(0, {m, n});

  // Row-major y[M,N] = x[M,K] * w[N,K]^T is column-major y^T = w * x^T.
  auto handle = static_cast<cublasHandle_t>(ctx.cublas());
  const float alpha = 1.0f, beta = 0.0f;
  cublasStatus_t st = cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &alpha,
                                  w.data_as<float>(), k, x.data_as<float>(), k, &beta,
                                  y.data_as<float>(), n);
  if (st != CUBLAS_STATUS_SUCCESS) {
    ctx.fail("cublasSgemm failed");
    return;
  }
  launch_bias_relu(y.data_as<float>(), b.data_as<float>(), m, n,
                   static_cast<cudaStream_t>(ctx.stream()));
}
