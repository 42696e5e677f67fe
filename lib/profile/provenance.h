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
//   before-start     work of a timed call that began before the call's start
//                    event (another stream running beside the head start)
// A kernel of a CUDA graph on another stream (a graph's parallel branches
// run on streams of the graph's own) is not other-stream when it ran wholly
// inside its call's window: between the start event and the marker (a call
// outside the timed loop, which has no start event: before the marker).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
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
  uint64_t external = 0;    // the CUPTI external correlation id pushed over its launch (0: none)
  uint32_t graph = 0;       // the CUDA graph it ran in (0: none)

  double ms() const { return static_cast<double>(end_ns - start_ns) * 1e-6; }
  Json toJson() const;
  static Activity fromJson(const Json& j);
};

// One candidate call, as the harness bracketed it.
struct CallWindow {
  int64_t index = 0;
  uint64_t marker_start_ns = 0;  // the end-of-call marker on the launch stream (0: unknown)
  std::string kind;              // "init", "seed" (verified), "warmup", "timed"
  uint64_t start_ns = 0;         // timed calls: the end of the head-start spin, where the start event fires (0: unknown)
};

// The external correlation ids the harness pushes around its own work on
// the GPU (lib/profile/timing.cpp). Call k's own launches carry k + 1.
namespace harness_ids {
constexpr uint64_t kHarness = 1ull << 40;      // the harness's work between calls
constexpr uint64_t kLegacyProbe = kHarness + 1;  // the harness's probe of the legacy default stream's id
constexpr uint64_t kMarkerBase = 1ull << 41;   // + call index: the end-of-call marker
constexpr uint64_t kEagerBase = 1ull << 42;    // + baseline call index
constexpr uint64_t kCompileBase = 1ull << 43;  // + baseline call index
constexpr uint64_t kSpinBase = 1ull << 44;     // + call index: the head-start spin before a timed call
constexpr uint64_t kInCallBase = 1ull << 45;   // + call index: harness work inside a call (a poison fill)
}  // namespace harness_ids

// What the parent makes of one timed call's activities, as its commit
// record carried them (raw: with the external ids the worker's CUPTI
// recorded). Ownership is decided by structure and time, not by the ids
// alone, because the candidate's code can push any id: exactly one spin and
// one marker of this call's ids; harness work (kHarness, earlier calls' ids)
// only where it ended before the spin started; in-call harness work only
// when it is the harness's poison fill; everything else is the call's own,
// whatever id it carries.
struct TimedCallActivities {
  CallWindow window;                   // index, kind "timed", start_ns (spin end), marker_start_ns
  std::vector<Activity> owned;         // the call's, owner = window.index
  uint32_t marker_stream = 0;          // the stream the harness's marker ran on
  std::vector<std::string> problems;   // protocol findings ("harness-id"): the ids were tampered with
};
TimedCallActivities classifyTimedCall(const std::vector<Activity>& raw, int64_t index);

// The time the GPU spent on `activities`: the length of the union of their
// intervals (overlapping kernels, programmatic dependent launch and a
// graph's parallel branches count once), in milliseconds.
double busyMilliseconds(const std::vector<Activity>& activities);

struct ProvenancePolicy {
  std::set<std::string> own_kernels;  // the solution library's defined functions
  // The legacy default stream's id (0: none accepted): a Python-format
  // candidate's <<<grid, block>>> launches run there, and the trusted
  // adapter orders that stream inside the call (it waits for the call's
  // start; the call's stream waits for it before the outputs are copied),
  // so its work inside the call's window is the call's, not other-stream.
  uint32_t legacy_stream = 0;
  bool allow_gemm_library = false;    // cuBLAS / cuBLASLt kernels
  bool allow_conv_library = false;    // cuDNN kernels
  // Torch operations allowed (the `kernelbench` policy's Python-format
  // candidate): any kernel that is not the candidate's own is library work
  // (ATen, cuBLAS, cuDNN, torch's kernels outside namespace at), counted in
  // the own-kernel share and not a foreign-kernel finding. Triton kernels
  // stay foreign: torch.compile and Triton are refused by the Python rules
  // under every policy (py-compiler), and this is their run-time check.
  // kbprof does not set it yet (docs/kbprof.md, "Own kernels' share").
  bool torch_ops_allowed = false;
};

