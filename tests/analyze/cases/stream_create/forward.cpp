#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <kb/solution.h>

KB_FORWARD(ctx) {
  cudaStream_t side;
  cudaStreamCreate(&side);  // expect: [stream-create]
  cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);  // expect: [stream-create]
  auto create = &cudaStreamCreateWithPriority;  // expect: [stream-create]
  cublasSetStream(static_cast<cublasHandle_t>(ctx.cublas()), side);  // expect: [stream-create] [library-api] [library-api]
  (void)create;
}
