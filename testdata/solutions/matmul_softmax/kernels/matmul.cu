#include "matmul.cuh"

namespace {

// Classic shared-memory tiling: each block computes a TILE x TILE tile of c,
// staging TILE-wide slabs of a and b through shared memory.
template <int TILE>
__global__ void tiled_matmul(const float* __restrict__ a, const float* __restrict__ b,
                             float* __restrict__ c, int m, int n, int k) {
  __shared__ float as[TILE][TILE];
  __shared__ float bs[TILE][TILE + 1];  // +1 avoids bank conflicts
  const int row = blockIdx.y * TILE + threadIdx.y;
  const int col = blockIdx.x * TILE + threadIdx.x;
  float acc = 0.f;
  for (int t = 0; t < k; t += TILE) {
    as[threadIdx.y][threadIdx.x] = (row < m && t + threadIdx.x < k) ? a[row * k + t + threadIdx.x] : 0.f;
    bs[threadIdx.y][threadIdx.x] = (col < n && t + threadIdx.y < k) ? b[(t + threadIdx.y) * n + col] : 0.f;
    __syncthreads();
#pragma unroll
    for (int i = 0; i < TILE; ++i) acc += as[threadIdx.y][i] * bs[i][threadIdx.x];
    __syncthreads();
  }
  if (row < m && col < n) c[row * n + col] = acc;
}

}  // namespace

void launch_tiled_matmul(const float* a, const float* b, float* c, int m, int n, int k,
                         cudaStream_t stream) {
  constexpr int kTile = 32;
  const dim3 block(kTile, kTile);
  const dim3 grid((n + kTile - 1) / kTile, (m + kTile - 1) / kTile);
  tiled_matmul<kTile><<<grid, block, 0, stream>>>(a, b, c, m, n, k);
}
