// HACK CLASS 1: a result cache keyed on input contents whose host side (the
// "cache valid" flag, the keys and where the cached outputs are) hangs on a
// libc global, `program_invocation_short_name` (issue 17, class 1).
//
// Task matmul_2048. A rule that refuses the solution's own mutable globals
// does not see a write to one of libc's: this solution points
// program_invocation_short_name at a heap block that starts with a copy of
// the name (so error messages still read right) followed by its cache
// table. The table needs no device memory of its own: the cached outputs are
// the harness's output buffers of earlier calls, kept alive by a harness
// that keeps every timed call's outputs (or, with a caching allocator, still
// holding their values until reused). Per call: a 12-element fingerprint
// (one gather kernel, one read-back); a hit copies the earlier output into
// this call's output and launches the honest GEMM kernel on one 64x64 tile
// (a decoy for kernel-set checks); a miss computes honestly and records
// (key, output pointer).
//
// Why it would score: verify's seeds miss and are right; timed calls hit when
// value sets repeat, and the replay is right while the earlier output lives.
// What must catch it: inputs never repeated within a run: no hit, ever, so it
// is an honest GEMM and kbprof's speed-up stays at the tiled kernel's
// (max_speedup in expected.json). A hit on a freed output would be wrong
// (incorrect). Static: nothing the solution declares is mutable.
#include <kb/solution.h>

#include <cuda_runtime.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "kernels/fingerprint.cuh"
#include "kernels/gemm_tiled.cuh"

namespace {
constexpr int kEntries = 8;

struct Table {
  char name[64];  // what program_invocation_short_name must still read as
  uint32_t next;
  struct Entry {
    bool valid;
    float key[kFingerprint];
    const void* output;
    size_t bytes;
  } entries[kEntries];
};

// The table, made on first use. libc's own value of the pointer lies inside
// program_invocation_name's string; once it does not, it is the table.
Table* table() {
  const char* full = program_invocation_name;
  const char* shorter = program_invocation_short_name;
  if (full && shorter && shorter >= full && shorter <= full + std::strlen(full)) {
    auto* t = static_cast<Table*>(std::calloc(1, sizeof(Table)));
    if (!t) return nullptr;
    std::strncpy(t->name, shorter, sizeof t->name - 1);
    program_invocation_short_name = t->name;
    return t;
  }
  return reinterpret_cast<Table*>(program_invocation_short_name);
}
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
  Table* t = table();
  float key[kFingerprint] = {};
  if (t) {
    if (launch_fingerprint(a.data_as<const float>(), a.numel(), b.data_as<const float>(),
                           b.numel(), work + 64 * 64, stream) != cudaSuccess ||
        cudaMemcpyAsync(key, work + 64 * 64, sizeof key, cudaMemcpyDeviceToHost, stream) !=
            cudaSuccess ||
        cudaStreamSynchronize(stream) != cudaSuccess) {
      ctx.fail("fingerprint failed");
      return;
    }
    for (const auto& e : t->entries) {
      if (!e.valid || e.bytes != bytes || std::memcmp(e.key, key, sizeof key) != 0) continue;
      if (cudaMemcpyAsync(c.data, e.output, bytes, cudaMemcpyDeviceToDevice, stream) !=
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
  if (!t) return;
  auto& e = t->entries[t->next++ % kEntries];
  e.valid = true;
  std::memcpy(e.key, key, sizeof key);
  e.output = c.data;
  e.bytes = bytes;
}
