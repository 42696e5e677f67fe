// One block per row: each thread scales and sums a strided slice of the row,
// the block reduces with cooperative groups (tiled_partition<32> + cg::reduce
// per warp, then the first warp reduces the warps' partial sums).
#include "rowsum.cuh"

#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>

namespace cg = cooperative_groups;

namespace {
constexpr int kThreads = 256, kWarps = kThreads / 32;

__global__ __launch_bounds__(kThreads) void scale_rowsum(const float* __restrict__ x,
                                                          int64_t cols, int64_t ld, float scale,
                                                          float* __restrict__ scaled,
                                                          float* __restrict__ sums) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
  __shared__ float partial[kWarps];
  const int64_t row = blockIdx.x;
  const float* in = x + row * ld;
  float* out = scaled + row * cols;
  float sum = 0.0f;
  for (int64_t c = block.thread_rank(); c < cols; c += block.size()) {
    const float v = in[c];
    out[c] = v * scale;
    sum += v;
  }
  sum = cg::reduce(warp, sum, cg::plus<float>());
  if (warp.thread_rank() == 0) partial[warp.meta_group_rank()] = sum;
  block.sync();
  if (warp.meta_group_rank() == 0) {
    float s = warp.thread_rank() < kWarps ? partial[warp.thread_rank()] : 0.0f;
    s = cg::reduce(warp, s, cg::plus<float>());
    if (warp.thread_rank() == 0) sums[row] = s;
  }
}
}  // namespace

cudaError_t launch_scale_rowsum(const float* x, int64_t rows, int64_t cols, int64_t ld,
                                float scale, float* scaled, float* sums, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  scale_rowsum<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(x, cols, ld, scale, scaled,
                                                                     sums);
  return cudaGetLastError();
}
