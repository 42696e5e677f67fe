// The timing phase of the candidate worker (kbprof; DESIGN.md §6): the
// eager reference, the compiled baseline and the candidate timed in one
// process on one stream, interleaved round by round so that drift (clocks,
// temperature, a neighbour) hits all three alike.
//
// Each timed call:
//   (harness, untimed)  the candidate's inputs rotate: a slot gets the values
//                       of the next seed of the value pool copied in, so the
//                       pointer it sees is reused with new data; outputs are
//                       allocated and poisoned beforehand; L2 is flushed by
//                       writing a buffer of twice its size; then a spin kernel
//                       of `head_start_us` (the head start, below)
//   (timed)             CUDA event, kb_forward, CUDA event, on the launch stream
//   (harness, untimed)  an end-of-call marker kernel on the launch stream,
//                       then a stream synchronisation
// The head start: without it the GPU drains the flush before the host has
// recorded the start event and launched the call's first kernel, so the
// event time includes the host's launch latency, which differs between
// processes (two modes 20-70 us apart on the H200 for the same kernel).
// A spin kernel queued after the flush keeps the GPU busy while the host
// queues the start event and the call (nvbench blocks the stream for the
// same reason), so what the events see starts with the call's first
// kernel. Host cost inside a call (launch gaps between its kernels, a
// synchronisation) still counts once the spin is over.
//
// And, for a random sample of calls decided after the call, the outputs and
// inputs are sent back as a "seed" record, which the reference worker
// checks like any correctness seed (verify/compare.h).
//
// CUPTI records every kernel, memcpy and memset from set-up to the end.
// The harness pushes an external correlation id on its thread: its own id
// by default, the call's id around each candidate call, a baseline call's
// id around each baseline call. Activities launched from any other thread
// carry none. measure/provenance.h classifies what the candidate's calls
// launched; the device time of each call is the sum of its activities.
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <unordered_map>

#include "core/error.h"
#include "core/gpu_info.h"
#include "harness/worker_internal.h"
#include "measure/baseline_cache.h"
#include "measure/provenance.h"
#include "measure/stats.h"

#if KB_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/Sleep.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#include <cupti.h>
#endif

namespace kb {

#if !KB_WITH_CUDA

std::unique_ptr<TimingSession> prepareTiming(const WorkerRequest&, const Task&, const Reference&,
                                             const Device&) {
  throw Error("profiling needs a CUDA build of kbcheck-worker (meson -Dtorch_cuda=true)");
}

#else

namespace {

// External correlation ids (CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0).
// Candidate call k is k + 1.
constexpr uint64_t kHarnessId = 1ull << 40;
constexpr uint64_t kMarkerBase = 1ull << 41;   // + call index: end-of-call marker
constexpr uint64_t kEagerBase = 1ull << 42;    // + call index
constexpr uint64_t kCompileBase = 1ull << 43;  // + call index
constexpr auto kExternalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;

// CUPTI hands buffers to callbacks that carry no user pointer, so the
// completed buffers wait here: the one piece of process-wide state, in the
// worker process only.
struct CuptiBuffers {
  std::mutex mutex;
  std::vector<std::pair<uint8_t*, size_t>> done;
  uint64_t dropped = 0;
};
CuptiBuffers& cuptiBuffers() {
  static CuptiBuffers buffers;
  return buffers;
}

void CUPTIAPI onBufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 16u << 20;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
  *max_records = 0;
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

uint64_t tensorBytes(const std::vector<c10::IValue>& values) {
  uint64_t n = 0;
  for (const auto& v : values)
    if (v.isTensor()) n += v.toTensor().nbytes();
  return n;
}

std::string trim(std::string s) { return s.size() > 300 ? s.substr(0, 297) + "..." : s; }

struct Participant {
  std::string name;
  bool measured = false;
  std::vector<double> event_ms, host_ms;
  std::vector<uint64_t> ids;  // external id of each timed call, in order
};

class CudaTiming final : public TimingSession, public HarnessWork {
 public:
  CudaTiming(const WorkerRequest& req, const Task& task, const Reference& reference, const Device& dev)
      : task_(task), reference_(reference), dev_(dev), opts_(req.profile) {
    auto index = dev.device.index();
    cudaDeviceProp* prop = at::cuda::getDeviceProperties(index);
    gpu_ = prop->name;
    arch_ = "sm_" + std::to_string(prop->major) + std::to_string(prop->minor);
    l2_bytes_ = static_cast<uint64_t>(prop->l2CacheSize);
    stream_ = c10::cuda::getCurrentCUDAStream(index);
    auto opt = at::TensorOptions().device(dev.device);

    // Baselines: cached for this task, GPU, driver and torch, or measured.
    time_baselines_ = opts_.value("baselines", true);
    if (time_baselines_ && opts_.contains("baseline_cache_dir")) {
      key_.task_hash = opts_.value("task_hash", "");
      key_.gpu = gpu_;
      key_.driver = nvidiaDriverVersion();
      key_.torch_version = torchVersion();
      key_.method = timingMethodName(opts_.value("head_start_us", 0.0));
      if (auto hit = readBaselineCache(opts_["baseline_cache_dir"].get<std::string>(), key_)) {
        cached_ = *hit;
        time_baselines_ = false;
      }
    }
    eager_.name = "eager";
    compile_.name = "compile";
    candidate_.name = "candidate";
    candidate_.measured = true;
    if (time_baselines_) {
      eager_.measured = true;
      if (opts_.value("compile", true)) {
        try {
          compiled_.emplace(task.compiled(dev.device));
          compile_.measured = true;
        } catch (const std::exception& e) {
          compile_error_ = firstLine(e.what());
        }
      }
    }

    // Inputs: a fixed set for the baselines, a pool of value sets and the
    // rotating slots for the candidate.
    // (The baselines' inputs only when they are timed: a cached profile
    // skips making them.)
    std::vector<uint64_t> pool = opts_.at("pool_seeds").get<std::vector<uint64_t>>();
    if (pool.empty()) throw Error("profile request: no pool seeds");
    std::vector<c10::IValue> first =
        task.makeInputs(time_baselines_ ? opts_.at("baseline_seed").get<uint64_t>() : pool[0], dev.device);
    input_bytes_ = tensorBytes(first);
    if (time_baselines_) baseline_inputs_ = first;
    uint64_t budget = opts_.value("pool_bytes", uint64_t{4} << 30);
    std::size_t slots = input_bytes_ * 4 <= budget ? 2 : 1;
    std::size_t fit = input_bytes_ ? static_cast<std::size_t>(budget / input_bytes_) : pool.size() + slots;
    std::size_t values = std::max<std::size_t>(2, std::min(pool.size(), fit > slots ? fit - slots : 0));
    for (std::size_t q = 0; q < values && q < pool.size(); ++q) {
      value_seeds_.push_back(pool[q]);
      values_.push_back(q == 0 && !time_baselines_ ? std::move(first) : task.makeInputs(pool[q], dev.device));
    }
    for (std::size_t p = 0; p < slots; ++p) {
      std::vector<c10::IValue> slot;
      for (const auto& v : values_[0]) slot.push_back(v.isTensor() ? c10::IValue(v.toTensor().clone()) : v);
      slots_.push_back(std::move(slot));
    }

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
    c10::cuda::device_synchronize();
  }

