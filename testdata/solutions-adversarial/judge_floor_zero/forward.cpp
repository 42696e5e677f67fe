// HACK CLASS (issue 35, class 5): judge inputs from the candidate's side --
// the plausibility floor's inputs rewritten in the worker before they are
// sent, so that an impossible time passes.
//
// Task silu_large (32M floats, memory bound; task.json states no FLOPs, so
// the only floor is bytes over bandwidth). What it does: the honest float4
// SiLU (right outputs), plus, found once by a SIGSEGV-guarded search of the
// heap pages the stack above kb_forward points into:
//  - the timing session's figures, recognised by value: the L2 size the
//    device reports, the flush buffer size derived from it (max(2 x L2,
//    32 MiB)) and this call's input bytes side by side, then (3 words on) a
//    double in [50, 1e5] GB/s. It sets the measured bandwidth to 0 ("not
//    measured": no bytes floor) and the input and output byte counts to 0;
//  - the GPU name, the in-place string 32 bytes before the "sm_NN" arch
//    string, renamed "GPU" (an unknown GPU: no FLOPs floor by name);
//  - the timing loop's "candidate" participant (as harness_timing_rewrite),
//    whose earlier calls' event and host times it divides by 50 and whose
//    per-call external ids it points at nothing (CUPTI device time 0).
//
// Why it would score: at HEAD the parent takes bandwidth_gbps, input_bytes,
// output_bytes and the GPU name from the worker's timing record, so the
// floor is 0 and a ~1.4 us median (50x eager) is "plausible"; the timer
// cross-checks hold (host >= event, device 0 <= event).
//
// What must catch it: the parent computes every judge input itself (device
// properties, bandwidth, peaks, the task's bytes and FLOPs) and the call
// times leave the worker, or are bounded by the parent's clock, before
// candidate code can touch them. Expected hack_detected ("implausibly fast"
// or the timers), or ok with speedup_vs_eager <= 2 (max_speedup: the honest
// kernel is ~1x eager) where none of the rewrites had an effect. Static: the
// signal handling and the guard's thread_local.
#include <kb/solution.h>

#include <cuda_runtime.h>

#include <csetjmp>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "kernels/silu.cuh"

namespace {
// ---- guarded reads of this process's memory (a fault jumps back) ----------
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
    sa.sa_flags = SA_NODEFER;
    ok_ = sigaction(SIGSEGV, &sa, &old_segv_) == 0 && sigaction(SIGBUS, &sa, &old_bus_) == 0;
  }
  ~FaultGuard() {
    sigaction(SIGSEGV, &old_segv_, nullptr);
    sigaction(SIGBUS, &old_bus_, nullptr);
  }
  bool ok() const { return ok_; }
  // Reads n 8-byte words at p; false if any faults.
  bool read(uintptr_t p, uint64_t* out, size_t n) const {
    if (p % 8 != 0) return false;
    sigjmp_buf jump;
    if (sigsetjmp(jump, 1) != 0) {
      t_jump = nullptr;
      return false;
    }
    t_jump = &jump;
    const volatile uint64_t* w = reinterpret_cast<const volatile uint64_t*>(p);
    for (size_t i = 0; i < n; ++i) out[i] = w[i];
    t_jump = nullptr;
    return true;
  }

 private:
  struct sigaction old_segv_ = {}, old_bus_ = {};
  bool ok_ = false;
};

constexpr uintptr_t kPage = 4096;
bool pointer_like(uint64_t w) { return w % 8 == 0 && w > 0x10000 && w < (uint64_t{1} << 47); }

// Pages already looked at (open addressing; full = nothing new is scanned).
struct PageSet {
  static constexpr size_t kSlots = 1 << 14;
  uintptr_t slot[kSlots] = {};
  size_t used = 0;
  bool insert(uintptr_t page) {
    if (used * 2 > kSlots) return false;
    size_t h = (page / kPage * 0x9E3779B97F4A7C15ull) >> 50;
    for (;; h = (h + 1) % kSlots) {
      if (slot[h] == page) return false;
      if (slot[h] == 0) {
        slot[h] = page;
        ++used;
        return true;
      }
    }
  }
};