struct ProvenanceFinding {
  std::string rule;      // "foreign-kernel", "other-stream", "after-return", "unowned-work"
  std::string evidence;  // one line, with the kernel's demangled name, stream, call
  Json toJson() const;
};

struct ProvenanceReport {
  std::vector<ProvenanceFinding> findings;  // empty: clean
  uint64_t activities = 0;                  // candidate activities checked
  // Information, never a verdict: the own kernels' share of the timed
  // calls' GPU time (ownKernelShare below); null when not computed.
  Json own_kernel_share;
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
// total and mean milliseconds, share of the candidate's device time, and,
// when the candidate's own code is given (`own`), the kernel's origin
// (kernelOrigin below).
struct OwnCode;
struct KernelStat {
  std::string name;
  uint64_t calls = 0;
  double total_ms = 0, mean_ms = 0, share = 0;
  std::string origin;  // "own", "aten", "triton", "cublas", "cudnn", "other", "copy"; "" when not attributed
  Json toJson() const;
};
std::vector<KernelStat> kernelBreakdown(const std::vector<Activity>& activities, const OwnCode* own = nullptr);

// The candidate's own code, whose kernels count as its own in the share
// below: a native solution's library (forward.cpp and its .cu files, built
// into solution.so), or a Python solution's load_inline extensions
// (pymodel.json beside the trusted adapter, which the build copied in as
// solution.so, lists them), never the adapter itself.
struct OwnCode {
  std::string from = "none";            // "solution_library", "extension_libraries", "none"
  std::vector<std::string> libraries;   // the files read, relative to the library's folder
  std::set<std::string> kernels;        // their defined functions (kernels' host stubs among them)
  std::set<std::string> normalized;     // the same, normalizedKernelName'd
  void add(const std::set<std::string>& functions);
  bool owns(const std::string& kernel_name) const;
};
// Reads the own code of the solution library at `library` (empty: none).
// Throws kb::Error when a library named there cannot be read.
OwnCode readOwnCode(const std::string& library);

// Who wrote a kernel of a candidate call: "own" (a function the candidate's
// own code defines, exactly or normalized), else the framework or library
// its name belongs to ("aten", "triton", "cublas", "cudnn"), else "other";
// memcpys and memsets are "copy".
std::string kernelOrigin(const Activity& a, const OwnCode& own);

// The share of the candidate's timed GPU time spent in its own kernels
// (DESIGN.md §5; docs/kbprof.md, provenance.own_kernel_share): durations
// summed over the timed calls' activities (each activity's own length, so
// kernels that overlap each count in full), split by kernelOrigin.
struct OwnKernelShare {
  std::string own_from = "none";        // OwnCode::from
  std::vector<std::string> own_libraries;
  uint64_t timed_calls = 0;             // calls the activities came from
  double own_ms = 0, library_ms = 0, copy_ms = 0;
  std::map<std::string, double> library_by_origin;  // "aten", "triton", "cublas", "cudnn", "other" -> ms
  uint64_t own_kernels = 0, library_kernels = 0;    // distinct kernel names
  // Kernels counted as own whose names are also a framework's or a
  // library's (an ATen template instantiated in an extension, or a name
  // chosen to look like one): CUPTI names the kernel, not the module it
  // came from, so the attribution is by name alone (docs/kbprof.md).
  struct Ambiguous {
    std::string name, also;
    double ms = 0;
  };
  std::vector<Ambiguous> ambiguous;
  double ambiguous_ms = 0;
  // own_ms / (own_ms + library_ms); nullopt when the timed calls ran no kernel.
  std::optional<double> share() const;
  Json toJson() const;
};
// `activities`: the timed calls' (owner >= 0); others are skipped.
OwnKernelShare ownKernelShare(const std::vector<Activity>& activities, const OwnCode& own);

}  // namespace kb::profile
