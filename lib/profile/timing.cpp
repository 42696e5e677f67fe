// The timing phases of the candidate worker (kbprof; DESIGN.md §5, §6;
// docs/threat-model.md, "Why each figure is trustworthy").
//
// The rule: nothing that decides a reward stays in this process, where the
// candidate's code can read and write it. Every figure leaves on the result
// channel (fd 3, a pipe the parent drains) before candidate code runs again,
// and the parent paces the loop on fd 0 (a socket), one question at a time.
//
// Baselines (runBaselines, trusted: before the candidate's library is
// loaded, so no candidate code has ever run in this process): the eager
// reference and the compiled baseline, interleaved round by round on one
// stream, or, when the cache has them, a short re-check of the eager time;
// then a few null calls (the timed call's harness steps with no call inside)
// that the parent times with its own clock; then the "baselines" record:
// baseline times, the device's bandwidth, the inputs' bytes, the launch
// stream. All of it is on the channel before the library is opened.
//
// The candidate (run, after kb_init and the correctness seeds). Each timed call k:
//   "seed k"   the parent answers with a seed it drew just now (never in
//              this process before), and only once call k-1's commit is in
//              its hands
//   (harness)  inputs made from the seed on the device (task/timed_call.h),
//              outputs and scratch allocated and poisoned (verify/poison.h),
//              the L2 flushed, all of it finished on the GPU
//   "begin k"  the parent starts its clock
//   (timed)    head-start spin, CUDA event, kb_forward, CUDA event, marker,
//              synchronisation
//   "end k"    the parent stops its clock
//   (harness)  CUPTI flushed: this call's activities; the "commit" record:
//              seed, event and host times, activities, state digests and the
//              outputs' bytes. Every timed call's outputs reach the reference
//              worker, which checks each one.
// The parent's clock bounds each call from below (its window less the
// longest null call), so a speed-up can never exceed what that clock allows.
//
// The head start: without it the GPU drains the flush before the host has
// recorded the start event and launched the call's first kernel, so the
// event time includes the host's launch latency, which differs between
// processes (two modes 20-70 us apart on the H200 for the same kernel). A
// spin kernel queued before the start event keeps the GPU busy while the
// host queues the start event and the call (nvbench blocks the stream for the
// same reason).
//
// CUPTI records every kernel, memcpy and memset from set-up to the end. The
// harness pushes an external correlation id on its thread (provenance.h,
// harness_ids): its own by default, the call's around each candidate call, a
// spin's and a marker's around those. The parent decides ownership of a
// timed call's activities by structure and time (classifyTimedCall), not by
// the ids alone, which the candidate's code could push too.
//
// On the CPU (CI, CPU tasks) the same protocol runs with the host clock as
// the timer and no CUPTI: it is how the CPU tests prove it.
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "core/error.h"
#include "core/gpu_info.h"
#include "profile/timing.h"
#include "profile/baseline_cache.h"
#include "profile/provenance.h"
#include "profile/stats.h"
#include "task/timed_call.h"

#if KB_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/Sleep.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <cupti.h>
#endif

namespace kb::profile {

// The candidate worker's own helpers (lib/verify/worker_internal.h): this
// loop runs inside that worker.
using verify::Device;
using verify::finish;
using verify::firstLine;
using verify::poison;
using verify::send;
using verify::synchronize;

namespace {

// Signals: held on this thread whenever no candidate call runs (the worker's
// verify::holdSignals, from its hello record on; verify::callEntry opens them
// for the call only). kbprof's clock stops at "end K", and the commit reads
// the outputs after kbprof's answer: a handler of the candidate's, run on
// this thread while it waits for that answer, could compute the outputs
// there, past the clock (a review by attack, 2026-12-07, on the CPU), or
// while the next call is prepared (2026-12-08: a SIGALRM tick computing
// the next call's GEMM from its inputs once made, 304x over eager). Held,
// such a signal waits for the next call's window.

// External correlation ids (CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0):
// profile/provenance.h. Candidate call k is k + 1.
using harness_ids::kCompileBase;
using harness_ids::kEagerBase;
using harness_ids::kInCallBase;
using harness_ids::kMarkerBase;
using harness_ids::kSpinBase;
constexpr uint64_t kHarnessId = harness_ids::kHarness;

#if KB_WITH_CUDA
constexpr auto kExternalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;

// CUPTI hands buffers to callbacks that carry no user pointer, so the
// completed buffers wait here: the one piece of process-wide state, in the
// worker process only.
// Every timed call is drained (a forced flush hands back the buffer in use),
// so buffers are small and used again rather than allocated per call: a
// call's records take a few KiB, and a long baseline run asks for more.
struct CuptiBuffers {
  static constexpr size_t kBytes = size_t{1} << 20;
  std::mutex mutex;
  std::vector<std::pair<uint8_t*, size_t>> done;
  std::vector<uint8_t*> spare;  // drained, ready to hand out again
  uint64_t dropped = 0;
};
CuptiBuffers& cuptiBuffers() {
  static CuptiBuffers buffers;
  return buffers;
}

void CUPTIAPI onBufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = CuptiBuffers::kBytes;
  *max_records = 0;
  {
    std::lock_guard<std::mutex> lock(cuptiBuffers().mutex);
    if (!cuptiBuffers().spare.empty()) {
      *buffer = cuptiBuffers().spare.back();
      cuptiBuffers().spare.pop_back();
      return;
    }
  }
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
}

void CUPTIAPI onBufferCompleted(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t, size_t valid) {
  size_t dropped = 0;
  cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped);
  std::lock_guard<std::mutex> lock(cuptiBuffers().mutex);
  cuptiBuffers().done.push_back({buffer, valid});
  cuptiBuffers().dropped += dropped;
}

void cupti(CUptiResult r, const char* what) {
  if (r == CUPTI_SUCCESS) return;
  const char* s = nullptr;
  cuptiGetResultString(r, &s);
  throw Error(std::string("CUPTI ") + what + ": " + (s ? s : "error"));
}

void push(uint64_t id) { cuptiActivityPushExternalCorrelationId(kExternalKind, id); }
void pop() {
  uint64_t last = 0;
  cuptiActivityPopExternalCorrelationId(kExternalKind, &last);
}

std::string kernelName(const char* name) { return name ? name : "?"; }

