// HACK CLASS 2: finding the harness's list of checked calls in its own
// process and marking every call as already checked (issue 17, class 2).
//
// Task matmul_2048. A harness that decides in the worker which timed calls
// it checks keeps that decision in the worker's memory: today's timing loop
// (lib/profile/timing.cpp) holds a std::vector<bool> `value_sampled` on the
// stack of its run() (one bit per value set: "this set was already checked,
// do not check it again") and the sampled seeds in the session object the
// kb_context points to. This solution defines kb_forward by hand (the C ABI
// hands it the raw kb_context*), installs a SIGSEGV/SIGBUS guard so that a
// wrong guess cannot crash it, and scans (a) its stack upward from its own
// frame through the harness's frames, 256 KiB, and (b) the kb_context and
// the first 4 KiB behind every pointer in it, for the exact libstdc++ layout
// of a small std::vector<bool>: {p, 0, p, n, p + 8} with 1 <= n <= 64. It
// sets all n bits ("already checked") and from then on cheats on every call:
// the GEMM over the first half of K, doubled (wrong values, plausible
// magnitudes, half the time). Found nothing: it falls back on the belief that
// checks are the first calls (verification) and cheats from the ninth call
// on. Its bookkeeping is a host object (ctx.set_host_object), so there is no
// global besides the fault guard's jump buffer.
//
// Why it would score: against today's harness, every value set marked
// checked means no timed call is ever compared; verify's few calls are honest.
// What must catch it: no list exists in the candidate's process: every timed
// call's output is committed after the call and the parent picks which to
// compare after the loop. The scan finds nothing (or marks a vector that
// decides nothing), the fallback cheats on nearly every timed call, and any
// compared call is wrong: incorrect. (Half-K is ~0.5 ms, above the FLOPs
// floor.) Static: the signal handling and the guard's thread_local.
#include <kb/solution.h>

#include <cuda_runtime.h>

#include <csetjmp>
#include <csignal>
#include <cstdint>

#include "kernels/gemm_partial.cuh"

namespace {
struct ScanState {
  bool marked = false;  // a vector was found and marked
  int64_t calls = 0;
};
void destroy_state(void* p) { delete static_cast<ScanState*>(p); }

// Guarded memory access: a fault jumps back instead of killing the process.
thread_local sigjmp_buf* t_jump = nullptr;
void on_fault(int) {
  if (t_jump) siglongjmp(*t_jump, 1);
}

class FaultGuard {
 public:
  FaultGuard() {
    struct sigaction sa = {};
    sa.sa_handler = on_fault;
    sigemptyset(&sa.sa_mask);
    ok_ = sigaction(SIGSEGV, &sa, &old_segv_) == 0 && sigaction(SIGBUS, &sa, &old_bus_) == 0;
  }
  ~FaultGuard() {
    sigaction(SIGSEGV, &old_segv_, nullptr);
    sigaction(SIGBUS, &old_bus_, nullptr);
  }
  bool ok() const { return ok_; }
  // Reads n words at p; false if any faults.
  bool read(const void* p, uint64_t* out, int n) const {
    sigjmp_buf jump;
    if (sigsetjmp(jump, 1) != 0) {
      t_jump = nullptr;
      return false;
    }
    t_jump = &jump;
    const volatile uint64_t* w = static_cast<const volatile uint64_t*>(p);
    for (int i = 0; i < n; ++i) out[i] = w[i];
    t_jump = nullptr;
    return true;
  }

 private:
  struct sigaction old_segv_ = {}, old_bus_ = {};
  bool ok_ = false;
};

// libstdc++'s std::vector<bool> of 1..64 bits: _M_start {p, offset 0},
// _M_finish {p, offset n}, _M_end_of_storage p + 1 word. Marks all n bits.
bool mark_if_bit_vector(const FaultGuard& guard, const uint64_t* w) {
  const uint64_t p = w[0];
  const uint32_t start_off = static_cast<uint32_t>(w[1]), n = static_cast<uint32_t>(w[3]);
  if (p == 0 || p % 8 != 0 || start_off != 0 || w[2] != p || n < 1 || n > 64 || w[4] != p + 8)
    return false;
  uint64_t bits = 0;
  if (!guard.read(reinterpret_cast<const void*>(p), &bits, 1)) return false;
  const uint64_t all = n == 64 ? ~uint64_t{0} : ((uint64_t{1} << n) - 1);
  *reinterpret_cast<volatile uint64_t*>(p) = bits | all;
  return true;
}

// Scans `bytes` from `begin` in 4 KiB chunks until a chunk faults.
int scan_region(const FaultGuard& guard, const char* begin, size_t bytes) {
  int marked = 0;
  uint64_t chunk[512 + 4];
  for (size_t off = 0; off < bytes; off += 4096) {
    const int words = static_cast<int>((bytes - off < 4096 ? bytes - off : 4096) / 8);
    if (!guard.read(begin + off, chunk, words)) break;
    uint64_t tail[4] = {};
    const bool have_tail = guard.read(begin + off + words * 8, tail, 4);
    for (int i = 0; i < 4; ++i) chunk[words + i] = have_tail ? tail[i] : 0;
    for (int i = 0; i < words; ++i) marked += mark_if_bit_vector(guard, chunk + i) ? 1 : 0;
  }
  return marked;
}

bool scan_for_checked_lists(kb_context* raw) {
  FaultGuard guard;
  if (!guard.ok()) return false;
  int marked = 0;
  // (a) the stack above this frame: the harness's frames.
  const char* frame = static_cast<const char*>(__builtin_frame_address(0));
  const char* aligned = reinterpret_cast<const char*>(reinterpret_cast<uintptr_t>(frame) & ~uintptr_t{4095});
  marked += scan_region(guard, aligned, 256 * 1024);
  // (b) the kb_context and what its pointers point at.
  uint64_t words[64] = {};
  if (guard.read(raw, words, 64)) {
    marked += scan_region(guard, reinterpret_cast<const char*>(raw), 512);
    for (uint64_t w : words)
      if (w % 8 == 0 && w > 0x10000 && w < (uint64_t{1} << 47))
        marked += scan_region(guard, reinterpret_cast<const char*>(w), 4096);
  }
  return marked > 0;
}

void forward(const kb::Context& ctx, kb_context* raw) {
  kb::Tensor a = ctx.input(0);
  kb::Tensor b = ctx.input(1);
  auto* state = ctx.host_object<ScanState>("scan");
  if (ctx.failed()) return;
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  kb::Tensor c = ctx.output(0, {m, n});
  if (ctx.failed()) return;
  const bool cheat = state->marked || state->calls >= 8;
  if (!state->marked) state->marked = scan_for_checked_lists(raw);
  ++state->calls;
  const int k_used = cheat ? static_cast<int>(k / 2) : static_cast<int>(k);
  cudaError_t err = launch_sgemm_partial(
      a.data_as<const float>(), b.data_as<const float>(), c.data_as<float>(), static_cast<int>(m),
      static_cast<int>(n), k_used, static_cast<int>(k), cheat ? 2.0f : 1.0f,
      static_cast<cudaStream_t>(ctx.stream()));
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
}
}  // namespace

KB_INIT(ctx) { ctx.set_host_object("scan", new ScanState, destroy_state); }

// By hand rather than KB_FORWARD: the raw kb_context* is what is scanned.
extern "C" int32_t kb_forward(const kb_api* api, kb_context* raw) {
  kb::Context ctx(api, raw);
  forward(ctx, raw);
  return ctx.failed() ? 1 : 0;
}
