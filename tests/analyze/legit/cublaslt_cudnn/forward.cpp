// GEMM through cuBLASLt and a convolution through cuDNN: both allowed.
#include <cublasLt.h>
#include <cudnn.h>

#include <kb/solution.h>

KB_FORWARD(ctx) {
  auto lt = static_cast<cublasLtHandle_t>(ctx.cublaslt());
  cublasLtMatmulDesc_t op;
  cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  cublasLtMatrixLayout_t la;
  cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, 4, 4, 4);
  const float one = 1.f, zero = 0.f;
  kb::Tensor x = ctx.input(0);
  kb::Tensor y = ctx.output(0, {4, 4});
  cublasLtMatmul(lt, op, &one, x.data, la, x.data, la, &zero, y.data, la, y.data, la, nullptr, nullptr, 0,
                 static_cast<cudaStream_t>(ctx.stream()));
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatmulDescDestroy(op);

  auto dnn = static_cast<cudnnHandle_t>(ctx.cudnn());
  cudnnTensorDescriptor_t xd;
  cudnnFilterDescriptor_t wd;
  cudnnConvolutionDescriptor_t cd;
  cudnnCreateTensorDescriptor(&xd);
  cudnnCreateFilterDescriptor(&wd);
  cudnnCreateConvolutionDescriptor(&cd);
  cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 4, 4);
  cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 1, 1, 3, 3);
  cudnnSetConvolution2dDescriptor(cd, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);
  kb::Tensor w = ctx.param("conv.weight");
  cudnnConvolutionForward(dnn, &one, xd, x.data, wd, w.data, cd, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                          nullptr, 0, &zero, xd, y.data);
  cudnnDestroyConvolutionDescriptor(cd);
  cudnnDestroyFilterDescriptor(wd);
  cudnnDestroyTensorDescriptor(xd);
}
