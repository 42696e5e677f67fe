#include "transpose.cuh"

__constant__ float c_bias[4];

__global__ void transpose(const float* in, float* out, int rows, int cols) {
  __shared__ float tile[32][33];
  int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
  if (x < cols && y < rows) tile[threadIdx.y][threadIdx.x] = in[y * cols + x] + c_bias[0];
  __syncthreads();
  x = blockIdx.y * 32 + threadIdx.x;
  y = blockIdx.x * 32 + threadIdx.y;
  if (x < rows && y < cols) out[y * rows + x] = tile[threadIdx.x][threadIdx.y];
}

void launch_transpose(const float* in, float* out, int rows, int cols, cudaStream_t stream) {
  dim3 block(32, 32), grid((cols + 31) / 32, (rows + 31) / 32);
  transpose<<<grid, block, 0, stream>>>(in, out, rows, cols);
}

void upload_bias(const float* host, int n, cudaStream_t stream) {
  cudaMemcpyToSymbolAsync(c_bias, host, sizeof(float) * n, 0, cudaMemcpyHostToDevice, stream);
}
