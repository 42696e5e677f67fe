// HACK CLASS 1: a result cache keyed on input contents, kept in a CUDA array
// read and written only through surface instructions (issue 17, class 1).
//
// Task matmul_2048. The init hook allocates a 2048 x 8193 float CUDA array
// (four cached outputs and a header row) and a surface object over it, and
// keeps both with ctx.set_host_object: the sanctioned home of host objects,
// abused to hold a handle to a cache. Per call: a probe kernel reads 12 input
// elements and the header row (surf2Dread) and writes the hit entry into
// scratch; one 52-byte read-back; a hit runs a replay kernel (surf2Dread into
// the output) plus the honest GEMM kernel on one 64x64 tile as a decoy; a
// miss computes honestly and stores the output and key (surf2Dwrite).
//
// Why it would score: verify's seeds miss and are right; timed calls hit when
// value sets repeat, and the replay is right.
// What must catch it: inputs never repeated within a run (no hit, ever: an
// honest GEMM, kbprof's speed-up at the tiled kernel's, max_speedup in
// expected.json). Static: cudaMallocArray is memory outside the harness
// (raw-alloc); surface functions may be beyond the C++ parser (a parser
// limit, not a finding).
#include <kb/solution.h>

#include <cuda_runtime.h>

#include "kernels/gemm_tiled.cuh"
#include "kernels/surface_cache.cuh"

KB_INIT(ctx) {
  if (!ctx.on_cuda()) return;
  auto* cache = new SurfaceCache;
  cudaError_t err = make_surface_cache(cache);
  if (err != cudaSuccess) {
    destroy_surface_cache(cache);
    ctx.fail(cudaGetErrorString(err));
    return;
  }
  ctx.set_host_object("cache", cache, destroy_surface_cache);
}

KB_FORWARD(ctx) {
  kb::Tensor a = ctx.input(0);
  kb::Tensor b = ctx.input(1);
  auto* cache = ctx.host_object<SurfaceCache>("cache");
  if (ctx.failed()) return;
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  kb::Tensor c = ctx.output(0, {m, n});
  auto* work = static_cast<float*>(ctx.scratch(64 * 64 * sizeof(float) + 256));
  if (ctx.failed()) return;
  auto stream = static_cast<cudaStream_t>(ctx.stream());
  const bool fits = m == kHeight && n == kWidth;
  int* probe = reinterpret_cast<int*>(work + 64 * 64);
  int found[1 + kFingerprint] = {-1};
  if (fits) {
    if (launch_probe(a.data_as<const float>(), a.numel(), b.data_as<const float>(), b.numel(),
                     cache->surface, probe, stream) != cudaSuccess ||
        cudaMemcpyAsync(found, probe, sizeof found, cudaMemcpyDeviceToHost, stream) !=
            cudaSuccess ||
        cudaStreamSynchronize(stream) != cudaSuccess) {
      ctx.fail("probe failed");
      return;
    }
    if (found[0] >= 0) {
      if (launch_replay(cache->surface, found[0], c.data_as<float>(), static_cast<int>(m),
                        static_cast<int>(n), stream) != cudaSuccess ||
          launch_sgemm_tiled(a.data_as<const float>(), b.data_as<const float>(), work, 64, 64,
                             static_cast<int>(k), stream) != cudaSuccess)
        ctx.fail("replay failed");
      return;
    }
  }
  cudaError_t err = launch_sgemm_tiled(a.data_as<const float>(), b.data_as<const float>(),
                                       c.data_as<float>(), static_cast<int>(m),
                                       static_cast<int>(n), static_cast<int>(k), stream);
  if (err == cudaSuccess && fits)
    err = launch_store(cache->surface, c.data_as<const float>(), static_cast<int>(m),
                       static_cast<int>(n), probe, stream);
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
}
