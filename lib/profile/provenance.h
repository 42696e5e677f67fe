// Run-time provenance of a candidate's GPU work (DESIGN.md §5): what CUPTI
// recorded while the candidate's forward ran, checked against what it may
// launch. Torch- and CUDA-free: the worker (profile/timing.cpp) records,
// this classifies, so every rule is tested on the CPU with hand-made
// records.
//
// Every activity (kernel, memcpy, memset) of the profile is owned: the
// harness tags its own work and each candidate call with a CUPTI external
// correlation id on its thread. Rules, each a `hack_detected` with evidence:
//   foreign-kernel   a kernel in a candidate call that the solution's library
//                    does not define (elf_symbols.h) and that is not from a
//                    library allowed for the task's op class (cuBLAS/cuBLASLt
//                    kernels when the reference does a GEMM, cuDNN kernels
//                    when it does a convolution): ATen, Triton, ...
//   other-stream     work in a candidate call on a stream other than the one
//                    the harness gave it
//   after-return     work of a candidate call still running after the
//                    harness's end-of-call marker started on the launch
//                    stream (work that escaped the timer)
//   unowned-work     work no call and not the harness launched: another host
//                    thread (or a callback) that the solution started
//   skipped-work     a timed call that did not launch a kernel every verified
//                    ("seed") call launched: a result replayed from a cache
//                    (keyed by pointer or content) instead of computed
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "core/json.h"

namespace kb::profile {

enum class ActivityKind { Kernel, Memcpy, Memset };

// Who launched an activity: a candidate call (its index), the harness, or
// nobody known.
constexpr int64_t kOwnerHarness = -2;
constexpr int64_t kOwnerUnknown = -1;

struct Activity {
  ActivityKind kind = ActivityKind::Kernel;
  std::string name;         // kernel: mangled name; memcpy: "HtoD", "DtoD", ...; memset: "memset"
  uint32_t stream = 0;      // CUPTI stream id
  uint64_t start_ns = 0, end_ns = 0;
  uint64_t bytes = 0;       // memcpy / memset
  int64_t owner = kOwnerUnknown;  // candidate call index, kOwnerHarness or kOwnerUnknown
  uint32_t thread = 0;      // host thread of the launch, when known (0: unknown)

  double ms() const { return static_cast<double>(end_ns - start_ns) * 1e-6; }
  Json toJson() const;
  static Activity fromJson(const Json& j);
};

// One candidate call, as the harness bracketed it.
struct CallWindow {
  int64_t index = 0;
  uint64_t marker_start_ns = 0;  // the end-of-call marker on the launch stream (0: unknown)
  std::string kind;              // "init", "seed" (verified), "warmup", "timed"
};

struct ProvenancePolicy {
  std::set<std::string> own_kernels;  // the solution library's defined functions
  bool allow_gemm_library = false;    // cuBLAS / cuBLASLt kernels
  bool allow_conv_library = false;    // cuDNN kernels
};

struct ProvenanceFinding {
  std::string rule;      // "foreign-kernel", "other-stream", "after-return", "unowned-work"
  std::string evidence;  // one line, with the kernel's demangled name, stream, call
  Json toJson() const;
};

struct ProvenanceReport {
  std::vector<ProvenanceFinding> findings;  // empty: clean
  uint64_t activities = 0;                  // candidate activities checked
  bool ok() const { return findings.empty(); }
  Json toJson() const;
};

// The library a kernel name belongs to: "cublas", "cudnn" or "" (neither),
// judged from the (mangled or demangled) name.
std::string kernelLibrary(const std::string& name);
// "aten", "triton" or "" for the frameworks a solution must not call into.
std::string kernelFramework(const std::string& name);
// Demangled C++ name, or `name` itself when it is not a mangled name.
std::string demangle(const std::string& name);
// What an own kernel is matched on when the exact symbol differs: demangled,
// without "(anonymous namespace)::" and nvcc's "_INTERNAL_<file hash>_"
// namespace.
std::string normalizedKernelName(const std::string& name);

// Applies the rules above to every activity. At most `max_findings` are
// kept per rule (the count says how many there were).
ProvenanceReport checkProvenance(const std::vector<Activity>& activities,
                                 const std::vector<CallWindow>& calls, uint32_t launch_stream,
                                 const ProvenancePolicy& policy, std::size_t max_findings = 5);

// Per-kernel breakdown of the candidate's calls: name (demangled), calls,
// total and mean milliseconds, share of the candidate's device time.
struct KernelStat {
  std::string name;
  uint64_t calls = 0;
  double total_ms = 0, mean_ms = 0, share = 0;
  Json toJson() const;
};
std::vector<KernelStat> kernelBreakdown(const std::vector<Activity>& activities);

}  // namespace kb::profile