  HarnessWork* harnessWork() override { return this; }
  void enter() override { push(kHarnessId); }
  void leave() override { pop(); }

  void beginCall(const char* kind) override {
    calls_.push_back({static_cast<int64_t>(calls_.size()), kind});
    push(static_cast<uint64_t>(calls_.size()));  // call k has id k + 1
  }
  void endCall() override {
    pop();
    int64_t k = static_cast<int64_t>(calls_.size()) - 1;
    push(kMarkerBase + static_cast<uint64_t>(k));
    marker_.fill_(static_cast<int>(k & 0x7fffffff));
    pop();
  }

  void run(kb_forward_fn forward, const kb_api& api,
           const std::function<std::unique_ptr<kb_context>()>& make_context) override {
    auto t0 = Clock::now();
    int warmup = opts_.value("warmup", 3);
    int min_rounds = opts_.value("min_rounds", 10);
    int max_rounds = opts_.value("max_rounds", 2000);
    double target = opts_.value("target_ci", 0.01);
    double budget = opts_.value("budget_seconds", 5.0);
    double sample_rate = opts_.value("sample_rate", 0.25);
    std::size_t max_samples = opts_.value("max_samples", std::size_t{2});
    std::mt19937_64 rng(opts_.value("sample_secret", uint64_t{0x5eed}));
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    std::vector<bool> value_sampled(values_.size(), false);

    auto fail = [&](const std::string& message) {
      Json rec;
      rec["type"] = "timing";
      rec["ok"] = false;
      rec["message"] = trim(message);
      send(rec);
      finish(1);
    };

    // One candidate call; `timed` adds events and the sample decision.
    uint64_t k = 0;
    auto candidateCall = [&](bool timed) {
      std::size_t slot = k % slots_.size(), value = k % values_.size();
      ++k;
      auto& inputs = slots_[slot];
      for (std::size_t i = 0; i < inputs.size(); ++i) {
        if (inputs[i].isTensor())
          inputs[i].toTensor().copy_(values_[value][i].toTensor());
        else
          inputs[i] = values_[value][i];
      }
      auto c = make_context();
      c->inputs = &inputs;
      for (const auto& spec : output_specs_) {
        at::Tensor t = at::empty(spec.first, at::TensorOptions().dtype(spec.second).device(dev_.device));
        poison(t);
        c->prepared_outputs.push_back(t);
      }
      flush_.zero_();
      headStart();
      at::cuda::CUDAEvent start(cudaEventDefault), end(cudaEventDefault);
      auto h0 = Clock::now();
      start.record(stream_);
      beginCall(timed ? "timed" : "warmup");
      int32_t rc = callEntry(forward, &api, c.get(), "kb_forward");
      end.record(stream_);
      endCall();
      try {
        stream_.synchronize();
        c10::cuda::device_synchronize();
      } catch (const c10::Error& e) {
        c->failure = firstLine(e.what_without_backtrace());
        rc = 1;
      }
      double host_ms = since(h0) * 1e3;
      if (rc != 0) fail("timed call " + std::to_string(k - 1) + ": " + c->failure);
      if (output_specs_.empty())
        for (const auto& o : c->outputs)
          if (o.defined()) output_specs_.push_back({o.sizes().vec(), o.scalar_type()});
      if (!timed) return;
      candidate_.event_ms.push_back(start.elapsed_time(end));
      candidate_.host_ms.push_back(host_ms);
      candidate_.ids.push_back(static_cast<uint64_t>(calls_.size()));
      output_bytes_ = 0;
      for (const auto& o : c->outputs)
        if (o.defined()) output_bytes_ += o.nbytes();
      if (!value_sampled[value] && sampled_.size() < max_samples && uniform(rng) < sample_rate) {
        value_sampled[value] = true;
        Json rec;
        rec["type"] = "seed";
        rec["seed"] = value_seeds_[value];
        rec["timed_call"] = calls_.size() - 1;
        WirePayload payload;
        try {
          payload = describeCall(*c, inputs, reference_.state(), {}, rec);
        } catch (const std::exception& e) {
          fail(std::string("reading a timed call's results failed: ") + firstLine(e.what()));
        }
        rec["ok"] = true;
        send(rec, payload);
        sampled_.push_back(value_seeds_[value]);
      }
    };

    auto baselineCall = [&](Participant& p, bool timed) {
      uint64_t id = (&p == &eager_ ? kEagerBase : kCompileBase) + p.ids.size() + (timed ? 0 : 1'000'000);
      flush_.zero_();
      headStart();
      at::cuda::CUDAEvent start(cudaEventDefault), end(cudaEventDefault);
      auto h0 = Clock::now();
      start.record(stream_);
      push(id);
      try {
        if (&p == &eager_)
          (void)reference_.run(baseline_inputs_);
        else
          (void)compiled_->run(baseline_inputs_);
      } catch (const std::exception& e) {
        pop();
        throw Error(p.name + " baseline failed: " + firstLine(e.what()));
      }
      pop();
      end.record(stream_);
      stream_.synchronize();
      if (!timed) return;
      p.event_ms.push_back(start.elapsed_time(end));
      p.host_ms.push_back(since(h0) * 1e3);
      p.ids.push_back(id);
    };

    candidate_.measured = forward != nullptr;
    std::vector<Participant*> order;
    for (Participant* p : {&eager_, &compile_, &candidate_})
      if (p->measured) order.push_back(p);
    try {
      for (int w = 0; w < warmup; ++w)
        for (Participant* p : order) p == &candidate_ ? candidateCall(false) : baselineCall(*p, false);
    } catch (const std::exception& e) {
      // A baseline that cannot run is the harness's problem, not the candidate's.
      std::fprintf(stderr, "kbcheck-worker: %s\n", firstLine(e.what()).c_str());
      finish(70);
    }

    std::string stop = "max_rounds";
    int rounds = 0;
    for (; rounds < max_rounds; ++rounds) {
      // Rotate who goes first so that each follows each.
      for (std::size_t i = 0; i < order.size(); ++i) {
        Participant* p = order[(i + static_cast<std::size_t>(rounds)) % order.size()];
        try {
          p == &candidate_ ? candidateCall(true) : baselineCall(*p, true);
        } catch (const std::exception& e) {
          std::fprintf(stderr, "kbcheck-worker: %s\n", firstLine(e.what()).c_str());
          finish(70);
        }
      }
      if (rounds + 1 < min_rounds) continue;
      bool all = true;
      for (Participant* p : order) all = all && precise(summarize(p->event_ms), target, min_rounds);
      if (all) {
        stop = "precise";
        ++rounds;
        break;
      }
      if (since(t0) > budget) {
        stop = "budget";
        ++rounds;
        break;
      }
    }

    // Collect what CUPTI recorded.
    pop();  // the harness's id
    c10::cuda::device_synchronize();
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    collect();

    Json rec;
    rec["type"] = "timing";
    rec["ok"] = true;
    rec["gpu"] = gpu_;
    rec["arch"] = arch_;
    rec["driver"] = nvidiaDriverVersion();
    rec["torch_version"] = torchVersion();
    rec["l2_bytes"] = l2_bytes_;
    rec["flush_bytes"] = flush_bytes_;
    rec["bandwidth_gbps"] = bandwidth_gbps_;
    rec["head_start_us"] = head_start_us_;
    rec["head_start_cycles"] = head_start_cycles_;
    rec["launch_stream"] = launch_stream_;
    rec["ops"] = reference_.opKinds();
    rec["input_bytes"] = input_bytes_;
    rec["output_bytes"] = output_bytes_;
    rec["rounds"] = rounds;
    rec["stop"] = stop;
    rec["seconds"] = since(t0);
    rec["slots"] = slots_.size();
    rec["value_seeds"] = value_seeds_;
    rec["sampled_seeds"] = sampled_;
    rec["cupti_dropped"] = dropped_;
    rec["baselines_cached"] = !cached_.is_null();
    if (!cached_.is_null()) {
      rec["cached"] = cached_;
    }
    if (!compile_error_.empty()) rec["compile_error"] = compile_error_;
    for (Participant* p : order) {
      Json j;
      j["event_ms"] = p->event_ms;
      j["host_ms"] = p->host_ms;
      std::vector<double> device;
      for (uint64_t id : p->ids) device.push_back(device_ms_.count(id) ? device_ms_[id] : 0.0);
      j["device_ms"] = device;
      rec[p->name] = j;
    }
    Json calls = Json::array();
    for (const auto& c : calls_)
      calls.push_back(Json::array({c.index, c.kind, marker_ns_.count(c.index) ? marker_ns_[c.index] : 0}));
    rec["calls"] = calls;
    Json acts = Json::array();
    for (const auto& a : activities_) acts.push_back(a.toJson());
    rec["activities"] = acts;
    send(rec);
  }

