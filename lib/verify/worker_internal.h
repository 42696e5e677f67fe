// Internal to the worker's translation units (worker.cpp, timing.cpp): the
// harness's per-call state behind kb_context, the device set-up and the
// helpers that send records. Includes ATen; not for torch-free code.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "core/clock.h"
#include "core/json.h"
#include "verify/worker.h"
#include "kb/solution.h"
#include "task/task.h"

namespace kb::verify {

constexpr int kResultFd = 3;
constexpr int kMaxOutputs = 64;
constexpr std::size_t kMaxMessage = 2048;

enum class Phase { Init, Forward };

// Host objects a solution's init hook left with the harness (a CUDA graph, a
// cuBLASLt plan): kept for forward, destroyed when the worker ends.
struct HostObjects {
  struct Entry {
    void* object = nullptr;
    void (*destroy)(void*) = nullptr;
  };
  std::map<std::string, Entry> by_name;
  ~HostObjects() {
    for (auto& [name, e] : by_name)
      if (e.destroy) e.destroy(e.object);
  }
};

// Brackets work the harness does while a candidate call is being traced
// (poisoning an output it allocates on the candidate's behalf), so that the
// provenance check does not count it as the candidate's. No-op when
// profiling is off.
struct HarnessWork {
  virtual ~HarnessWork() = default;
  virtual void enter() = 0;
  virtual void leave() = 0;
};

}  // namespace kb::verify

// The harness's per-call state behind the opaque kb_context.
struct kb_context {
  kb::verify::Phase phase = kb::verify::Phase::Forward;
  c10::Device device{c10::kCPU};
  const std::vector<c10::IValue>* inputs = nullptr;
  const std::vector<kb::task::NamedTensor>* params = nullptr;
  std::map<std::string, at::Tensor>* state = nullptr;
  std::vector<at::Tensor> outputs;  // by index; undefined = not allocated
  std::vector<at::Tensor> scratch;
  uint64_t scratch_bytes = 0, max_scratch = 0;
  uint64_t output_bytes = 0, max_output = 0;
  std::string failure;
  void* stream = nullptr;
  void* cublas = nullptr;
  void* cublaslt = nullptr;
  void* cudnn = nullptr;
  // Timed calls: outputs poisoned before the call (outside the timed
  // region), handed out when the shape and dtype match what is asked.
  std::vector<at::Tensor> prepared_outputs;
  // Timed calls: scratch blocks poisoned before the call, handed out in
  // order when the size asked matches (else one is made and poisoned on the
  // spot, as harness work).
  std::vector<at::Tensor> prepared_scratch;
  std::size_t scratch_taken = 0;
  std::vector<uint64_t> scratch_requests;  // the sizes asked, in order
  kb::verify::HarnessWork* harness = nullptr;
  // Host objects set in init (kb_api set_host_object), by name.
  kb::verify::HostObjects* host_objects = nullptr;
  // The lowest address of this thread's stack (claimStack), for scrubStack.
  uintptr_t stack_low = 0;
};

