// Fused GEMM + bias + ReLU, one 64x64 tile per block.
#include <cuda_runtime.h>
#include <cstdint>

template <int TILE>
__global__ void gemm_bias_relu(const float* __restrict__ A, const float* __restrict__ B,
                               const float* __restrict__ bias, float* __restrict__ C,
                               int M, int N, int K) {
  __shared__ float As[TILE][TILE + 1];
  __shared__ float Bs[TILE][TILE + 1];
  const int row = blockIdx.y * TILE + threadIdx.y;
  const int col = blockIdx.x * TILE + threadIdx.x;
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += TILE) {
    As[threadIdx.y][threadIdx.x] = (row < M && k0 + threadIdx.x < K) ? A[row * K + k0 + threadIdx.x] : 0.f;
    Bs[threadIdx.y][threadIdx.x] = (col < N && k0 + threadIdx.y < K) ? B[(k0 + threadIdx.y) * N + col] : 0.f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TILE; ++k) acc = fmaf(As[threadIdx.y][k], Bs[k][threadIdx.x], acc);
    __syncthreads();
  }
  if (row < M && col < N) C[row * N + col] = fmaxf(acc + bias[col], 0.0f);
}

extern "C" void launch(const float* A, const float* B, const float* bias, float* C,
                       int M, int N, int K, cudaStream_t stream) {
  dim3 block(32, 32), grid((N + 31) / 32, (M + 31) / 32);
  gemm_bias_relu<32><<<grid, block, 0, stream>>>(A, B, bias, C, M, N, K);
  asm volatile("membar.gl;");  // 0x1F, 1e-5f, 3.14159265358979
}
