#include "batchnorm.cuh"

#include <cstdint>

namespace {

constexpr int kCols = 32;  // columns per block: one warp-wide row segment
constexpr int kRows = 16;  // row lanes per block

__device__ double column_total(double v, double (*partial)[kCols]) {
  partial[threadIdx.y][threadIdx.x] = v;
  __syncthreads();
  double t = 0.0;
  for (int r = 0; r < kRows; ++r) t += partial[r][threadIdx.x];
  __syncthreads();  // partial is reused by the next call
  return t;
}

__global__ void __launch_bounds__(kCols* kRows)
    scale_batchnorm_train(float* __restrict__ y, const float* __restrict__ bias, const float* __restrict__ scale,
                          const float* __restrict__ gamma, const float* __restrict__ beta, int m, int n, double eps) {
  __shared__ double partial[kRows][kCols];
  const int col = blockIdx.x * kCols + threadIdx.x;
  const bool live = col < n;
  const float bc = live ? bias[col] : 0.0f, sc = live ? scale[col] : 0.0f;
  // z = (v + b) * scale, rounded in fp32 as the reference's two ops.
  double sum = 0.0;
  if (live)
    for (int r = threadIdx.y; r < m; r += kRows) sum += static_cast<double>((y[static_cast<int64_t>(r) * n + col] + bc) * sc);
  const double mean = column_total(sum, partial) / m;
  double sq = 0.0;
  if (live)
    for (int r = threadIdx.y; r < m; r += kRows) {
      const double d = static_cast<double>((y[static_cast<int64_t>(r) * n + col] + bc) * sc) - mean;
      sq += d * d;
    }
  const double var = column_total(sq, partial) / m;
  if (!live) return;
  const float mean_f = static_cast<float>(mean);
  const float invstd = static_cast<float>(1.0 / sqrt(var + eps));
  const float g = gamma[col], h = beta[col];
  for (int r = threadIdx.y; r < m; r += kRows) {
    float* p = y + static_cast<int64_t>(r) * n + col;
    const float z = (*p + bc) * sc;
    *p = (z - mean_f) * invstd * g + h;
  }
}

}  // namespace

cudaError_t launch_scale_batchnorm_train(float* y, const float* bias, const float* scale, const float* gamma,
                                         const float* beta, int m, int n, double eps, cudaStream_t stream) {
  if (m <= 0 || n <= 0) return cudaSuccess;
  const dim3 block(kCols, kRows);
  scale_batchnorm_train<<<(n + kCols - 1) / kCols, block, 0, stream>>>(y, bias, scale, gamma, beta, m, n, eps);
  return cudaGetLastError();
}
