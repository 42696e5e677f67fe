#include "k.cuh"

namespace {
// One block per row: scale the row in place (the input is used as the
// kernel's working buffer), copy it out, reduce it in shared memory.
__global__ void scale_inplace_rowsum(float* __restrict__ x, float scale, float* __restrict__ out,
                                     float* __restrict__ sums, int64_t cols) {
  __shared__ float partial[256];
  float* row = x + blockIdx.x * cols;
  float acc = 0.0f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    row[c] *= scale;  // <- writes into the input
    out[blockIdx.x * cols + c] = row[c];
    acc += row[c];
  }
  partial[threadIdx.x] = acc;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) sums[blockIdx.x] = partial[0] / scale;
}
}  // namespace

cudaError_t launch_scale_inplace_rowsum(float* x, float scale, float* out, float* sums,
                                        int64_t rows, int64_t cols, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  scale_inplace_rowsum<<<static_cast<unsigned>(rows), 256, 0, stream>>>(x, scale, out, sums, cols);
  return cudaGetLastError();
}
