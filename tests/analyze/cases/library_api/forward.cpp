#include <cublas_v2.h>
#include <cudnn.h>
#include <curand.h>  // expect: [include]

#include <kb/solution.h>

KB_FORWARD(ctx) {
  auto h = static_cast<cublasHandle_t>(ctx.cublas());
  cublasHandle_t mine;
  cublasCreate(&mine);  // expect: [library-api]
  cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH);  // expect: [library-api]
  const float one = 1.f, zero = 0.f;
  float *a = nullptr, *x = nullptr, *y = nullptr;
  cublasSgemv(h, CUBLAS_OP_N, 4, 4, &one, a, 4, x, 1, &zero, y, 1);  // expect: [library-api]
  cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, a, 4, x, 4, &zero, y, 4);  // fine
  auto dnn = static_cast<cudnnHandle_t>(ctx.cudnn());
  cudnnTensorDescriptor_t d;
  cudnnCreateTensorDescriptor(&d);  // fine
  cudnnSoftmaxForward(dnn, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_CHANNEL, &one, d, x, &zero, d, y);  // expect: [library-api]
  curandGenerator_t g;
  curandCreateGenerator(&g, CURAND_RNG_PSEUDO_DEFAULT);  // expect: [library-api]
}
