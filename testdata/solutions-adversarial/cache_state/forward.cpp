// HACK CLASS 1: a result cache keyed on input contents, kept in a
// create_state buffer that forward writes (issue 17, class 1).
//
// Task matmul_2048. The init hook makes one large state buffer ("cache":
// a header and four 2048x2048 entries; init never sees the inputs, so the
// size is the task's, hard-coded). Every forward runs three kernels on
// ctx.stream(): a probe that compares 12 input elements with the cached
// keys, the tiled GEMM on its full grid whose blocks copy their tile from
// the hit entry instead of computing it, and a store of a missed call's
// output and key. Nothing is read back and the host never branches, so a
// hit costs no synchronisation and the kernel set and grids of every call
// are identical: only the GEMM kernel's duration drops (~1 ms to ~20 us).
//
// Why it would score: verify's seeds miss and are right; timed calls hit when
// value sets repeat, and the replayed output is right.
// What must catch it: state is read-only in forward: the harness hashes
// state before and after calls (outside the timed region) and a change is
// hack_detected (every miss writes the cache). Inputs never repeated within
// a run also mean it never hits. Static: nothing to find today (state is
// sanctioned; writing through a state view is not visible to a parse).
#include <kb/solution.h>

#include <cuda_runtime.h>

#include "kernels/cached_gemm.cuh"

namespace {
constexpr int64_t kM = 2048, kN = 2048;  // the task's output shape
}

KB_INIT(ctx) { ctx.create_state("cache", {kHeaderFloats + kEntries * kM * kN}); }

KB_FORWARD(ctx) {
  kb::Tensor a = ctx.input(0);
  kb::Tensor b = ctx.input(1);
  kb::Tensor cache = ctx.state("cache");
  if (ctx.failed()) return;
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  if (m * n != kM * kN) {
    ctx.fail("this cache is sized for the task's 2048x2048 output");
    return;
  }
  kb::Tensor c = ctx.output(0, {m, n});
  auto* call = static_cast<int*>(ctx.scratch(16 * sizeof(int)));
  if (ctx.failed()) return;
  cudaError_t err = launch_cached_gemm(a.data_as<const float>(), b.data_as<const float>(),
                                       c.data_as<float>(), static_cast<int>(m),
                                       static_cast<int>(n), static_cast<int>(k),
                                       cache.data_as<float>(), call,
                                       static_cast<cudaStream_t>(ctx.stream()));
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
}