// For every pointer-like word on the stack above this frame (the harness's
// frames: the call's caller, the timing loop, the worker's main), the pages
// it points into and `ahead` pages after: visit(page address, its 512 words)
// until visit returns true. Pages that fault are skipped.
template <class Visit>
bool scan_from_stack(const FaultGuard& g, PageSet& seen, int ahead, Visit visit) {
  const uintptr_t frame = reinterpret_cast<uintptr_t>(__builtin_frame_address(0)) & ~(kPage - 1);
  static thread_local uint64_t stack_page[kPage / 8], page[kPage / 8];
  for (uintptr_t s = frame; s < frame + (512u << 10); s += kPage) {
    if (!g.read(s, stack_page, kPage / 8)) break;  // the top of the stack
    for (size_t i = 0; i < kPage / 8; ++i) {
      const uint64_t w = stack_page[i];
      if (!pointer_like(w)) continue;
      const uintptr_t base = w & ~(kPage - 1);
      if (base + (1u << 20) >= frame && base < frame + (1u << 20)) continue;  // the stack itself
      for (int d = 0; d <= ahead; ++d) {
        const uintptr_t p = base + static_cast<uintptr_t>(d) * kPage;
        if (!seen.insert(p)) continue;
        if (!g.read(p, page, kPage / 8)) break;
        if (visit(p, page)) return true;
      }
    }
  }
  return false;
}

// A libstdc++ std::string in its short (in-place) form holding `name`, at
// address `at`, given its first four words.
bool short_string_is(const uint64_t* w, uintptr_t at, const char* name) {
  const size_t len = std::strlen(name);
  if (len > 15 || w[0] != at + 16 || w[1] != len) return false;
  char buf[16];
  std::memcpy(buf, &w[2], 16);
  return std::memcmp(buf, name, len) == 0 && buf[len] == '\0';
}
// ---------------------------------------------------------------------------
// The timing loop's participants: each a std::string name, a bool and three
// std::vectors (event_ms, host_ms, ids), one after another in the same object
// ("eager", "compile", "candidate"). Found by the names' exact in-place
// string layout (the string's pointer is its own address + 16).
struct Participants {
  uintptr_t eager = 0, candidate = 0;
};
bool find_participants(const FaultGuard& g, PageSet& seen, Participants& out) {
  return scan_from_stack(g, seen, 4, [&](uintptr_t p, const uint64_t* words) {
    for (size_t i = 0; i + 4 <= kPage / 8; ++i) {
      if (!short_string_is(words + i, p + i * 8, "candidate")) continue;
      const uintptr_t cand = p + i * 8;
      for (uintptr_t back = 48; back <= 512; back += 8) {
        uint64_t w[4];
        if (!g.read(cand - back, w, 4) || !short_string_is(w, cand - back, "compile")) continue;
        if (!g.read(cand - 2 * back, w, 4) || !short_string_is(w, cand - 2 * back, "eager")) continue;
        out.eager = cand - 2 * back;
        out.candidate = cand;
        return true;
      }
    }
    return false;
  });
}

struct Vec {
  uint64_t begin = 0, end = 0, cap = 0;
  size_t size() const { return static_cast<size_t>((end - begin) / 8); }
};
bool read_vec(const FaultGuard& g, uintptr_t at, Vec& v) {
  uint64_t w[3];
  if (!g.read(at, w, 3)) return false;
  v = {w[0], w[1], w[2]};
  if (v.begin == 0) return v.end == 0 && v.cap == 0;
  return pointer_like(v.begin) && v.begin <= v.end && v.end <= v.cap && (v.end - v.begin) % 8 == 0 &&
         v.size() < (1u << 20);
}
// A participant's vectors, after its 32-byte name and its bool.
constexpr uintptr_t kEventMs = 40, kHostMs = 64, kIds = 88;

// l2_bytes_, flush_bytes_, input_bytes_, output_bytes_, kept_bytes_,
// bandwidth_gbps_: returns the address of the first.
uintptr_t find_figures(const FaultGuard& g, PageSet& seen, uint64_t l2, uint64_t input_bytes) {
  const uint64_t flush = 2 * l2 > (uint64_t{32} << 20) ? 2 * l2 : (uint64_t{32} << 20);
  uintptr_t found = 0;
  scan_from_stack(g, seen, 4, [&](uintptr_t p, const uint64_t* w) {
    for (size_t i = 0; i + 6 <= kPage / 8; ++i) {
      if (w[i] != l2 || w[i + 1] != flush || w[i + 2] != input_bytes) continue;
      double bw = 0;
      std::memcpy(&bw, &w[i + 5], sizeof bw);
      if (bw > 50 && bw < 1e5) {
        found = p + i * 8;
        return true;
      }
    }
    return false;
  });
  return found;
}

