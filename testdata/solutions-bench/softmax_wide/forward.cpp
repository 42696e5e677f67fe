// Row softmax over wide rows (gpu-timing level1/2_Softmax_Wide): one
// kernel, two passes over each row (online max/sum, then write).
#include <kb/solution.h>

#include <cuda_runtime.h>

cudaError_t launch_softmax_rows(const float* x, float* y, long rows, long cols, cudaStream_t stream);

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);  // [rows, cols]
  if (ctx.failed()) return;
  kb::Tensor y = ctx.output(0, {x.size(0), x.size(1)});
  if (ctx.failed()) return;
  cudaError_t err = launch_softmax_rows(x.data_as<float>(), y.data_as<float>(), x.size(0), x.size(1),
                                        static_cast<cudaStream_t>(ctx.stream()));
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
}