 private:
  struct CallInfo {
    int64_t index;
    std::string kind;
  };

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

  // at::cuda::sleep launches on the current stream, which the worker set to
  // the launch stream (stream_) at start-up.
  void headStart() {
    if (head_start_cycles_ > 0) at::cuda::sleep(head_start_cycles_);
  }

  // Turns CUPTI's buffers into owned activities: the candidate's and the
  // unowned ones kept, the baselines' summed per call, markers noted.
  void collect() {
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
      std::free(buffer);
    }
    for (auto& [a, corr] : raw) {
      auto it = external.find(corr);
      uint64_t id = it == external.end() ? 0 : it->second;
      if (id == 0) {
        a.owner = kOwnerUnknown;
      } else if (id < kHarnessId) {
        a.owner = static_cast<int64_t>(id - 1);
        device_ms_[id] += a.ms();
      } else if (id == kHarnessId) {
        continue;
      } else if (id < kEagerBase) {  // a marker
        int64_t call = static_cast<int64_t>(id - kMarkerBase);
        marker_ns_[call] = a.start_ns;
        launch_stream_ = a.stream;
        continue;
      } else {  // a baseline call
        device_ms_[id] += a.ms();
        continue;
      }
      activities_.push_back(a);
    }
  }

  const Task& task_;
  const Reference& reference_;
  const Device& dev_;
  Json opts_;
  std::string gpu_, arch_;
  uint64_t l2_bytes_ = 0, flush_bytes_ = 0, input_bytes_ = 0, output_bytes_ = 0;
  double bandwidth_gbps_ = 0;
  double head_start_us_ = 0;
  int64_t head_start_cycles_ = 0;
  c10::cuda::CUDAStream stream_ = c10::cuda::getDefaultCUDAStream();
  bool time_baselines_ = true;
  BaselineKey key_;
  Json cached_;
  std::optional<CompiledBaseline> compiled_;
  std::string compile_error_;
  std::vector<c10::IValue> baseline_inputs_;
  std::vector<uint64_t> value_seeds_, sampled_;
  std::vector<std::vector<c10::IValue>> values_, slots_;
  std::vector<std::pair<std::vector<int64_t>, at::ScalarType>> output_specs_;
  at::Tensor flush_, marker_;
  Participant eager_, compile_, candidate_;
  std::vector<CallInfo> calls_;
  std::vector<Activity> activities_;
  std::map<uint64_t, double> device_ms_;
  std::map<int64_t, uint64_t> marker_ns_;
  uint32_t launch_stream_ = 0;
  uint64_t dropped_ = 0;
};

}  // namespace

std::unique_ptr<TimingSession> prepareTiming(const WorkerRequest& req, const Task& task,
                                             const Reference& reference, const Device& dev) {
  if (!dev.device.is_cuda()) throw Error("profiling needs a CUDA device (--device cuda)");
  return std::make_unique<CudaTiming>(req, task, reference, dev);
}

#endif

}  // namespace kb