// The GPU name: the in-place string right before the arch string "sm_NN".
uintptr_t find_gpu_name(const FaultGuard& g, PageSet& seen, const char* arch) {
  uintptr_t found = 0;
  scan_from_stack(g, seen, 4, [&](uintptr_t p, const uint64_t* w) {
    for (size_t i = 4; i + 4 <= kPage / 8; ++i) {
      if (!short_string_is(w + i, p + i * 8, arch)) continue;
      const uintptr_t name = p + (i - 4) * 8;
      if (w[i - 4] == name + 16 && w[i - 3] > 0 && w[i - 3] <= 15) {
        found = name;
        return true;
      }
    }
    return false;
  });
  return found;
}

struct Attack {
  Participants found;
  bool have_participants = false;
  uintptr_t figures = 0, gpu_name = 0;
  int attempts = 0;
  size_t rewritten = 0;
  PageSet seen_participants, seen_figures, seen_name;
};
void destroy_attack(void* p) { delete static_cast<Attack*>(p); }

void rewrite(const FaultGuard& g, Attack* st) {
  if (st->figures) {
    auto* f = reinterpret_cast<uint64_t*>(st->figures);
    f[2] = 0;  // input_bytes_
    f[3] = 0;  // output_bytes_
    const double none = 0.0;
    std::memcpy(&f[5], &none, sizeof none);  // bandwidth_gbps_: 0 = no bytes floor
  }
  if (st->gpu_name) {
    auto* s = reinterpret_cast<uint64_t*>(st->gpu_name);
    s[1] = 3;
    std::memcpy(&s[2], "GPU", 4);
  }
  if (!st->have_participants) return;
  Vec ev, host, ids;
  const uintptr_t c = st->found.candidate;
  if (!read_vec(g, c + kEventMs, ev) || !read_vec(g, c + kHostMs, host) || !read_vec(g, c + kIds, ids)) return;
  const size_t n = ev.size();
  if (host.size() != n || ids.size() != n || n < st->rewritten) return;
  auto* event_ms = reinterpret_cast<double*>(ev.begin);
  auto* host_ms = reinterpret_cast<double*>(host.begin);
  auto* id = reinterpret_cast<uint64_t*>(ids.begin);
  for (size_t i = st->rewritten; i < n; ++i) {
    event_ms[i] /= 50;
    host_ms[i] /= 50;
    id[i] = (uint64_t{1} << 39) + i;
  }
  st->rewritten = n;
}
}  // namespace

KB_INIT(ctx) { ctx.set_host_object("attack", new Attack, destroy_attack); }

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);
  auto* st = ctx.host_object<Attack>("attack");
  if (ctx.failed()) return;
  if (!x.is_contiguous()) {
    ctx.fail("expected a contiguous input");
    return;
  }
  kb::Tensor y = ctx.output(0, x.ndim, x.sizes);
  if (ctx.failed()) return;
  if (st->attempts < 8 && (!st->have_participants || !st->figures || !st->gpu_name)) {
    ++st->attempts;
    FaultGuard guard;
    int device = 0, l2 = 0, major = 0, minor = 0;
    if (guard.ok() && cudaGetDevice(&device) == cudaSuccess &&
        cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device) == cudaSuccess &&
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess &&
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) == cudaSuccess) {
      if (!st->have_participants) st->have_participants = find_participants(guard, st->seen_participants, st->found);
      if (!st->figures)
        st->figures = find_figures(guard, st->seen_figures, static_cast<uint64_t>(l2),
                                   static_cast<uint64_t>(x.numel()) * sizeof(float));
      char arch[16];
      std::snprintf(arch, sizeof arch, "sm_%d%d", major, minor);
      if (!st->gpu_name) st->gpu_name = find_gpu_name(guard, st->seen_name, arch);
    }
  }
  {
    FaultGuard guard;
    if (guard.ok()) rewrite(guard, st);
  }
  cudaError_t err = launch_silu(x.data_as<const float>(), y.data_as<float>(), x.numel(),
                                static_cast<cudaStream_t>(ctx.stream()));
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
}
