#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cub/block/block_reduce.cuh>

#include "reduce.cuh"

namespace cg = cooperative_groups;

template <int BLOCK>
__global__ void row_sum(const float* __restrict__ x, float* __restrict__ y, int cols) {
  using BlockReduce = cub::BlockReduce<float, BLOCK>;
  __shared__ typename BlockReduce::TempStorage temp;
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
  float acc = 0.f;
  for (int c = threadIdx.x; c < cols; c += BLOCK) acc += x[blockIdx.x * cols + c];
  float warp_total = cg::reduce(warp, acc, cg::plus<float>());
  (void)warp_total;
  float total = BlockReduce(temp).Sum(acc);
  if (threadIdx.x == 0) y[blockIdx.x] = total;
}

void launch_row_sum(const float* x, float* y, int rows, int cols, int blocks, int threads, cudaStream_t s) {
  row_sum<256><<<blocks, 256, 0, s>>>(x, y, cols);
}
