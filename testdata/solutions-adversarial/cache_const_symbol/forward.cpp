// HACK CLASS 1: a result cache keyed on input contents, kept in a
// `const __device__` array written through cudaGetSymbolAddress +
// cudaMemcpyAsync (issue 17, class 1).
//
// Task matmul_2048. A rule that refuses mutable globals accepts a const one;
// but `const` only binds the compiler, and the runtime hands out the array's
// device address like any other. The array holds a header (magic, four keys
// of 12 input elements, a round-robin counter) and four 2048x2048 outputs.
// Per call: one gather kernel for the key, one read-back of the key and the
// header, then on a hit one device-to-device copy into the output plus the
// honest GEMM kernel on one 64x64 tile (a decoy for kernel-set checks); on a
// miss the honest GEMM and a copy of its output into the array.
//
// Why it would score: verify's seeds miss and are right; timed calls hit when
// value sets repeat (a ~15 us copy for a ~1 ms GEMM), and the replay is right.
// What must catch it: inputs never repeated within a run: no hit, ever, so it
// is an honest GEMM and kbprof's speed-up stays at the tiled kernel's
// (max_speedup in expected.json). Static: whatever the checker makes of a
// const __device__ array written through its symbol address (a write to
// read-only storage), and of cudaGetSymbolAddress.
#include <kb/solution.h>

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

#include "kernels/fingerprint.cuh"
#include "kernels/gemm_tiled.cuh"
#include "kernels/store.cuh"

namespace {
constexpr int kEntries = 4;
constexpr uint32_t kMagic = 0x4B424341u;
constexpr size_t kHeaderBytes = 4096;

struct Header {
  uint32_t magic;
  uint32_t next;
  uint32_t valid[kEntries];
  float key[kEntries][kFingerprint];
};
static_assert(sizeof(Header) <= kHeaderBytes, "header fits");
}  // namespace

KB_FORWARD(ctx) {
  kb::Tensor a = ctx.input(0);
  kb::Tensor b = ctx.input(1);
  if (ctx.failed()) return;
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  kb::Tensor c = ctx.output(0, {m, n});
  auto* work = static_cast<float*>(ctx.scratch(64 * 64 * sizeof(float) + 256));
  if (ctx.failed()) return;
  auto stream = static_cast<cudaStream_t>(ctx.stream());
  const size_t bytes = sizeof(float) * static_cast<size_t>(m * n);
  void* store = nullptr;
  size_t store_bytes = 0;
  if (cache_storage(&store, &store_bytes) != cudaSuccess ||
      kHeaderBytes + kEntries * bytes > store_bytes) {
    store = nullptr;  // no room: just compute
  }
  auto entry = [&](int e) { return static_cast<char*>(store) + kHeaderBytes + e * bytes; };
  float* probe = work + 64 * 64;
  Header h{};
  float key[kFingerprint] = {};
  if (store) {
    if (launch_fingerprint(a.data_as<const float>(), a.numel(), b.data_as<const float>(),
                           b.numel(), probe, stream) != cudaSuccess ||
        cudaMemcpyAsync(&h, store, sizeof h, cudaMemcpyDeviceToHost, stream) != cudaSuccess ||
        cudaMemcpyAsync(key, probe, sizeof key, cudaMemcpyDeviceToHost, stream) != cudaSuccess ||
        cudaStreamSynchronize(stream) != cudaSuccess) {
      ctx.fail("fingerprint failed");
      return;
    }
    for (int e = 0; h.magic == kMagic && e < kEntries; ++e) {
      if (h.valid[e] != 1 || std::memcmp(h.key[e], key, sizeof key) != 0) continue;
      if (cudaMemcpyAsync(c.data, entry(e), bytes, cudaMemcpyDeviceToDevice, stream) !=
              cudaSuccess ||
          launch_sgemm_tiled(a.data_as<const float>(), b.data_as<const float>(), work, 64, 64,
                             static_cast<int>(k), stream) != cudaSuccess)
        ctx.fail("replay failed");
      return;
    }
  }
  cudaError_t err = launch_sgemm_tiled(a.data_as<const float>(), b.data_as<const float>(),
                                       c.data_as<float>(), static_cast<int>(m),
                                       static_cast<int>(n), static_cast<int>(k), stream);
  if (err != cudaSuccess) {
    ctx.fail(cudaGetErrorString(err));
    return;
  }
  if (!store) return;
  if (h.magic != kMagic) {
    std::memset(&h, 0, sizeof h);
    h.magic = kMagic;
  }
  const int slot = static_cast<int>(h.next % kEntries);
  std::memcpy(h.key[slot], key, sizeof key);
  h.valid[slot] = 1;
  h.next = static_cast<uint32_t>(slot + 1);
  if (cudaMemcpyAsync(entry(slot), c.data, bytes, cudaMemcpyDeviceToDevice, stream) !=
          cudaSuccess ||
      cudaMemcpyAsync(store, &h, sizeof h, cudaMemcpyHostToDevice, stream) != cudaSuccess)
    ctx.fail("storing the result failed");
}
