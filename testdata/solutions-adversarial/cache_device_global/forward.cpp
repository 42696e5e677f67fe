// HACK CLASS 1: a result cache keyed on input contents, kept in `__device__`
// global arrays (issue 17, class 1).
//
// Task matmul_2048. As cache_state, but the cache (a header and four
// 2048x2048 entries, 64 MiB) is module-scope `__device__` memory that the
// kernels read and write directly: no allocation, no harness buffer, nothing
// the harness hashes or poisons. Per call: a probe kernel (12 input elements
// against the cached keys), the tiled GEMM on its full grid whose blocks copy
// their tile from a hit entry instead of computing it, and two store kernels
// for a miss. No read-back, no host branch, the same kernels and grids on
// every call: a hit only makes the GEMM kernel short.
//
// Why it would score: verify's seeds miss and are right; timed calls hit when
// value sets repeat, and the replay is right.
// What must catch it: inputs never repeated within a run (no hit, ever: then
// it is an honest GEMM and kbprof's speed-up stays at the tiled kernel's,
// max_speedup in expected.json). Static: mutable-global (a writable
// __device__ variable).
#include <kb/solution.h>

#include <cuda_runtime.h>

#include "kernels/cached_gemm.cuh"

KB_FORWARD(ctx) {
  kb::Tensor a = ctx.input(0);
  kb::Tensor b = ctx.input(1);
  if (ctx.failed()) return;
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  kb::Tensor c = ctx.output(0, {m, n});
  auto* call = static_cast<int*>(ctx.scratch(16 * sizeof(int)));
  if (ctx.failed()) return;
  cudaError_t err = launch_cached_gemm(a.data_as<const float>(), b.data_as<const float>(),
                                       c.data_as<float>(), static_cast<int>(m),
                                       static_cast<int>(n), static_cast<int>(k), call,
                                       static_cast<cudaStream_t>(ctx.stream()));
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
}
