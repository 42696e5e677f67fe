#include "scale_rowsum.cuh"

// One block per row: each thread scales a strided slice and adds it up; a
// shared-memory tree reduction gives the row's sum.
__global__ void scale_rowsum(const float* __restrict__ x, float scale, float* __restrict__ scaled,
                             float* __restrict__ sums, int64_t n) {
  __shared__ float partial[256];
  const int64_t row = blockIdx.x;
  float s = 0.0f;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    const float v = x[row * n + j];
    scaled[row * n + j] = v * scale;
    s += v;
  }
  partial[threadIdx.x] = s;
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) sums[row] = partial[0];
}

cudaError_t launch_scale_rowsum(const float* x, float scale, float* scaled, float* sums, int64_t m,
                                int64_t n, cudaStream_t stream) {
  if (m == 0) return cudaSuccess;
  scale_rowsum<<<static_cast<unsigned>(m), 256, 0, stream>>>(x, scale, scaled, sums, n);
  return cudaGetLastError();
}