// The fields every kernel, memcpy and memset record has; returns its
// correlation id.
template <typename Record>
uint32_t common(Activity& a, ActivityKind kind, const Record& r) {
  a.kind = kind;
  a.stream = r.streamId;
  a.start_ns = r.start;
  a.end_ns = r.end;
  return r.correlationId;
}

std::string copyKindName(uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "PtoP";
    default: return "memcpy";
  }
}
#else
void push(uint64_t) {}
void pop() {}
#endif

uint64_t tensorBytes(const std::vector<c10::IValue>& values) {
  uint64_t n = 0;
  for (const auto& v : values)
    if (v.isTensor()) n += v.toTensor().nbytes();
  return n;
}

std::string trim(std::string s) { return s.size() > 300 ? s.substr(0, 297) + "..." : s; }

// A seed from the kernel, drawn when it is needed: it is in no memory of
// this process before the call it is for. Kept below 2^63 (JSON readers
// take it as a signed integer too).
uint64_t freshSeed() {
  uint64_t s = 0;
  for (std::size_t got = 0; got < sizeof s;) {
    ssize_t n = ::getrandom(reinterpret_cast<char*>(&s) + got, sizeof s - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error(std::string("getrandom: ") + std::strerror(errno));
    got += static_cast<std::size_t>(n);
  }
  return s >> 1;
}

// One line from the parent on fd 0 (the stdin socket), at most 64 KiB.
// recv, not read: the sandbox refuses read() and write() on fd 0 once
// candidate code can run (sandbox/confine.h), so that only these socket
// calls speak on it.
std::optional<std::string> readLine(int fd) {
  std::string line;
  char c;
  while (line.size() < (64u << 10)) {
    ssize_t n = ::recv(fd, &c, 1, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    if (c == '\n') return line;
    line.push_back(c);
  }
  return std::nullopt;
}

bool writeAll(int fd, const std::string& s) {
  for (std::size_t sent = 0; sent < s.size();) {
    ssize_t n = ::send(fd, s.data() + sent, s.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    sent += static_cast<std::size_t>(n);
  }
  return true;
}

struct Participant {
  std::string name;
  bool measured = false;
  std::vector<double> event_ms, host_ms;
  std::vector<uint64_t> ids;  // external id of each timed call, in order
};

class Timing final : public verify::TimingSession, public verify::HarnessWork {
 public:
  Timing(const verify::WorkerRequest& req, const task::Task& task, const task::Reference& reference, const Device& dev,
         const task::CallInputs& inputs)
      : task_(task), reference_(reference), dev_(dev), inputs_(inputs), opts_(req.profile),
        cuda_(dev.device.is_cuda()) {
    auto opt = at::TensorOptions().device(dev.device);
    gpu_ = "cpu";
    arch_ = "cpu";
#if KB_WITH_CUDA
    if (cuda_) {
      auto index = dev.device.index();
      cudaDeviceProp* prop = at::cuda::getDeviceProperties(index);
      gpu_ = prop->name;
      arch_ = "sm_" + std::to_string(prop->major) + std::to_string(prop->minor);
      l2_bytes_ = static_cast<uint64_t>(prop->l2CacheSize);
      stream_ = c10::cuda::getCurrentCUDAStream(index);
    }
#endif

    // Baselines: cached for this task, GPU, driver, torch and baseline
    // kinds (read in runBaselines, once the candidate's format is known), or
    // measured.
    time_baselines_ = opts_.value("baselines", true);
    eager_.name = "eager";
    compile_.name = "compile";
    candidate_.name = "candidate";

    // The baselines' one fixed input set (every timed call's are fresh).
    baseline_inputs_ = inputs_.make(opts_.value("baseline_seed", uint64_t{1}));
    input_bytes_ = tensorBytes(baseline_inputs_);

#if KB_WITH_CUDA
    if (cuda_) {
      // L2 flush buffer: twice the L2 (KernelBench writes a buffer as large).
      flush_bytes_ = std::max<uint64_t>(2 * l2_bytes_, 32u << 20);
      flush_ = at::empty({static_cast<int64_t>(flush_bytes_ / 4)}, opt.dtype(at::kInt));
      marker_ = at::zeros({1}, opt.dtype(at::kInt));
      measureBandwidth();
      calibrateHeadStart(opts_.value("head_start_us", 0.0));

      // CUPTI, from here to the end. Everything this thread launches is the
      // harness's unless a call's id is pushed above it.
      cupti(cuptiActivityRegisterCallbacks(onBufferRequested, onBufferCompleted), "register callbacks");
      for (CUpti_ActivityKind k : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                   CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
                                   CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER})
        cupti(cuptiActivityEnable(k), "enable activity");
      push(kHarnessId);
      // The legacy default stream's id as CUPTI names it (a Python-format
      // candidate's <<<grid, block>>> launches run there: provenance's
      // legacy_stream), from one memset of the harness's own there.
      push(harness_ids::kLegacyProbe);
      cudaError_t probe = cudaMemsetAsync(marker_.data_ptr(), 0, sizeof(int), cudaStreamLegacy);
      pop();
      if (probe != cudaSuccess) throw Error(std::string("probing the legacy stream: ") + cudaGetErrorString(probe));
      c10::cuda::device_synchronize();
    }
#endif
    (void)opt;
  }

  verify::HarnessWork* harnessWork() override { return this; }
  // Harness work inside call k (a poison fill): its own id, which the
  // parent accepts only on the harness's fill kernel.
  void enter() override { push(kInCallBase + static_cast<uint64_t>(calls_.empty() ? 0 : calls_.size() - 1)); }
  void leave() override { pop(); }

  void beginCall(const char* kind) override {
    calls_.push_back({static_cast<int64_t>(calls_.size()), kind});
    push(static_cast<uint64_t>(calls_.size()));  // call k has id k + 1
  }
  // A call made outside run() (init, a correctness seed): its marker, then
  // its activities on the channel at once, before the worker goes on.
  void endCall() override {
    pop();
    int64_t k = static_cast<int64_t>(calls_.size()) - 1;
    marker(k);
#if KB_WITH_CUDA
    if (cuda_) {
      try {
        c10::cuda::device_synchronize();
      } catch (const c10::Error&) {
        return;  // the worker's own synchronisation reports the failure
      }
      Json rec;
      rec["type"] = "activities";
      rec["call"] = k;
      rec["kind"] = calls_.back().kind;
      Json acts = Json::array();
      for (const auto& a : drain()) acts.push_back(a.toJson());
      rec["activities"] = acts;
      send(rec);
    }
#endif
  }

  // Trusted: runs before the candidate's library is loaded.
  void runBaselines(const std::filesystem::path& library) override {
    // The worker may write large files only in this trusted phase
    // (torch.compile's preprocessed headers and kernels): the candidate's
    // limit is back before any candidate code is loaded.
    struct RestoreFileSize {
      uint64_t bytes;
      ~RestoreFileSize() {
        if (bytes == 0) return;
        struct rlimit rl;
        rl.rlim_cur = rl.rlim_max = static_cast<rlim_t>(bytes);
        if (::setrlimit(RLIMIT_FSIZE, &rl) != 0) {
          std::fprintf(stderr, "kbcheck-worker: cannot restore RLIMIT_FSIZE: %s\n", std::strerror(errno));
          finish(70);
        }
      }
    } restore{opts_.value("file_size_bytes_after", uint64_t{0})};
    if (!time_baselines_) return;
    auto t0 = Clock::now();
    int warmup = opts_.value("warmup", 3);
    bool measure = true;
    chooseBaselines(library);
    if (opts_.contains("baseline_cache_dir")) {
      key_.task_hash = opts_.value("task_hash", "");
      key_.gpu = gpu_;
      key_.driver = cuda_ ? nvidiaDriverVersion() : "";  // the parent's key: the record's "driver"
      key_.torch_version = task::torchVersion();
      key_.method = timingMethodName(cuda_ ? opts_.value("head_start_us", 0.0) : 0.0);
      key_.baselines = baselineKindsName(chosen_eager_, chosen_compile_);
      if (kindsRunModelPy(key_.baselines)) key_.model_hash = modelSourceHash(task_.bundle().dir);
      if (auto hit = readBaselineCache(opts_["baseline_cache_dir"].get<std::string>(), key_)) cached_ = *hit;
    }
    // A hit of Python baselines opens model.py's Model for the re-check
    // only: torch.compile is not run (the cached figure, or the cached
    // reason it has none, stands unless the re-check disagrees).
    if (!cached_.is_null() && eager_kind_ == "python") openPython(false);
    if (!cached_.is_null()) {
      // A cache hit is re-checked: a short run of the eager baseline here, in
      // a process no candidate has touched, must agree with the cached
      // median within noise; otherwise the cache is replaced.
      const Json& ce = cached_.value("eager", Json::object());
      double cached_median = ce.value("median_ms", 0.0);
      eager_.measured = true;
      int rounds = opts_.value("check_rounds", 10);
      for (int w = 0; w < warmup; ++w) baselineCall(eager_, false);
      for (int i = 0; i < rounds; ++i) baselineCall(eager_, true);
      SampleStats s = summarize(eager_.event_ms);
      double tolerance = std::max(opts_.value("check_tolerance", 0.05), 3 * s.ciHalfWidth());
      // Within a factor 1 + tolerance either way: a cached median far slower
      // than the re-check (which would inflate every speed-up) fails however
      // noisy the re-check was (|ratio - 1| can never exceed 1 that way).
      double ratio = cached_median > 0 ? s.median / cached_median : 0.0;
      bool agrees = ratio > 0 && std::abs(std::log(ratio)) <= std::log1p(tolerance);
      check_["cached_median_ms"] = cached_median;
      check_["check_median_ms"] = s.median;
      check_["ratio"] = ratio;
      check_["rounds"] = rounds;
      check_["tolerance"] = tolerance;
      check_["agrees"] = agrees;
      check_["replaced"] = !agrees;
      eager_ = Participant();
      eager_.name = "eager";
      if (agrees) {
        measure = false;
      } else {
        // The GPU disagrees with the cache: measure both afresh, report it
        // (Python's: opened again below, this time with torch.compile).
        cached_replaced_ = cached_;
        cached_ = Json();
      }
    }
    if (measure) {
      // The compiled package only now: a cache hit that agrees never loads it.
      if (compile_kind_ == "aoti") {
        try {
          compiled_.emplace(task_.compiled(dev_.device));
        } catch (const std::exception& e) {
          // AOTInductor's package cannot load here: torch.compile in Python
          // where the request allows it (auto), else no compile figure.
          std::string why = "compiled/" + arch_ + ".pt2 did not load: " + firstLine(e.what());
          if (opts_.value("compile_baseline", std::string("auto")) == "auto" && opts_.value("python_compile", false)) {
            compile_kind_ = "python_compile";
            compile_reason_ = why;
          } else {
            compile_error_ = why;
            compile_kind_.clear();
          }
        }
      }
      if (eager_kind_ == "python" || compile_kind_ == "python_compile") openPython(compile_kind_ == "python_compile");
      eager_.measured = true;
      compile_.measured = compiled_.has_value() || python_compile_ready_;
      std::vector<Participant*> order;
      for (Participant* p : {&eager_, &compile_})
        if (p->measured) order.push_back(p);
      for (int w = 0; w < warmup; ++w)
        for (Participant* p : order) baselineCall(*p, false);
      // The budget is the timed rounds' (not the package's load or
      // torch.compile's compilation before them).
      baseline_stop_ = loop(order, [&](Participant& p) { baselineCall(p, true); }, Clock::now(), nullptr);
    }
    closePython();
    baseline_seconds_ = since(t0);
    // The null calls: the parent's clock around the harness's own steps, to
    // bound the candidate's calls from below (profile.cpp).
    int nulls = opts_.value("null_calls", 0);
    for (int j = 0; j < nulls; ++j) nullCall(j);
    sendBaselines();
  }

  void run(kb_forward_fn forward, const kb_api& api,
           const std::function<std::unique_ptr<kb_context>()>& make_context) override {
    auto t0 = Clock::now();
    int warmup = opts_.value("warmup", 3);
    candidate_.measured = forward != nullptr;
    // The bytes of outputs the timed calls may send (the result channel's
    // share for them, sized by the parent): every one is checked.
    uint64_t keep_budget = opts_.value("keep_bytes", uint64_t{1} << 30);

    // One candidate call; `timed` adds the parent's pacing, the timers and
    // the commit.
    auto candidateCall = [&](bool timed) {
      CallParts& parts = timed ? timed_parts_ : warmup_parts_;
      auto tp = Clock::now();
      uint64_t k = timed ? timed_calls_ : 0;
      uint64_t seed = timed ? askSeed(k) : freshSeed();
      parts.ask += lap(tp);
      std::vector<c10::IValue> inputs = inputs_.make(seed);
      parts.inputs += lap(tp);
      auto c = make_context();
      c->inputs = &inputs;
      for (const auto& spec : output_specs_) {
        at::Tensor t = at::empty(spec.first, at::TensorOptions().dtype(spec.second).device(dev_.device));
        poison(t);
        c->prepared_outputs.push_back(t);
      }
      for (uint64_t bytes : scratch_sizes_) {
        at::Tensor t = at::empty({static_cast<int64_t>(bytes) + 256},
                                 at::TensorOptions().dtype(at::kByte).device(dev_.device));
        t.fill_(0xFF);
        c->prepared_scratch.push_back(t);
      }
      flushL2();
      synchronize(dev_);  // the harness's work is done before the call's window opens
      verify::scrubStack(c->stack_low);  // no bytes of the last call on the stack (worker_internal.h)
      parts.prepare += lap(tp);
      if (timed) askOk("begin " + std::to_string(k));
      parts.ask += lap(tp);
      beginCall(timed ? "timed" : "warmup");
      int64_t index = static_cast<int64_t>(calls_.size()) - 1;
      headStart(index);
      Stopwatch watch = startWatch();
      int32_t rc = verify::callEntry(forward, &api, c.get(), "kb_forward");
      stopWatch(watch);
      pop();  // the call's id (beginCall)
      marker(index);
      double event_ms = 0, host_ms = 0;
      try {
        synchronize(dev_);
        host_ms = since(watch.host) * 1e3;
        event_ms = host_ms;
#if KB_WITH_CUDA
        if (cuda_) event_ms = watch.start->elapsed_time(*watch.end);
#endif
      } catch (const c10::Error& e) {
        c->failure = firstLine(e.what_without_backtrace());
        rc = 1;
      }
      parts.window += lap(tp);
      if (timed) askOk("end " + std::to_string(k));
      parts.ask += lap(tp);
      if (rc != 0) failTiming("call " + std::to_string(index) + " (" + (timed ? "timed" : "warm-up") + "): " + c->failure);
      if (output_specs_.empty())
        for (const auto& o : c->outputs)
          if (o.defined()) output_specs_.push_back({o.sizes().vec(), o.scalar_type()});
      if (scratch_sizes_.empty()) scratch_sizes_ = c->scratch_requests;
      Json acts = Json::array();
#if KB_WITH_CUDA
      if (cuda_)
        for (const auto& a : drain()) acts.push_back(a.toJson());
#endif
      parts.drain += lap(tp);
      if (!timed) {
        if (cuda_) {
          Json rec;
          rec["type"] = "activities";
          rec["call"] = index;
          rec["kind"] = "warmup";
          rec["activities"] = acts;
          send(rec);
        }
        parts.commit += lap(tp);
        ++parts.calls;
        return;
      }
      // The commit: everything the parent and the reference judge this
      // call by, out of the process before any later candidate code runs.
      Json rec;
      rec["type"] = "commit";
      rec["call"] = k;
      rec["index"] = index;
      rec["seed"] = seed;
      rec["event_ms"] = event_ms;
      rec["host_ms"] = host_ms;
      rec["activities"] = acts;
      verify::WirePayload payload;
      uint64_t bytes = 0;
      try {
        payload = verify::describeOutputs(c->outputs, rec);
        for (const auto& o : c->outputs)
          if (o.defined()) bytes += o.nbytes();
        rec["state_digests"] = verify::stateDigests(*c->state);
      } catch (const std::exception& e) {
        failTiming(std::string("reading a timed call's outputs failed: ") + firstLine(e.what()));
      }
      rec["ok"] = true;
      send(rec, payload);
      candidate_.event_ms.push_back(event_ms);
      candidate_.host_ms.push_back(host_ms);
      output_bytes_ = bytes;
      sent_bytes_ += bytes;
      ++timed_calls_;
      parts.commit += lap(tp);
      ++parts.calls;
    };

    std::string stop = "no_candidate";
    if (candidate_.measured) {
      try {
        for (int w = 0; w < warmup; ++w) candidateCall(false);
      } catch (const std::exception& e) {
        failTiming(std::string("warm-up: ") + firstLine(e.what()));
      }
      std::vector<Participant*> order{&candidate_};
      try {
        stop = loop(order, [&](Participant&) { candidateCall(true); }, t0,
                    [&] { return sent_bytes_ + output_bytes_ > keep_budget; });
      } catch (const std::exception& e) {
        failTiming(firstLine(e.what()));
      }
      askOk("done " + std::to_string(timed_calls_));
    }
    sendTiming(stop, since(t0));
  }

 private:
  struct CallInfo {
    int64_t index;
    std::string kind;
  };
  // Where a candidate call's wall time went, summed over the calls of one
  // kind (the timing record's `parts`; nothing in it is judged): questions
  // to the parent, the inputs, outputs/scratch/L2 flush up to the drained
  // GPU, the call's window (head start, kb_forward, marker, synchronisation),
  // CUPTI's drain, and the record sent.
  struct CallParts {
    uint64_t calls = 0;
    double ask = 0, inputs = 0, prepare = 0, window = 0, drain = 0, commit = 0;
    Json toJson() const {
      return Json{{"calls", calls},           {"ask_seconds", ask},       {"inputs_seconds", inputs},
                  {"prepare_seconds", prepare}, {"window_seconds", window}, {"drain_seconds", drain},
                  {"commit_seconds", commit}};
    }
  };
  // Seconds since `t`, which moves to now.
  static double lap(Clock::time_point& t) {
    auto now = Clock::now();
    double s = std::chrono::duration<double>(now - t).count();
    t = now;
    return s;
  }
  struct Stopwatch {
    Clock::time_point host;
#if KB_WITH_CUDA
    std::optional<at::cuda::CUDAEvent> start, end;
#endif
  };

  [[noreturn]] void failTiming(const std::string& message) {
    Json rec;
    rec["type"] = "timing";
    rec["ok"] = false;
    rec["message"] = trim(message);
    send(rec);
    finish(1);
  }

  // One question to the parent on fd 0, its one-line answer. A refusal (the
  // parent saw the protocol broken) ends the worker; the parent already
  // holds the reason. An answer that is not kbprof's (something else read
  // the socket, or wrote on it) is a violation of its own.
  std::string ask(const std::string& question) {
    if (!writeAll(0, question + "\n")) failTiming("the parent is gone (asking '" + question + "')");
    std::optional<std::string> line = readLine(0);
    if (!line) failTiming("no answer from the parent to '" + question + "'");
    if (line->rfind("refused", 0) == 0) failTiming("the parent refused '" + question + "': " + *line);
    return *line;
  }
  [[noreturn]] void violation(const std::string& message) { verify::sendViolation(trim(message)); }
  void askOk(const std::string& question) {
    std::string a = ask(question);
    if (a != "ok" && a != "go")
      violation("the answer to '" + question + "' was not kbprof's ('" + trim(a) +
                "'): something other than the harness read or wrote the protocol socket");
  }
  uint64_t askSeed(uint64_t k) {
    std::string line = ask("seed " + std::to_string(k));
    try {
      Json a = Json::parse(line);
      return a.at("seed").get<uint64_t>();
    } catch (const std::exception&) {
      violation("the answer to 'seed " + std::to_string(k) + "' was not kbprof's ('" + trim(line) +
                "'): something other than the harness read or wrote the protocol socket");
    }
  }

  // The L2 flush before a call (CUDA); nothing on the CPU.
  void flushL2() {
#if KB_WITH_CUDA
    if (cuda_) flush_.zero_();
#endif
  }
  // The head start, with call `index`'s spin id. Without a head start a
  // one-element fill stands in for the spin: the parent's window of the
  // call opens where it ends (provenance.h, classifyTimedCall).
  void headStart(int64_t index) {
#if KB_WITH_CUDA
    if (cuda_) {
      push(index < 0 ? kHarnessId : kSpinBase + static_cast<uint64_t>(index));
      if (head_start_cycles_ > 0)
        at::cuda::sleep(head_start_cycles_);
      else
        marker_.fill_(0);
      pop();
    }
#endif
    (void)index;
  }
  // The end-of-call marker of call `index` on the launch stream.
  void marker(int64_t index) {
#if KB_WITH_CUDA
    if (cuda_) {
      push(kMarkerBase + static_cast<uint64_t>(index));
      marker_.fill_(static_cast<int>(index & 0x7fffffff));
      pop();
    }
#endif
    (void)index;
  }

  // A timed call's harness steps with nothing inside, paced by the parent
  // like a timed call ("null begin j", "null end j"): what the parent's
  // clock sees of a call that takes no time.
  void nullCall(int j) {
    const int64_t index = 1'000'000 + j;  // ids of their own, apart from every call's
    flushL2();
    synchronize(dev_);
    askOk("null begin " + std::to_string(j));
    headStart(index);
    Stopwatch watch = startWatch();
    stopWatch(watch);
    marker(index);
    synchronize(dev_);
    askOk("null end " + std::to_string(j));
  }

  Stopwatch startWatch() {
    Stopwatch w;
#if KB_WITH_CUDA
    if (cuda_) {
      w.start.emplace(cudaEventDefault);
      w.end.emplace(cudaEventDefault);
    }
#endif
    w.host = Clock::now();
#if KB_WITH_CUDA
    if (cuda_) w.start->record(stream_);
#endif
    return w;
  }
  // Records the end event; the event time is read after synchronising.
  void stopWatch(Stopwatch& w) {
#if KB_WITH_CUDA
    if (cuda_) w.end->record(stream_);
#endif
    (void)w;
  }

  // Rounds until every participant's median is precise, the budget is spent,
  // max_rounds is reached or `full` says the sent outputs fill their budget.
  template <typename Call>
  std::string loop(const std::vector<Participant*>& order, Call call, Clock::time_point t0,
                   const std::function<bool()>& full) {
    int min_rounds = opts_.value("min_rounds", 10);
    int max_rounds = opts_.value("max_rounds", 100);
    double target = opts_.value("target_ci", 0.01);
    double budget = opts_.value("budget_seconds", 5.0);
    for (int rounds = 0; rounds < max_rounds;) {
      // Rotate who goes first so that each follows each.
      for (std::size_t i = 0; i < order.size(); ++i) call(*order[(i + static_cast<std::size_t>(rounds)) % order.size()]);
      ++rounds;
      if (full && full()) return "keep_budget";
      if (rounds < min_rounds) continue;
      bool all = true;
      for (Participant* p : order) all = all && precise(summarize(p->event_ms), target, min_rounds);
      if (all) return "precise";
      if (since(t0) > budget) return "budget";
    }
    return "max_rounds";
  }

  void baselineCall(Participant& p, bool timed) {
    uint64_t id = (&p == &eager_ ? kEagerBase : kCompileBase) + p.ids.size() + (timed ? 0 : 1'000'000);
    flushL2();
    headStart(-1);
    Stopwatch watch = startWatch();
    push(id);
    try {
      if (&p == &eager_ && eager_kind_ == "python") {
        uint64_t bytes = pythonCall("eager");
        if (output_bytes_ == 0) output_bytes_ = bytes;
      } else if (&p == &eager_) {
        std::vector<at::Tensor> out = reference_.run(baseline_inputs_);
        if (output_bytes_ == 0)
          for (const auto& t : out) output_bytes_ += t.nbytes();
      } else if (compile_kind_ == "python_compile") {
        (void)pythonCall("compile");
      } else {
        (void)compiled_->run(baseline_inputs_);
      }
    } catch (const std::exception& e) {
      pop();
      // A baseline that cannot run is the harness's problem, not a candidate's.
      std::fprintf(stderr, "kbcheck-worker: %s baseline failed: %s\n", p.name.c_str(), firstLine(e.what()).c_str());
      finish(70);
    }
    pop();
    stopWatch(watch);
    synchronize(dev_);
    double host_ms = since(watch.host) * 1e3;
    if (!timed) return;
    double event_ms = host_ms;
#if KB_WITH_CUDA
    if (cuda_) event_ms = watch.start->elapsed_time(*watch.end);
#endif
    p.event_ms.push_back(event_ms);
    p.host_ms.push_back(host_ms);
    p.ids.push_back(id);
  }

  // Which baselines this profile times (docs/kbprof.md "Baselines"). A
  // Python-format candidate (pymodel.json beside its library) is timed
  // against model.py run by Python, eager and under torch.compile: both
  // sides pay Python's launch overhead. A native one against the LibTorch
  // reference and AOTInductor's package, or torch.compile in Python where
  // the package is missing or failed to build (the request's
  // "aoti_missing"). The request's "compile_baseline" (kbprof
  // --compile-baseline) overrides: "aoti", "python", "none".
  void chooseBaselines(const std::filesystem::path& library) {
    const bool python_candidate =
        !library.empty() && std::filesystem::exists(library.parent_path() / "pymodel.json");
    const std::string mode = opts_.value("compile_baseline", std::string("auto"));
    const bool aoti = opts_.value("compile", false);
    const std::string aoti_missing = opts_.value("aoti_missing", std::string("no AOTInductor package"));
    eager_kind_ = python_candidate ? "python" : "libtorch";
    compile_kind_.clear();
    compile_reason_.clear();
    if (mode == "none") {
      compile_error_ = "not asked (--compile-baseline none)";
    } else if (mode == "aoti") {
      if (aoti) compile_kind_ = "aoti";
      else compile_error_ = aoti_missing;
    } else if (mode == "python") {
      compile_kind_ = "python_compile";
      compile_reason_ = "asked (--compile-baseline python)";
    } else if (python_candidate) {
      compile_kind_ = "python_compile";
      compile_reason_ = "a Python-format candidate: Python's torch.compile, like for like";
    } else if (aoti) {
      compile_kind_ = "aoti";
    } else if (opts_.value("python_compile", false)) {
      compile_kind_ = "python_compile";
      compile_reason_ = aoti_missing;
    } else {
      compile_error_ = aoti_missing;
    }
    chosen_eager_ = eager_kind_;
    chosen_compile_ = compile_kind_;
  }

  // The Python baselines through the trusted adapter (lib/pymodel,
  // kb_python_baselines_open): model.py's Model with the reference's
  // weights, and with `compile` torch.compile of it, compiled here (Inductor
  // and Triton with their caches in the worker's folder, no compile worker
  // pool) and checked against eager. A compile that fails or differs is the
  // reason there is no compile figure; an eager model that cannot be built
  // is the harness's problem.
  void openPython(bool compile) {
    if (python_open_ && (!compile || python_compile_tried_)) return;
    auto tp = Clock::now();
    void* adapter = nullptr;
    try {
      adapter = verify::trustedPythonAdapter();
    } catch (const std::exception& e) {
      pythonFailed(std::string("the Python baselines: ") + firstLine(e.what()), compile);
      return;
    }
    using Open = int32_t (*)(const char*, int32_t, int32_t, const char*, const char* const*, const void*, int32_t,
                             const void*, uint64_t, double, double, char*, size_t);
    auto open = reinterpret_cast<Open>(::dlsym(adapter, "kb_python_baselines_open"));
    python_call_ = reinterpret_cast<PythonCall>(::dlsym(adapter, "kb_python_baseline_call"));
    python_close_ = reinterpret_cast<void (*)()>(::dlsym(adapter, "kb_python_baselines_close"));
    if (!open || !python_call_ || !python_close_) {
      pythonFailed("the Python adapter has no baseline entry points (kb_python_baselines_open)", compile);
      return;
    }
    python_cache_ = std::filesystem::current_path() / "python-baseline-cache";
    std::vector<task::NamedTensor> state = reference_.state();
    std::vector<std::string> names;
    std::vector<const char*> name_ptrs;
    std::vector<at::Tensor> tensors;
    for (const auto& p : state) {
      names.push_back(p.name);
      tensors.push_back(p.tensor);
    }
    for (const auto& n : names) name_ptrs.push_back(n.c_str());
    uint64_t stream = 0;
#if KB_WITH_CUDA
    if (cuda_) stream = reinterpret_cast<uint64_t>(stream_.stream());
#endif
    std::vector<char> report(8192, '\0');
    int32_t rc = open(task_.bundle().dir.c_str(), cuda_ ? 1 : 0, compile ? 1 : 0, python_cache_.c_str(), name_ptrs.data(),
                      tensors.data(), static_cast<int32_t>(tensors.size()), &baseline_inputs_, stream, 0.0, 0.0,
                      report.data(), report.size());
    if (rc != 0) {
      pythonFailed(std::string("the Python baselines: ") + report.data(), compile);
      return;
    }
    python_open_ = true;
    python_compile_tried_ = compile;
    Json rep = Json::object();
    try {
      rep = Json::parse(report.data());
    } catch (const std::exception&) {
    }
    rep["open_seconds"] = since(tp);
    // Whether this profile ran torch.compile (false: eager only, a cache
    // hit's re-check or no compile figure asked).
    rep["compile_run"] = compile;
    if (compile) {
      if (rep.contains("compile_error")) {
        compile_error_ = "python_compile: " + rep["compile_error"].get<std::string>();
        if (!compile_reason_.empty()) compile_error_ += " (" + compile_reason_ + ")";
        compile_kind_.clear();
      } else {
        python_compile_ready_ = true;
      }
    }
    python_report_ = rep;
  }

  // The Python baselines could not be built: without a Python eager
  // baseline there is nothing to compare a Python candidate with (the
  // harness's problem); without torch.compile, no compile figure.
  void pythonFailed(const std::string& why, bool compile) {
    if (eager_kind_ == "python") {
      std::fprintf(stderr, "kbcheck-worker: %s\n", why.c_str());
      finish(70);
    }
    if (compile) {
      compile_error_ = why + (compile_reason_.empty() ? "" : " (" + compile_reason_ + ")");
      compile_kind_.clear();
      // The harness's failure, not torch.compile's verdict on the task:
      // not a figure to keep (the next profile tries again).
      not_cacheable_ = "the Python baselines could not be opened: " + why;
    }
  }

  uint64_t pythonCall(const char* which) {
    char why[1024] = {0};
    uint64_t bytes = 0;
    uint64_t stream = 0;
#if KB_WITH_CUDA
    if (cuda_) stream = reinterpret_cast<uint64_t>(stream_.stream());
#endif
    if (!python_call_ || python_call_(which, &baseline_inputs_, stream, &bytes, why, sizeof why) != 0)
      throw Error(why[0] ? why : "the Python baselines are not open");
    return bytes;
  }

  // Before any candidate code: the Python baselines dropped (their models,
  // Dynamo's compiled code) and Inductor's and Triton's files removed, so
  // that no candidate can call or load them.
  void closePython() {
    if (python_close_) python_close_();
    python_close_ = nullptr;
    python_call_ = nullptr;
    python_open_ = python_compile_ready_ = python_compile_tried_ = false;
    if (!python_cache_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(python_cache_, ec);
    }
  }

  // What the trusted phase measured, on the channel before the candidate's
  // library is opened: the parent judges with these, never with anything
  // sent after candidate code ran.
  void sendBaselines() {
    std::map<uint64_t, std::vector<Activity>> by_id;
#if KB_WITH_CUDA
    if (cuda_) {
      c10::cuda::device_synchronize();
      for (const auto& a : drain()) {
        if (a.external >= kMarkerBase && a.external < kEagerBase && launch_stream_ == 0) launch_stream_ = a.stream;
        if (a.external == harness_ids::kLegacyProbe) legacy_stream_ = a.stream;
        by_id[a.external].push_back(a);
      }
    }
#endif
    Json rec;
    rec["type"] = "baselines";
    rec["timing_method"] = cuda_ ? "cuda_events" : "host_clock";
    rec["gpu"] = gpu_;
    rec["arch"] = arch_;
    rec["driver"] = cuda_ ? nvidiaDriverVersion() : "";
    rec["torch_version"] = task::torchVersion();
    rec["l2_bytes"] = l2_bytes_;
    rec["flush_bytes"] = flush_bytes_;
    rec["bandwidth_gbps"] = bandwidth_gbps_;
    rec["head_start_us"] = head_start_us_;
    rec["head_start_cycles"] = head_start_cycles_;
    rec["launch_stream"] = launch_stream_;
    rec["legacy_stream"] = legacy_stream_;
    rec["ops"] = reference_.opKinds();
    rec["input_bytes"] = input_bytes_;
    rec["reference_output_bytes"] = output_bytes_;
    rec["input_method"] = inputs_.method();
    rec["baseline_rounds"] = static_cast<int64_t>(eager_.event_ms.size());
    rec["baseline_stop"] = baseline_stop_;
    rec["baseline_seconds"] = baseline_seconds_;
    rec["baselines_cached"] = !cached_.is_null();
    if (!cached_.is_null()) rec["cached"] = cached_;
    if (!check_.is_null()) rec["baseline_check"] = check_;
    if (!cached_replaced_.is_null()) rec["cached_replaced"] = cached_replaced_;
    if (!compile_error_.empty()) rec["compile_error"] = compile_error_;
    if (!not_cacheable_.empty()) rec["not_cacheable"] = not_cacheable_;
    // Which baselines these are (docs/kbprof.md "Baselines"): the eager
    // reference as LibTorch ran it or as Python runs model.py; the compile
    // figure from AOTInductor's package or from torch.compile in Python;
    // why it is not the package, or why there is none.
    rec["baseline_kinds"] = baselineKindsName(chosen_eager_, chosen_compile_);  // the cache key's
    rec["eager_baseline"] = eager_kind_;
    rec["compile_baseline"] = compile_kind_.empty() ? Json(nullptr) : Json(compile_kind_);
    rec["compile_baseline_reason"] = compile_reason_.empty() ? Json(nullptr) : Json(compile_reason_);
    if (!python_report_.is_null()) rec["python_baselines"] = python_report_;
    for (Participant* p : {&eager_, &compile_}) {
      if (!p->measured) continue;
      Json j;
      j["event_ms"] = p->event_ms;
      j["host_ms"] = p->host_ms;
      std::vector<double> device;
      for (uint64_t id : p->ids) device.push_back(by_id.count(id) ? busyMilliseconds(by_id[id]) : 0.0);
      j["device_ms"] = cuda_ ? Json(device) : Json::array();
      rec[p->name] = j;
    }
    send(rec);
    output_bytes_ = 0;
  }

  // The end of the run: how the loop went. Nothing here is judged (the
  // commits carry every call's figures).
  void sendTiming(const std::string& stop, double seconds) {
    Json rec;
    rec["type"] = "timing";
    rec["ok"] = true;
    rec["rounds"] = static_cast<int64_t>(candidate_.event_ms.size());
    rec["timed_calls"] = timed_calls_;
    rec["sent_bytes"] = sent_bytes_;
    rec["stop"] = stop;
    rec["seconds"] = seconds;
    rec["cupti_dropped"] = dropped_;
    rec["parts"] = Json{{"warmup", warmup_parts_.toJson()}, {"timed", timed_parts_.toJson()}};
    send(rec);
  }

#if KB_WITH_CUDA
  void measureBandwidth() {
    // Device-to-device copy of 256 MiB, best of 5: read + write bytes per second.
    int64_t n = 64ll << 20;  // floats
    auto opt = at::TensorOptions().device(dev_.device).dtype(at::kFloat);
    at::Tensor a = at::ones({n}, opt), b = at::empty({n}, opt);
    double best = 0;
    for (int i = 0; i < 6; ++i) {
      at::cuda::CUDAEvent s(cudaEventDefault), e(cudaEventDefault);
      s.record(stream_);
      b.copy_(a);
      e.record(stream_);
      stream_.synchronize();
      double ms = s.elapsed_time(e);
      if (i > 0 && ms > 0) best = std::max(best, 2.0 * static_cast<double>(n) * 4 / (ms * 1e-3) / 1e9);
    }
    bandwidth_gbps_ = best;
  }

  // Converts the head start from microseconds to the spin kernel's clock
  // cycles: a spin of known cycles timed with events, the fastest of three
  // (the first kernel's launch latency lands in its event time).
  // at::cuda::sleep launches on the current stream, which the worker set to
  // the launch stream (stream_) at start-up.
  void calibrateHeadStart(double us) {
    if (us <= 0) return;
    constexpr int64_t kProbe = int64_t{4} << 20;
    double best_ms = 0;
    for (int i = 0; i < 4; ++i) {
      at::cuda::CUDAEvent s(cudaEventDefault), e(cudaEventDefault);
      s.record(stream_);
      at::cuda::sleep(kProbe);
      e.record(stream_);
      stream_.synchronize();
      double ms = s.elapsed_time(e);
      if (i > 0 && ms > 0) best_ms = best_ms == 0 ? ms : std::min(best_ms, ms);
    }
    if (best_ms <= 0) throw Error("head start: the spin kernel took no time");
    head_start_us_ = us;
    head_start_cycles_ = static_cast<int64_t>(static_cast<double>(kProbe) * us / (best_ms * 1e3));
  }

  // Everything CUPTI recorded since the last drain, with the external id
  // each was launched under (the parent decides ownership). Flushes first:
  // called after a synchronisation, so a call's records are all there.
  std::vector<Activity> drain() {
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    std::vector<std::pair<uint8_t*, size_t>> buffers;
    {
      std::lock_guard<std::mutex> lock(cuptiBuffers().mutex);
      buffers.swap(cuptiBuffers().done);
      dropped_ = cuptiBuffers().dropped;
    }
    std::unordered_map<uint32_t, uint64_t> external;  // correlation id -> external id
    std::vector<std::pair<Activity, uint32_t>> raw;    // with correlation id
    for (auto [buffer, valid] : buffers) {
      CUpti_Activity* r = nullptr;
      while (cuptiActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS) {
        Activity a;
        uint32_t corr = 0;
        switch (r->kind) {
          case CUPTI_ACTIVITY_KIND_KERNEL:
          case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
            auto* k = reinterpret_cast<CUpti_ActivityKernel10*>(r);
            corr = common(a, ActivityKind::Kernel, *k);
            a.name = kernelName(k->name);
            a.graph = k->graphId;
            break;
          }
          case CUPTI_ACTIVITY_KIND_MEMCPY: {
            auto* m = reinterpret_cast<CUpti_ActivityMemcpy6*>(r);
            corr = common(a, ActivityKind::Memcpy, *m);
            a.name = copyKindName(m->copyKind);
            a.bytes = m->bytes;
            break;
          }
          case CUPTI_ACTIVITY_KIND_MEMSET: {
            auto* m = reinterpret_cast<CUpti_ActivityMemset4*>(r);
            corr = common(a, ActivityKind::Memset, *m);
            a.name = "memset";
            a.bytes = m->bytes;
            break;
          }
          case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
            auto* x = reinterpret_cast<CUpti_ActivityExternalCorrelation*>(r);
            if (x->externalKind == kExternalKind) external[x->correlationId] = x->externalId;
            continue;
          }
          default:
            continue;
        }
        raw.push_back({a, corr});
      }
      std::lock_guard<std::mutex> lock(cuptiBuffers().mutex);
      cuptiBuffers().spare.push_back(buffer);
    }
    std::vector<Activity> out;
    for (auto& [a, corr] : raw) {
      auto it = external.find(corr);
      a.external = it == external.end() ? 0 : it->second;
      // The owner by id, for the calls outside run(); a timed call's is
      // decided by the parent (classifyTimedCall).
      a.owner = a.external == 0 ? kOwnerUnknown
                : a.external < kHarnessId ? static_cast<int64_t>(a.external - 1)
                                          : kOwnerHarness;
      out.push_back(a);
    }
    return out;
  }
#endif

  const task::Task& task_;
  const task::Reference& reference_;
  const Device& dev_;
  const task::CallInputs& inputs_;  // the worker's (verify/worker.cpp): fresh values per timed call
  Json opts_;
  bool cuda_ = false;
  std::string gpu_, arch_;
  uint64_t l2_bytes_ = 0, flush_bytes_ = 0, input_bytes_ = 0, output_bytes_ = 0, sent_bytes_ = 0;
  uint64_t timed_calls_ = 0;
  CallParts warmup_parts_, timed_parts_;
  double bandwidth_gbps_ = 0;
  double head_start_us_ = 0;
  int64_t head_start_cycles_ = 0;
#if KB_WITH_CUDA
  c10::cuda::CUDAStream stream_ = c10::cuda::getDefaultCUDAStream();
  at::Tensor flush_, marker_;
#endif
  bool time_baselines_ = true;
  BaselineKey key_;
  Json cached_, cached_replaced_, check_;
  std::string baseline_stop_;
  double baseline_seconds_ = 0;
  std::optional<task::CompiledBaseline> compiled_;
  std::string compile_error_;
  std::string not_cacheable_;  // why these baselines must not go to the cache ("": they may)
  // The baselines' kinds (chooseBaselines): eager "libtorch" or "python";
  // compile "aoti", "python_compile" or "" (none, compile_error_ says why),
  // and why it is not "aoti" when it is not.
  std::string eager_kind_ = "libtorch", compile_kind_, compile_reason_;
  std::string chosen_eager_ = "libtorch", chosen_compile_;  // before any failure: the cache key's kinds
  using PythonCall = int32_t (*)(const char*, const void*, uint64_t, uint64_t*, char*, size_t);
  PythonCall python_call_ = nullptr;
  void (*python_close_)() = nullptr;
  bool python_open_ = false, python_compile_ready_ = false, python_compile_tried_ = false;
  std::filesystem::path python_cache_;
  Json python_report_;
  std::vector<c10::IValue> baseline_inputs_;
  std::vector<std::pair<std::vector<int64_t>, at::ScalarType>> output_specs_;
  std::vector<uint64_t> scratch_sizes_;
  Participant eager_, compile_, candidate_;
  std::vector<CallInfo> calls_;
  uint32_t launch_stream_ = 0;
  uint32_t legacy_stream_ = 0;  // the legacy default stream's CUPTI id (0: not seen)
  uint64_t dropped_ = 0;
};

}  // namespace

std::unique_ptr<verify::TimingSession> prepareTiming(const verify::WorkerRequest& req, const task::Task& task,
                                             const task::Reference& reference, const Device& dev,
                                             const task::CallInputs& inputs) {
#if !KB_WITH_CUDA
  if (dev.device.is_cuda())
    throw Error("profiling on a GPU needs a CUDA build of kbcheck-worker (meson -Dtorch_cuda=true)");
#endif
  return std::make_unique<Timing>(req, task, reference, dev, inputs);
}

}  // namespace kb::profile
