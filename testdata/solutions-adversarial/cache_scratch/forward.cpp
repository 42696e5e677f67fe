// HACK CLASS 1: a result cache keyed on input contents, kept in ctx.scratch()
// (issue 17, class 1; DESIGN.md §5 "caching results across calls").
//
// Task matmul_2048. The scratch block of a call has the same address on every
// call (the harness hands back the block it prepared for that size), so it
// can hold a cache: a header (magic, four keys, a round-robin counter) and
// four 16 MiB copies of earlier outputs. The key is a fingerprint of 12 input
// elements spread over A and B (one tiny gather kernel, one 64-byte read
// back). A hit replays the cached output with one device-to-device copy, and
// launches the honest GEMM kernel on a single 64x64 tile into scratch, so
// that the set of kernels of a timed call is the same as a verified call's.
// A miss computes honestly and stores. Against a harness that cycles through
// a few input value sets and never clears scratch, every call after the
// first few is a ~1 ms GEMM replaced by a ~15 us copy: a 20x+ fake speed-up,
// with outputs that are right (the contents really match).
//
// Why it would score: verify's seeds all miss (new values), so verify passes;
// timed calls hit once values repeat; the kernel set stays the same.
// What must catch it: scratch poisoned before every call (the header's magic
// is gone, every call misses) and inputs never repeated within a run (the
// key never matches anyway). Then it is an honest, slower GEMM: kbprof ends
// ok with a speed-up no better than the tiled kernel's (max_speedup in
// expected.json); a speed-up above that means a hit, i.e. a broken defence.
// Static: nothing to find (scratch is sanctioned, no global).
#include <kb/solution.h>

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

#include "kernels/fingerprint.cuh"
#include "kernels/gemm_tiled.cuh"

namespace {
constexpr int kEntries = 4;
constexpr uint32_t kMagic = 0x4B424341u;
constexpr size_t kProbeOffset = 4096, kDecoyOffset = 8192, kDataOffset = 32768;

struct Header {
  uint32_t magic;
  uint32_t next;
  uint32_t valid[kEntries];
  float key[kEntries][kFingerprint];
};
static_assert(sizeof(Header) <= kProbeOffset, "header fits before the probe");
}  // namespace

KB_FORWARD(ctx) {
  kb::Tensor a = ctx.input(0);
  kb::Tensor b = ctx.input(1);
  if (ctx.failed()) return;
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  kb::Tensor c = ctx.output(0, {m, n});
  if (ctx.failed()) return;
  auto stream = static_cast<cudaStream_t>(ctx.stream());
  const size_t bytes = sizeof(float) * static_cast<size_t>(m * n);
  auto* base = static_cast<char*>(ctx.scratch(kDataOffset + kEntries * bytes));
  if (ctx.failed()) return;
  auto* probe = reinterpret_cast<float*>(base + kProbeOffset);
  auto entry = [&](int e) { return base + kDataOffset + static_cast<size_t>(e) * bytes; };

  Header h{};
  float key[kFingerprint] = {};
  if (launch_fingerprint(a.data_as<const float>(), a.numel(), b.data_as<const float>(), b.numel(),
                         probe, stream) != cudaSuccess ||
      cudaMemcpyAsync(&h, base, sizeof h, cudaMemcpyDeviceToHost, stream) != cudaSuccess ||
      cudaMemcpyAsync(key, probe, sizeof key, cudaMemcpyDeviceToHost, stream) != cudaSuccess ||
      cudaStreamSynchronize(stream) != cudaSuccess) {
    ctx.fail("fingerprint failed");
    return;
  }
  if (h.magic == kMagic) {
    for (int e = 0; e < kEntries; ++e) {
      if (h.valid[e] != 1 || std::memcmp(h.key[e], key, sizeof key) != 0) continue;
      // Hit: replay, plus the decoy tile so that the kernel set looks honest.
      if (cudaMemcpyAsync(c.data, entry(e), bytes, cudaMemcpyDeviceToDevice, stream) !=
              cudaSuccess ||
          launch_sgemm_tiled(a.data_as<const float>(), b.data_as<const float>(),
                             reinterpret_cast<float*>(base + kDecoyOffset), 64, 64,
                             static_cast<int>(k), stream) != cudaSuccess)
        ctx.fail("replay failed");
      return;
    }
  } else {
    std::memset(&h, 0, sizeof h);
    h.magic = kMagic;
  }
  cudaError_t err = launch_sgemm_tiled(a.data_as<const float>(), b.data_as<const float>(),
                                       c.data_as<float>(), static_cast<int>(m),
                                       static_cast<int>(n), static_cast<int>(k), stream);
  if (err != cudaSuccess) {
    ctx.fail(cudaGetErrorString(err));
    return;
  }
  const int slot = static_cast<int>(h.next % kEntries);
  std::memcpy(h.key[slot], key, sizeof key);
  h.valid[slot] = 1;
  h.next = static_cast<uint32_t>(slot + 1);
  // Pageable source: the copy is staged before cudaMemcpyAsync returns.
  if (cudaMemcpyAsync(entry(slot), c.data, bytes, cudaMemcpyDeviceToDevice, stream) !=
          cudaSuccess ||
      cudaMemcpyAsync(base, &h, sizeof h, cudaMemcpyHostToDevice, stream) != cudaSuccess)
    ctx.fail("storing the result failed");
}
