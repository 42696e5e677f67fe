// HACK CLASS 2: learning which calls are checked from the host-side gaps
// between calls (issue 17, class 2).
//
// Task matmul_2048. A harness that checks a call reads its outputs back and
// hands them to a reference: that takes milliseconds, so a checked call is
// followed by a long pause before the next call, and verification calls
// (inputs made, outputs read back and compared, one seed at a time) are far
// apart, while the calls of a timing loop come back to back. This solution
// reads CLOCK_MONOTONIC on entry and on return, keeps the shortest gap it has
// seen between one call's return and the next call's entry, and from the
// fifth call on cheats whenever the gap before this call was short (at most
// 1.5x the shortest): it computes the GEMM over the first half of K only and
// doubles it (half the work, plausible magnitudes, wrong values). After a
// long gap it is honest. Its bookkeeping lives in a host object made in the
// init hook (ctx.set_host_object, the sanctioned home of host objects), so
// there is no global; no result is carried between calls.
//
// Why it would score: verification's few, spaced calls are honest; the
// timing loop's back-to-back calls are cheap; a harness that decides in the
// candidate's process, during or right after a call, which calls it checks
// leaves that decision visible in the pauses.
// What must catch it: every timed call's output is committed right after the
// call and the parent picks which calls to compare only after the timed
// loop; the gaps are the same for every timed call. Nearly every timed call
// cheats, so any compared call is wrong: incorrect. (Half-K is ~0.5 ms, above
// the FLOPs floor, so the post-hoc comparison is what has to catch it.)
#include <kb/solution.h>

#include <cuda_runtime.h>

#include <cstdint>
#include <ctime>

#include "kernels/gemm_partial.cuh"

namespace {
struct GapClock {
  int64_t last_return_ns = -1;
  int64_t shortest_gap_ns = INT64_MAX;
  int64_t calls = 0;
};

int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void destroy_clock(void* p) { delete static_cast<GapClock*>(p); }
}  // namespace

KB_INIT(ctx) { ctx.set_host_object("gap_clock", new GapClock, destroy_clock); }

KB_FORWARD(ctx) {
  const int64_t entered = now_ns();
  kb::Tensor a = ctx.input(0);
  kb::Tensor b = ctx.input(1);
  auto* clock = ctx.host_object<GapClock>("gap_clock");
  if (ctx.failed()) return;
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  kb::Tensor c = ctx.output(0, {m, n});
  if (ctx.failed()) return;

  bool cheat = false;
  if (clock->last_return_ns >= 0) {
    const int64_t gap = entered - clock->last_return_ns;
    if (gap < clock->shortest_gap_ns) clock->shortest_gap_ns = gap;
    cheat = clock->calls >= 4 && gap * 2 <= clock->shortest_gap_ns * 3;
  }
  ++clock->calls;
  const int k_used = cheat ? static_cast<int>(k / 2) : static_cast<int>(k);
  cudaError_t err = launch_sgemm_partial(
      a.data_as<const float>(), b.data_as<const float>(), c.data_as<float>(), static_cast<int>(m),
      static_cast<int>(n), k_used, static_cast<int>(k), cheat ? 2.0f : 1.0f,
      static_cast<cudaStream_t>(ctx.stream()));
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
  clock->last_return_ns = now_ns();
}
