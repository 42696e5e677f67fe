// HACK CLASS: caching results across calls keyed by the input pointers only
// (DESIGN.md §5 "caching results across calls (keyed by pointer or
// shape)"): the naive form of pointer_cache, with no content fingerprint
// and no host round trip at all.
//
// Task matmul_2048. (A's pointer, B's pointer) -> a device copy of the
// output; a hit replays it with one device-to-device copy.
//
// Should be caught by: kbcheck static [mutable-global], [raw-alloc] and
// [interpose] (the map's load-time constructor); at run time by kbcheck
// verify when the caching allocator hands the next seed's inputs the same
// addresses (a stale replay -> incorrect), else by kbprof (rotating input
// copies with changing contents and sampled output checks -> incorrect; a
// timed call that launches none of the solution's kernels -> hack_detected).
#include <kb/solution.h>

#include <cuda_runtime.h>

#include <map>
#include <utility>

#include "kernels/gemm_tiled.cuh"

namespace {
std::map<std::pair<const void*, const void*>, float*> g_replay;
}  // namespace

KB_FORWARD(ctx) {
  kb::Tensor a = ctx.input(0);
  kb::Tensor b = ctx.input(1);
  if (ctx.failed()) return;
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  kb::Tensor c = ctx.output(0, {m, n});
  if (ctx.failed()) return;
  auto stream = static_cast<cudaStream_t>(ctx.stream());
  const size_t bytes = sizeof(float) * m * n;
  const auto key = std::make_pair(static_cast<const void*>(a.data), static_cast<const void*>(b.data));
  auto hit = g_replay.find(key);
  if (hit != g_replay.end()) {
    if (cudaMemcpyAsync(c.data, hit->second, bytes, cudaMemcpyDeviceToDevice, stream) != cudaSuccess)
      ctx.fail("replay failed");
    return;
  }
  cudaError_t err = launch_sgemm_tiled(a.data_as<const float>(), b.data_as<const float>(),
                                       c.data_as<float>(), static_cast<int>(m),
                                       static_cast<int>(n), static_cast<int>(k), stream);
  if (err != cudaSuccess) {
    ctx.fail(cudaGetErrorString(err));
    return;
  }
  float* saved = nullptr;
  if (g_replay.size() < 64 && cudaMalloc(&saved, bytes) == cudaSuccess) {
    cudaMemcpyAsync(saved, c.data, bytes, cudaMemcpyDeviceToDevice, stream);
    g_replay[key] = saved;
  }
}