namespace kb::verify {

struct Device {
  c10::Device device{c10::kCPU};
  void* stream = nullptr;
  void* cublas = nullptr;
  void* cublaslt = nullptr;
  void* cudnn = nullptr;
  std::string notes;
};

// Fresh memory the solution must overwrite: NaN for floating types, a
// pattern for the others, so that an output it never writes is seen.
void poison(at::Tensor& t);
std::string firstLine(const std::string& s);
[[noreturn]] void finish(int code);
// A record's tensors, contiguous, in payload order: host ones are written as
// they lie, device ones copied through the staging buffer piece by piece.
struct WirePayload {
  std::vector<at::Tensor> tensors;
};
void send(const Json& header, const WirePayload& payload = {});
// The page-locked host buffer device tensors cross on their way to the
// channel (set once on a GPU, before confinement; without one, pieces are
// copied to ordinary host memory).
void setStagingBuffer(at::Tensor pinned);
// Sends a "violation" record (the solution broke the harness's protocol:
// hack_detected, lib/verify/launch.cpp) and ends the worker.
[[noreturn]] void sendViolation(const std::string& message);
void synchronize(const Device& d);
// The trusted Python adapter (build::pythonAdapterPath, never a copy beside
// a candidate's files), opened and its interpreter started with torch
// imported (kb_python_prestart); the same handle on every call. Throws when
// there is none or Python cannot start. Trusted phase only.
void* trustedPythonAdapter();
// Candidate calls run one after another on one thread, and an
// uninitialised local of the next call would find what the last one left
// on the stack: a result carried across calls without any global
// (testdata/solutions-cpu/stack_leftover). claimStack grows this thread's
// stack once to its limit (so it is one mapping the candidate cannot extend)
// and gives its lowest address; scrubStack, called before each candidate
// call from the frame that makes it and outside any timed window, drops
// every page below a band under that frame (zero on its next touch) and
// zeroes the band. Trusted phase, start-up: claimStack.
uintptr_t claimStack();
void scrubStack(uintptr_t stack_low);
// Candidate code runs only inside its calls. Outside them the worker's
// thread holds every signal but SIGSYS (the sandbox's), glibc's own two
// included (a raw rt_sigprocmask: pthread_sigmask leaves them open): a
// candidate's handler, run by a timer's tick or by a fault it arranged in
// harness memory (mprotect), would otherwise compute the next timed call's
// outputs while the harness prepared it, outside kbprof's clock (a review
// by attack, 2026-12-08: 304x over eager on the CPU, no thread). A signal
// that comes meanwhile waits for the next call; a fault the harness takes
// while held ends the worker with that signal (the kernel forces the
// default action), never a candidate's handler. holdSignals from the hello
// record on; callEntry opens them for the call only. On the CPU the worker
// also has no thread but this one once confined (sandbox::ConfinePolicy
// `threads`), so nothing else can take a process-wide signal or run.
void holdSignals();
// Calls an entry point; exceptions thrown through the C ABI are caught.
// Signals are open during the call and held again when it returns.
int32_t callEntry(kb_forward_fn fn, const kb_api* api, kb_context* c, const char* what);
// Fills `rec` ("outputs", "inputs", "ranges") and returns the payload of a
// "seed" record for a finished call. Throws on a read failure.
WirePayload describeCall(const kb_context& c, const std::vector<c10::IValue>& inputs,
                         const std::vector<task::NamedTensor>& params,
                         const std::map<std::string, at::Tensor>& state, Json& rec);
// Fills `rec` ("outputs") and returns the payload of a timed call's
// "commit" record: its outputs.
WirePayload describeOutputs(const std::vector<at::Tensor>& outputs, Json& rec);
// The digest of every state tensor by name (task/timed_call.h), for the
// init, seed and commit records: state is read-only in forward, and the
// reference worker compares these after every call with what init left.
Json stateDigests(const std::map<std::string, at::Tensor>& state);

// The timing phases of `kbcheck-worker candidate` when the request has a
// "profile" object (kbprof): set up before confinement (compiled baseline,
// CUPTI, L2 flush buffer, bandwidth), baselines before the candidate's
// library is loaded, the candidate after the correctness seeds. Made by the
// PrepareTiming handed to workerMain (lib/profile/timing.cpp).
class TimingSession {
 public:
  virtual ~TimingSession() = default;
  // The baselines (eager, compiled), or the re-check of cached ones. Called
  // before the candidate's library is loaded: only trusted code has run in
  // the process, so nothing a candidate does can slow them down. `library`
  // is the candidate's (empty: none): a Python-format one (pymodel.json
  // beside it) is timed against the Python baselines (docs/kbprof.md).
  virtual void runBaselines(const std::filesystem::path& library) = 0;
  // Runs the timed calls and sends the "timing" record and the sampled
  // calls' "seed" records. `make_context` gives a fresh forward context.
  // A null `forward` times the baselines only.
  virtual void run(kb_forward_fn forward, const kb_api& api,
                   const std::function<std::unique_ptr<kb_context>()>& make_context) = 0;
  // Brackets harness work inside a candidate call.
  virtual HarnessWork* harnessWork() = 0;
  // Brackets a candidate call made outside run() (kind "init", "seed"), so
  // its GPU work is traced as the candidate's.
  virtual void beginCall(const char* kind) = 0;
  virtual void endCall() = 0;
};

}  // namespace kb::verify
