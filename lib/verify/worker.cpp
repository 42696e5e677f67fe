// The worker side of kb/solution.h over LibTorch tensors. The only
// translation unit of the candidate worker that includes torch headers.
#include "verify/worker.h"

#include <alloca.h>
#include <dlfcn.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <csignal>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <exception>
#include <thread>
#include <utility>
#include <mutex>
#include <random>
#include <unordered_map>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <c10/util/Exception.h>

#include "core/clock.h"
#include "build/python_build.h"
#include "core/error.h"
#include "verify/dtype.h"
#include "verify/poison.h"
#include "kb/solution.h"
#include "sandbox/confine.h"
#include "task/task.h"
#include "task/timed_call.h"

#if KB_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include "verify/worker_internal.h"

namespace kb::verify {
namespace {

int32_t fail(kb_context* c, const std::string& message) {
  if (c->failure.empty()) c->failure = message.substr(0, kMaxMessage);
  return 1;
}

bool fillView(kb_context* c, const at::Tensor& t, kb_tensor* out, const std::string& what) {
  std::memset(out, 0, sizeof *out);
  if (t.dim() > KB_MAX_DIMS) {
    fail(c, what + " has " + std::to_string(t.dim()) + " dimensions, more than kb_tensor holds");
    return false;
  }
  int32_t dtype = kbDtypeOf(t.scalar_type());
  if (dtype < 0) {
    fail(c, what + " has dtype " + std::string(c10::toString(t.scalar_type())) +
                ", which kb/solution.h does not name");
    return false;
  }
  out->data = t.data_ptr();
  out->ndim = static_cast<int32_t>(t.dim());
  for (int64_t d = 0; d < t.dim(); ++d) {
    out->sizes[d] = t.size(d);
    out->strides[d] = t.stride(d);
  }
  out->dtype = dtype;
  out->device = t.is_cuda() ? KB_CUDA : KB_CPU;
  out->device_index = t.is_cuda() ? t.device().index() : 0;
  return true;
}

}  // namespace

void poison(at::Tensor& t) {
  // A payload drawn afresh for every fill (verify/poison.h): the reference
  // worker tells an unwritten element by the payload's kind, not its value.
  std::random_device rd;
  poisonFill(t, (static_cast<uint64_t>(rd()) << 32) ^ rd());
}

namespace {

// The kb_context a solution is handed is a random token, never an address:
// nothing it holds leads to the harness's objects (issue 35: a kb_context
// that held a pointer to the timing session let a candidate rewrite earlier
// calls' timings). A token lives while its call does.
struct ContextHandles {
  std::mutex mutex;
  std::unordered_map<uintptr_t, kb_context*> live;
};
ContextHandles& contextHandles() {
  static ContextHandles handles;
  return handles;
}

kb_context* openHandle(kb_context* c) {
  std::random_device rd;
  uintptr_t token = 0;
  ContextHandles& h = contextHandles();
  std::lock_guard<std::mutex> lock(h.mutex);
  do token = ((static_cast<uintptr_t>(rd()) << 32) ^ rd()) | 1;  // odd: never an object's address
  while (h.live.count(token));
  h.live[token] = c;
  return reinterpret_cast<kb_context*>(token);
}

void closeHandle(kb_context* handle) {
  ContextHandles& h = contextHandles();
  std::lock_guard<std::mutex> lock(h.mutex);
  h.live.erase(reinterpret_cast<uintptr_t>(handle));
}

// The context behind a token; a token the harness did not hand out for a
// live call is a protocol deviation (hack_detected), never a crash.
kb_context* resolveHandle(kb_context* handle) {
  ContextHandles& h = contextHandles();
  {
    std::lock_guard<std::mutex> lock(h.mutex);
    auto it = h.live.find(reinterpret_cast<uintptr_t>(handle));
    if (it != h.live.end()) return it->second;
  }
  sendViolation("the solution called the harness with a context it was not handed for this call");
}

}  // namespace

namespace {

#define KB_GUARD(c, body)                                                        \
  try {                                                                          \
    body                                                                         \
  } catch (const c10::Error& e) {                                                \
    return fail(c, e.what_without_backtrace());                                  \
  } catch (const std::exception& e) {                                            \
    return fail(c, e.what());                                                    \
  }

int32_t numInputs(const kb_context* c) {
  return c->phase == Phase::Forward && c->inputs ? static_cast<int32_t>(c->inputs->size()) : 0;
}
int32_t numParams(const kb_context* c) { return c->params ? static_cast<int32_t>(c->params->size()) : 0; }

int32_t apiNumInputs(kb_context* handle) { return numInputs(resolveHandle(handle)); }

int32_t apiInput(kb_context* handle, int32_t index, kb_value* out) {
  kb_context* c = resolveHandle(handle);
  KB_GUARD(c, {
    if (!out) return fail(c, "input: null out pointer");
    std::memset(out, 0, sizeof *out);
    if (c->phase != Phase::Forward) return fail(c, "input: the init hook never sees inputs");
    if (index < 0 || index >= numInputs(c))
      return fail(c, "input: index " + std::to_string(index) + " out of range (the task has " +
                         std::to_string(numInputs(c)) + " inputs)");
    const c10::IValue& v = (*c->inputs)[index];
    if (v.isTensor()) {
      out->kind = KB_VALUE_TENSOR;
      return fillView(c, v.toTensor(), &out->tensor, "input " + std::to_string(index)) ? 0 : 1;
    }
    if (v.isBool()) {
      out->kind = KB_VALUE_BOOL;
      out->i = v.toBool() ? 1 : 0;
    } else if (v.isInt()) {
      out->kind = KB_VALUE_INT;
      out->i = v.toInt();
    } else if (v.isDouble()) {
      out->kind = KB_VALUE_FLOAT;
      out->f = v.toDouble();
    } else {
      return fail(c, "input " + std::to_string(index) + " is a " + v.tagKind() +
                         ", which kb/solution.h cannot pass");
    }
    return 0;
  })
}

int32_t apiNumParams(kb_context* handle) { return numParams(resolveHandle(handle)); }

const char* apiParamName(kb_context* handle, int32_t index) {
  kb_context* c = resolveHandle(handle);
  if (index < 0 || index >= numParams(c)) {
    fail(c, "param_name: index " + std::to_string(index) + " out of range");
    return nullptr;
  }
  return (*c->params)[index].name.c_str();
}

int32_t apiParam(kb_context* handle, const char* name, kb_tensor* out) {
  kb_context* c = resolveHandle(handle);
  KB_GUARD(c, {
    if (!out || !name) return fail(c, "param: null argument");
    std::string n(name, strnlen(name, 512));
    for (const auto& p : *c->params)
      if (p.name == n) return fillView(c, p.tensor, out, "parameter " + n) ? 0 : 1;
    std::string known;
    for (const auto& p : *c->params) known += (known.empty() ? "" : ", ") + p.name;
    std::memset(out, 0, sizeof *out);
    return fail(c, "param: no parameter or buffer named '" + n + "' (the reference has: " +
                       (known.empty() ? "none" : known) + ")");
  })
}

// Checks a shape and dtype the solution asks for; returns the byte count.
std::optional<uint64_t> checkedBytes(kb_context* c, const char* what, int32_t ndim,
                                     const int64_t* sizes, int32_t dtype) {
  if (ndim < 0 || ndim > KB_MAX_DIMS || (ndim > 0 && !sizes)) {
    fail(c, std::string(what) + ": ndim " + std::to_string(ndim) + " is not in [0, 8]");
    return std::nullopt;
  }
  if (!scalarTypeOf(dtype)) {
    fail(c, std::string(what) + ": unknown dtype " + std::to_string(dtype));
    return std::nullopt;
  }
  uint64_t bytes = dtypeSize(dtype);
  for (int32_t d = 0; d < ndim; ++d) {
    if (sizes[d] < 0 || __builtin_mul_overflow(bytes, static_cast<uint64_t>(sizes[d]), &bytes)) {
      fail(c, std::string(what) + ": invalid size " + std::to_string(sizes[d]));
      return std::nullopt;
    }
  }
  return bytes;
}

int32_t apiAllocOutput(kb_context* handle, int32_t index, int32_t ndim, const int64_t* sizes,
                       int32_t dtype, kb_tensor* out) {
  kb_context* c = resolveHandle(handle);
  KB_GUARD(c, {
    if (!out) return fail(c, "alloc_output: null out pointer");
    std::memset(out, 0, sizeof *out);
    if (c->phase != Phase::Forward) return fail(c, "alloc_output: not available in the init hook");
    if (index < 0 || index >= kMaxOutputs)
      return fail(c, "alloc_output: index " + std::to_string(index) + " out of range");
    if (index < static_cast<int32_t>(c->outputs.size()) && c->outputs[index].defined())
      return fail(c, "alloc_output: output " + std::to_string(index) + " allocated twice");
    auto bytes = checkedBytes(c, "alloc_output", ndim, sizes, dtype);
    if (!bytes) return 1;
    if (c->output_bytes + *bytes > c->max_output)
      return fail(c, "alloc_output: " + std::to_string(*bytes) + " bytes for output " +
                         std::to_string(index) + " would exceed the limit of " +
                         std::to_string(c->max_output) + " bytes for all outputs");
    c10::IntArrayRef shape(sizes, static_cast<size_t>(ndim));
    at::Tensor t;
    if (index < static_cast<int32_t>(c->prepared_outputs.size())) {
      const at::Tensor& p = c->prepared_outputs[index];
      if (p.defined() && p.sizes() == shape && p.scalar_type() == *scalarTypeOf(dtype)) t = p;
    }
    if (!t.defined()) {
      t = at::empty(shape, at::TensorOptions().dtype(*scalarTypeOf(dtype)).device(c->device));
      if (c->harness) c->harness->enter();
      poison(t);
      if (c->harness) c->harness->leave();
    }
    c->output_bytes += *bytes;
    if (index >= static_cast<int32_t>(c->outputs.size())) c->outputs.resize(index + 1);
    c->outputs[index] = t;
    return fillView(c, t, out, "output " + std::to_string(index)) ? 0 : 1;
  })
}

int32_t apiAllocScratch(kb_context* handle, size_t bytes, void** out) {
  kb_context* c = resolveHandle(handle);
  KB_GUARD(c, {
    if (!out) return fail(c, "alloc_scratch: null out pointer");
    *out = nullptr;
    if (bytes > c->max_scratch || c->scratch_bytes + bytes > c->max_scratch)
      return fail(c, "alloc_scratch: " + std::to_string(bytes) +
                         " bytes would exceed this call's scratch limit of " +
                         std::to_string(c->max_scratch) + " bytes");
    // Poisoned before the call for timed calls (prepared, when the size
    // asked is the one a warm-up call asked), else here, as harness work:
    // scratch never carries anything from one call to the next.
    c->scratch_requests.push_back(bytes);
    at::Tensor t;
    if (c->scratch_taken < c->prepared_scratch.size() &&
        c->prepared_scratch[c->scratch_taken].numel() == static_cast<int64_t>(bytes) + 256) {
      t = c->prepared_scratch[c->scratch_taken++];
    } else {
      t = at::empty({static_cast<int64_t>(bytes) + 256}, at::TensorOptions().dtype(at::kByte).device(c->device));
      if (c->harness) c->harness->enter();
      t.fill_(0xFF);
      if (c->harness) c->harness->leave();
    }
    c->scratch_bytes += bytes;
    auto p = reinterpret_cast<uintptr_t>(t.data_ptr());
    c->scratch.push_back(std::move(t));
    *out = reinterpret_cast<void*>((p + 255) & ~uintptr_t{255});
    return 0;
  })
}

int32_t apiCreateState(kb_context* handle, const char* name, int32_t ndim, const int64_t* sizes,
                       int32_t dtype, kb_tensor* out) {
  kb_context* c = resolveHandle(handle);
  KB_GUARD(c, {
    if (!out || !name) return fail(c, "create_state: null argument");
    std::memset(out, 0, sizeof *out);
    if (c->phase != Phase::Init) return fail(c, "create_state: only the init hook creates state");
    std::string n(name, strnlen(name, 512));
    if (c->state->count(n)) return fail(c, "create_state: '" + n + "' created twice");
    auto bytes = checkedBytes(c, "create_state", ndim, sizes, dtype);
    if (!bytes) return 1;
    if (c->scratch_bytes + *bytes > c->max_scratch)
      return fail(c, "create_state: '" + n + "' would exceed the state limit of " +
                         std::to_string(c->max_scratch) + " bytes");
    c->scratch_bytes += *bytes;
    if (c->harness) c->harness->enter();  // the zero fill is the harness's work
    at::Tensor t = at::zeros(c10::IntArrayRef(sizes, static_cast<size_t>(ndim)),
                             at::TensorOptions().dtype(*scalarTypeOf(dtype)).device(c->device));
    if (c->harness) c->harness->leave();
    (*c->state)[n] = t;
    return fillView(c, t, out, "state " + n) ? 0 : 1;
  })
}

int32_t apiState(kb_context* handle, const char* name, kb_tensor* out) {
  kb_context* c = resolveHandle(handle);
  KB_GUARD(c, {
    if (!out || !name) return fail(c, "state: null argument");
    std::memset(out, 0, sizeof *out);
    std::string n(name, strnlen(name, 512));
    auto it = c->state->find(n);
    if (it == c->state->end()) return fail(c, "state: no state named '" + n + "'");
    return fillView(c, it->second, out, "state " + n) ? 0 : 1;
  })
}

void* apiStream(kb_context* handle) { return resolveHandle(handle)->stream; }
void* apiCublas(kb_context* handle) { return resolveHandle(handle)->cublas; }
void* apiCublasLt(kb_context* handle) { return resolveHandle(handle)->cublaslt; }
void* apiCudnn(kb_context* handle) { return resolveHandle(handle)->cudnn; }
void apiFail(kb_context* handle, const char* message) {
  kb_context* c = resolveHandle(handle);
  fail(c, message ? std::string(message, strnlen(message, kMaxMessage)) : "failed (no message)");
}
int32_t apiFailed(kb_context* handle) { return resolveHandle(handle)->failure.empty() ? 0 : 1; }

int32_t apiSetHostObject(kb_context* handle, const char* name, void* object, void (*destroy)(void*)) {
  kb_context* c = resolveHandle(handle);
  KB_GUARD(c, {
    if (!name) return fail(c, "set_host_object: null name");
    if (c->phase != Phase::Init) return fail(c, "set_host_object: only the init hook keeps host objects");
    if (!c->host_objects) return fail(c, "set_host_object: not available here");
    std::string n(name, strnlen(name, 512));
    if (c->host_objects->by_name.count(n)) return fail(c, "set_host_object: '" + n + "' set twice");
    HostObjects::Entry& e = c->host_objects->by_name[n];
    e.object = object;
    e.destroy = destroy;
    return 0;
  })
}

void* apiHostObject(kb_context* handle, const char* name) {
  kb_context* c = resolveHandle(handle);
  if (!name || !c->host_objects) {
    fail(c, "host_object: null name");
    return nullptr;
  }
  std::string n(name, strnlen(name, 512));
  auto it = c->host_objects->by_name.find(n);
  if (it == c->host_objects->by_name.end()) {
    fail(c, "host_object: no host object named '" + n + "' (set_host_object in the init hook)");
    return nullptr;
  }
  return it->second.object;
}

kb_api makeApi(bool cuda) {
  kb_api api;
  std::memset(&api, 0, sizeof api);
  api.abi_version = KB_ABI_VERSION;
  api.size = sizeof(kb_api);
  api.device = cuda ? KB_CUDA : KB_CPU;
  api.num_inputs = apiNumInputs;
  api.input = apiInput;
  api.num_params = apiNumParams;
  api.param_name = apiParamName;
  api.param = apiParam;
  api.alloc_output = apiAllocOutput;
  api.alloc_scratch = apiAllocScratch;
  api.create_state = apiCreateState;
  api.state = apiState;
  api.stream = apiStream;
  api.cublas = apiCublas;
  api.cublaslt = apiCublasLt;
  api.cudnn = apiCudnn;
  api.fail = apiFail;
  api.failed = apiFailed;
  api.set_host_object = apiSetHostObject;
  api.host_object = apiHostObject;
  return api;
}

}  // namespace

// ---- the worker -----------------------------------------------------------------

std::string firstLine(const std::string& s) {
  auto nl = s.find('\n');
  return nl == std::string::npos ? s : s.substr(0, nl);
}

namespace {

// The wire description of `t`, whose bytes join `out` (on its device: send
// copies them out when the record is written).
Json wireHeader(const at::Tensor& t, WirePayload& out) {
  at::Tensor c = t.detach().contiguous();
  WireTensor w;
  w.dtype = kbDtypeOf(c.scalar_type());
  w.sizes.assign(c.sizes().begin(), c.sizes().end());
  w.data_ptr = reinterpret_cast<uint64_t>(t.storage().data());
  w.storage_bytes = t.storage().nbytes();
  Json h = tensorHeader(w);
  h["nbytes"] = c.nbytes();
  out.tensors.push_back(std::move(c));
  return h;
}

Json range(const std::string& kind, const std::string& name, const at::Tensor& t) {
  Json j;
  j["kind"] = kind;
  j["name"] = name;
  j["data_ptr"] = reinterpret_cast<uint64_t>(t.storage().data());
  j["storage_bytes"] = t.storage().nbytes();
  return j;
}

}  // namespace

[[noreturn]] void finish(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  ::_exit(code);
}

namespace {
// The worker process's one result channel: the bytes written to it so far
// (writeRecord aligns each payload by them) and the staging buffer.
struct ResultChannel {
  uint64_t written = 0;
  at::Tensor staging;  // page-locked bytes (CUDA); undefined: none
};
ResultChannel& resultChannel() {
  static ResultChannel channel;
  return channel;
}
}  // namespace

void setStagingBuffer(at::Tensor pinned) { resultChannel().staging = std::move(pinned); }

void send(const Json& header, const WirePayload& payload) {
  ResultChannel& ch = resultChannel();
  bool on_host = true;
  uint64_t total = 0;
  for (const auto& t : payload.tensors) {
    on_host = on_host && t.device().is_cpu();
    total += t.nbytes();
  }
  bool ok = false;
  if (on_host) {
    std::vector<std::string_view> parts;
    for (const auto& t : payload.tensors) parts.emplace_back(static_cast<const char*>(t.data_ptr()), t.nbytes());
    ok = writeRecord(kResultFd, header, parts, &ch.written);
  } else {
    // Device tensors through the staging buffer, a piece at a time: no host
    // copy of a whole output is allocated (and faulted in) per call, and the
    // copy out of the device runs at page-locked speed.
    std::size_t index = 0;
    int64_t offset = 0;
    at::Tensor piece;  // ordinary host memory when there is no staging buffer
    auto next = [&]() -> std::string_view {
      while (index < payload.tensors.size() && offset >= static_cast<int64_t>(payload.tensors[index].nbytes())) {
        ++index;
        offset = 0;
      }
      if (index == payload.tensors.size()) return {};
      const at::Tensor& t = payload.tensors[index];
      const int64_t n = static_cast<int64_t>(t.nbytes());
      if (t.device().is_cpu()) {
        offset = n;
        return {static_cast<const char*>(t.data_ptr()), static_cast<std::size_t>(n)};
      }
      const at::Tensor bytes = t.reshape({-1}).view(at::kByte);
      int64_t len = n - offset;
      if (ch.staging.defined()) len = std::min<int64_t>(len, ch.staging.numel());
      bool staged = false;
      if (ch.staging.defined()) {
        try {
          piece = ch.staging.narrow(0, 0, len);
          piece.copy_(bytes.narrow(0, offset, len));
          staged = true;
        } catch (const c10::Error&) {
          ch.staging = at::Tensor();  // not again: ordinary host memory from here on (a sticky error fails below too)
        }
      }
      if (!staged) piece = bytes.narrow(0, offset, len).to(at::kCPU);
      offset += len;
      return {static_cast<const char*>(piece.data_ptr()), static_cast<std::size_t>(len)};
    };
    try {
      ok = writeRecordStreamed(kResultFd, header, total, next, &ch.written);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "kbcheck-worker: copying a record's tensors to the host failed: %s\n", firstLine(e.what()).c_str());
      ok = false;
    }
  }
  if (!ok) {
    std::fprintf(stderr, "kbcheck-worker: cannot write to the result channel\n");
    finish(70);
  }
}

void sendViolation(const std::string& message) {
  Json rec;
  rec["type"] = "violation";
  rec["message"] = message.substr(0, kMaxMessage);
  send(rec);
  finish(1);
}

namespace {

Device setUpDevice(const std::string& name) {
  Device d;
  d.device = c10::Device(name);
  // As the reference computes (before any baseline or candidate code runs):
  // a torch convolution or RNN the candidate keeps would otherwise run in
  // TF32 here and in fp32 there, and an unchanged copy of the reference
  // failed the strict contract (level3/39_GRU on the H100, 2026-12-06).
  task::useFullFloat32();
  if (d.device.is_cpu()) return d;
#if KB_WITH_CUDA
  if (!d.device.is_cuda()) throw Error("unsupported device " + name);
  int index = d.device.has_index() ? d.device.index() : 0;
  d.device = c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(index));
  c10::cuda::set_device(static_cast<c10::DeviceIndex>(index));
  // A first allocation initialises CUDA and torch's caching allocator, which
  // the cuBLAS handles below need for their workspaces (seen on the H200:
  // "Allocator not initialized for device" otherwise).
  (void)at::empty({1}, at::TensorOptions().device(d.device).dtype(at::kFloat));
  c10::cuda::CUDAStream stream = c10::cuda::getStreamFromPool(false, d.device.index());
  c10::cuda::setCurrentCUDAStream(stream);
  d.stream = stream.stream();
  d.cublas = at::cuda::getCurrentCUDABlasHandle();  // bound to the current stream
  d.cublaslt = at::cuda::getCurrentCUDABlasLtHandle();
  // cuDNN without its headers: the library torch loaded, if it did.
  void* lib = ::dlopen("libcudnn.so.9", RTLD_NOW | RTLD_NOLOAD);
  if (!lib) lib = ::dlopen("libcudnn.so.9", RTLD_NOW);
  if (lib) {
    using Create = int (*)(void**);
    using SetStream = int (*)(void*, void*);
    auto create = reinterpret_cast<Create>(::dlsym(lib, "cudnnCreate"));
    auto set_stream = reinterpret_cast<SetStream>(::dlsym(lib, "cudnnSetStream"));
    void* h = nullptr;
    if (create && set_stream && create(&h) == 0 && set_stream(h, d.stream) == 0) d.cudnn = h;
  }
  if (!d.cudnn) d.notes = "cudnn handle unavailable";
  // The result channel's page-locked staging buffer (send): allocated now,
  // as confinement may refuse what pinning host memory needs.
  // Without one (page-locked memory refused), outputs are copied to
  // ordinary host memory a piece at a time: slower, the same bytes.
  try {
    setStagingBuffer(at::empty({int64_t{8} << 20}, at::TensorOptions().dtype(at::kByte).pinned_memory(true)));
  } catch (const c10::Error& e) {
    d.notes += (d.notes.empty() ? "" : "; ") + std::string("no page-locked staging buffer (") +
               firstLine(e.what_without_backtrace()) + ")";
  }
  // Make sure the context and the allocator are up before confinement.
  at::empty({1}, at::TensorOptions().device(d.device)).fill_(0);
  c10::cuda::device_synchronize();
  return d;
#else
  throw Error("this kbcheck-worker was built without CUDA (meson -Dtorch_cuda=true); device " + name +
              " is unavailable");
#endif
}

}  // namespace

void synchronize(const Device& d) {
#if KB_WITH_CUDA
  if (d.device.is_cuda()) c10::cuda::device_synchronize();
#endif
}

void* trustedPythonAdapter() {
  // The worker's environment is the parent's scrubbed one, so this is the
  // installed or build tree's adapter.
  const std::filesystem::path adapter = build::pythonAdapterPath();
  if (adapter.empty()) throw Error("this worker has no Python adapter");
  void* lib = ::dlopen(adapter.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) throw Error(std::string("cannot load the Python adapter: ") + ::dlerror());
  using Prestart = int32_t (*)(char*, size_t);
  auto prestart = reinterpret_cast<Prestart>(::dlsym(lib, "kb_python_prestart"));
  if (!prestart) throw Error("the Python adapter " + adapter.string() + " has no kb_python_prestart");
  char why[1024] = {0};
  if (prestart(why, sizeof why) != 0) throw Error(std::string("starting Python: ") + why);
  return lib;
}

// A Python-format solution (pymodel.json beside its library,
// docs/solution-format.md): the trusted adapter (lib/pymodel: the installed
// copy, else the build tree's; never the copy beside the candidate's files)
// starts the interpreter and imports torch now, before confinement. Returns
// whether it did; throws when it could not.
bool prestartPython(const std::filesystem::path& library) {
  if (!std::filesystem::exists(library.parent_path() / "pymodel.json")) return false;
  try {
    trustedPythonAdapter();
  } catch (const Error& e) {
    throw Error(std::string("a Python solution: ") + e.what());
  }
  return true;
}

namespace {
constexpr uintptr_t kStackBand = 128 << 10;  // zeroed in place under the caller's frame
constexpr uintptr_t kStackMax = 64 << 20;    // claimed at most (an unlimited RLIMIT_STACK)

uintptr_t pageSize() { return static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE)); }

// Touches every page from here down to `low`, one 16 KiB frame after
// another, so that the kernel extends the stack's mapping to there; the
// lowest page it touched.
[[gnu::noinline]] uintptr_t touchDown(uintptr_t low) {
  volatile char frame[16384];
  for (std::size_t i = 0; i < sizeof frame; i += 4096) frame[i] = 0;
  const uintptr_t here = reinterpret_cast<uintptr_t>(&frame[0]);
  uintptr_t lowest = here > low + sizeof frame ? touchDown(low) : (here + pageSize() - 1) & ~(pageSize() - 1);
  frame[0] = frame[1];  // keeps the frame (no tail call)
  return lowest;
}
}  // namespace

uintptr_t claimStack() {
  struct rlimit rl;
  if (::getrlimit(RLIMIT_STACK, &rl) != 0) return 0;
  uintptr_t limit = rl.rlim_cur == RLIM_INFINITY ? kStackMax : std::min<uintptr_t>(rl.rlim_cur, kStackMax);
  char here;
  const uintptr_t top = reinterpret_cast<uintptr_t>(&here);
  // What is used above this frame (argv, environment, start-up's frames)
  // counts against the limit too: claim a quarter of a MiB less than it.
  if (limit < (1u << 20)) return 0;
  const uintptr_t low = ((top - limit + (256u << 10)) + pageSize() - 1) & ~(pageSize() - 1);
  const uintptr_t mapped = touchDown(low);  // in the mapping now: what scrubStack drops
  if (::madvise(reinterpret_cast<void*>(mapped), (top & ~(pageSize() - 1)) - kStackBand - mapped, MADV_DONTNEED) != 0)
    return 0;
  return mapped;
}

[[gnu::noinline]] void scrubStack(uintptr_t stack_low) {
  char mark;
  const uintptr_t here = reinterpret_cast<uintptr_t>(&mark);
  // Below the band: every page dropped, whatever depth the last call used.
  const uintptr_t end = (here - kStackBand) & ~(pageSize() - 1);
  if (stack_low != 0 && end > stack_low) ::madvise(reinterpret_cast<void*>(stack_low), end - stack_low, MADV_DONTNEED);
  // The band: zeroed in place, down past `end` (rounded down to its page:
  // up to a page below here - kStackBand); explicit_bzero's own frame lies
  // below it, in the dropped pages.
  const std::size_t band_bytes = kStackBand + 2 * pageSize();
  char* band = static_cast<char*>(alloca(band_bytes));
  explicit_bzero(band, band_bytes);
  asm volatile("" : : "r"(band) : "memory");
}

namespace {
// Every signal's bit but SIGSYS's (and SIGKILL's and SIGSTOP's, which the
// kernel never blocks): the kernel's 64-bit mask, set by a raw call so that
// glibc's SIGCANCEL and SIGSETXID are held too.
constexpr uint64_t kHeldSignals = ~uint64_t{0} & ~(uint64_t{1} << (SIGSYS - 1));
void setSignalMask(uint64_t mask) {
  if (::syscall(SYS_rt_sigprocmask, SIG_SETMASK, &mask, nullptr, sizeof mask) != 0) {
    std::fprintf(stderr, "kbcheck-worker: rt_sigprocmask failed: %s\n", std::strerror(errno));
    finish(70);
  }
}
}  // namespace

void holdSignals() { setSignalMask(kHeldSignals); }

int32_t callEntry(kb_forward_fn fn, const kb_api* api, kb_context* c, const char* what) {
  // The solution gets a token for `c`, valid for this call only, and
  // signals for the call only (holdSignals): a handler of its own runs
  // inside one of its calls or not at all.
  struct Token {
    kb_context* handle;
    ~Token() {
      holdSignals();
      closeHandle(handle);
    }
  } token{openHandle(c)};
  setSignalMask(0);
  // errno as a fresh call would find it: the last call's value is a few
  // bits of state kept across calls with no global of the solution's.
  errno = 0;
  try {
    int32_t rc = fn(api, token.handle);
    if (rc != 0 && c->failure.empty()) fail(c, std::string(what) + " returned " + std::to_string(rc));
    return rc != 0 || !c->failure.empty() ? 1 : 0;
  } catch (const std::exception& e) {
    return fail(c, std::string(what) + " threw an exception: " + e.what());
  } catch (...) {
    return fail(c, std::string(what) + " threw an exception");
  }
}

WirePayload describeCall(const kb_context& c, const std::vector<c10::IValue>& inputs,
                         const std::vector<task::NamedTensor>& params,
                         const std::map<std::string, at::Tensor>& state, Json& rec) {
  WirePayload payload;
  Json outs = Json::array(), ins = Json::array(), ranges = Json::array();
  for (std::size_t i = 0; i < c.outputs.size(); ++i) {
    if (!c.outputs[i].defined()) {
      Json m;
      m["index"] = i;
      m["missing"] = true;
      outs.push_back(m);
      continue;
    }
    Json h = wireHeader(c.outputs[i], payload);
    h["index"] = i;
    outs.push_back(h);
  }
  // Inputs by digest, not by value: the reference worker makes the same
  // inputs and digests them there (a 1024 x 8192 input costs a copy to the
  // host and 32 MB through the channel; its digest, one reduction on the
  // device). A candidate that can forge this record could forge the bytes.
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].isTensor()) continue;
    const at::Tensor& t = inputs[i].toTensor();
    Json h;
    h["index"] = i;
    h["dtype"] = kbDtypeOf(t.scalar_type());
    h["sizes"] = std::vector<int64_t>(t.sizes().begin(), t.sizes().end());
    h["data_ptr"] = reinterpret_cast<uint64_t>(t.storage().data());
    h["storage_bytes"] = t.storage().nbytes();
    h["digest"] = task::digestHex(task::tensorDigest(t));
    ins.push_back(h);
  }
  for (const auto& p : params) ranges.push_back(range(p.buffer ? "buffer" : "parameter", p.name, p.tensor));
  for (const auto& [name, t] : state) ranges.push_back(range("state", name, t));
  for (std::size_t i = 0; i < c.scratch.size(); ++i)
    ranges.push_back(range("scratch", std::to_string(i), c.scratch[i]));
  rec["outputs"] = outs;
  rec["inputs"] = ins;
  rec["ranges"] = ranges;
  return payload;
}

WirePayload describeOutputs(const std::vector<at::Tensor>& outputs, Json& rec) {
  WirePayload payload;
  Json outs = Json::array();
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i].defined()) {
      outs.push_back(Json{{"index", i}, {"missing", true}});
      continue;
    }
    Json h = wireHeader(outputs[i], payload);
    h["index"] = i;
    outs.push_back(h);
  }
  rec["outputs"] = outs;
  return payload;
}

Json stateDigests(const std::map<std::string, at::Tensor>& state) {
  Json j = Json::object();
  for (const auto& [name, t] : state) j[name] = task::digestHex(task::tensorDigest(t));
  return j;
}

int workerMain(int argc, char** argv, PrepareTiming prepare_timing) {
  auto t0 = Clock::now();
  if (argc != 2) {
    std::fprintf(stderr, "usage: kbcheck-worker candidate REQUEST.json (started by kbcheck verify)\n");
    return 2;
  }
  WorkerRequest req;
  std::optional<task::Task> task;
  std::optional<task::Reference> reference;
  std::vector<task::NamedTensor> params;
  Device dev;
  // The maker of fresh input sets on the device (task/timed_call.h), loaded
  // once and shared: kbprof's timed calls take theirs from it, and on a GPU
  // so do the correctness seeds, made there by the device's generator:
  // KernelBench's gigabyte inputs in milliseconds, where the CPU generator
  // takes 2.7 s a GiB. The reference worker makes the same ones
  // (compare.cpp) and checks their digests. On the CPU the seeds' inputs are
  // the bundle's canonical ones. Declared before `timing`, which refers to it.
  std::optional<task::CallInputs> call_inputs;
  std::unique_ptr<TimingSession> timing;
  // Before any thread exists: every signal but SIGSYS held, here and so in
  // every thread made from here on (LibTorch's pools, the CUDA driver's,
  // the prefetcher), which inherit this mask: a process-wide signal (a
  // candidate's timer) then finds no thread to run its handler on outside a
  // candidate call (worker_internal.h holdSignals). Measured: a LibTorch
  // pool thread of the CPU baselines ran a candidate's SIGALRM handler
  // between timed calls.
  holdSignals();
  // Before any candidate code: this thread's stack claimed whole, so that
  // scrubStack reaches every page a candidate call can use.
  const uintptr_t stack_low = claimStack();
  std::string confinement;
  std::size_t prefetched = 0;
  double prefetch_seconds = 0.0, waited_seconds = 0.0;
  Json startup_phases = Json::object();  // where start-up went, for kbprof's report
  // Start-up: trusted code only. A failure here is never the candidate's.
  try {
    req = WorkerRequest::fromJson(readJsonFile(argv[1]));
    at::set_num_threads(1);
    task.emplace(task::Task::open(req.task_dir));
    if (req.device_on_stdin) {
      // Started ahead of its GPU lease (kbserve): no CUDA call until the
      // parent names the device; nothing (EOF) means it is not needed.
      auto tw = Clock::now();
      std::optional<std::string> device = readLine(0, "the device");
      waited_seconds += since(tw);
      if (!device || device->empty()) finish(0);
      if (c10::Device d(*device); !d.is_cpu() && !d.is_cuda())  // a malformed name throws here
        throw Error("the device named on stdin is not cpu or cuda:N: '" + *device + "'");
      req.device = *device;
    }
    // On the CPU, the correctness seeds' input sets, made on other threads
    // beside the reference's loading; joined before any timing. (On a GPU
    // the seeds' and the timed calls' inputs are made on the device, one
    // set at a time: task/timed_call.h.)
    std::exception_ptr prefetch_failure;
    std::thread prefetcher;
    if (req.device == "cpu")
      prefetcher = std::thread([&] {
        try {
          auto tp = Clock::now();
          prefetched = task->prefetchInputs(req.seeds);
          prefetch_seconds = since(tp);
        } catch (...) {
          prefetch_failure = std::current_exception();
        }
      });
    auto joinPrefetch = [&] {
      if (prefetcher.joinable()) prefetcher.join();
      if (prefetch_failure) std::rethrow_exception(std::exchange(prefetch_failure, nullptr));
    };
    try {
      auto tp = Clock::now();
      dev = setUpDevice(req.device);
      startup_phases["device_seconds"] = since(tp);
      tp = Clock::now();
      reference.emplace(task->reference(dev.device));
      params = reference->state();
      if (dev.device.is_cuda() || !req.profile.is_null()) call_inputs.emplace(*task, dev.device);
      startup_phases["load_seconds"] = since(tp);
      tp = Clock::now();
      if (!req.profile.is_null()) {
        if (!prepare_timing) throw Error("this worker cannot time (no timing phase linked in): a profile request");
        timing = prepare_timing(req, *task, *reference, dev, *call_inputs);
      }
      startup_phases["timing_setup_seconds"] = since(tp);
    } catch (...) {
      if (prefetcher.joinable()) prefetcher.join();
      throw;
    }
    if (req.library_on_stdin) {
      // Ready: now the library (CandidateWorker sends its path once built;
      // nothing means it was not, and this worker is not needed).
      // First the word that its set-up is done with nothing in flight on
      // the device (CandidateWorker::awaitReady): the parent may hold the
      // library back until the GPU is quiet for the baselines and the
      // candidate (kbserve's per-GPU gate).
      synchronize(dev);
      (void)::send(0, "ready\n", 6, MSG_NOSIGNAL);
      auto tw = Clock::now();
      // One line (the socket stays open: kbprof's worker asks on it, after
      // its timed loop, which calls to send).
      std::string path = readLine(0, "the library path").value_or("");
      waited_seconds += since(tw);
      if (path.empty()) {
        if (prefetcher.joinable()) prefetcher.join();
        finish(0);
      }
      req.library = path;
    }
    // Baselines before any candidate code exists in this process, and only
    // once the library is built: the build compiles the candidate's sources
    // with a compiler per unit, so during it the candidate decides how busy
    // the CPUs are, and a launch-bound eager baseline measured then (or a
    // re-check that then disagrees and replaces the cache) would be slowed
    // by the candidate: baseline poisoning. The input sets are made first:
    // no CPU thread of ours competes with GPU timing.
    auto tj = Clock::now();
    joinPrefetch();
    startup_phases["prefetch_join_seconds"] = since(tj);
    if (timing) {
      auto tb = Clock::now();
      timing->runBaselines(req.library);
      startup_phases["baselines_seconds"] = since(tb);
    }
    bool python = false;
    if (!req.library.empty()) {
      auto tp = Clock::now();
      python = prestartPython(req.library);
      if (python) startup_phases["python_seconds"] = since(tp);
    }
    auto tc = Clock::now();
    sandbox::ConfinePolicy policy;
    policy.writable_dirs = {std::filesystem::current_path()};
    if (dev.device.is_cuda()) policy.writable_dirs.push_back("/dev");
    policy.seccomp = req.seccomp;
    policy.landlock = req.landlock;
    policy.allow_open_rdwr = req.allow_open_rdwr;
    for (const auto& h : req.hidden_dirs) policy.hidden_dirs.push_back(h);
    if (!req.library.empty()) policy.readable_within_hidden.push_back(req.library.parent_path());
    // A CPU worker needs no thread once confined: a candidate's would run
    // outside its calls (worker_internal.h holdSignals). Not yet for a
    // Python-format solution: torch.set_num_threads and Python threads are
    // judged there by the run-time outcome the Python corpus expects
    // (testdata/solutions-python threads_*), so a Python thread can still
    // work past a timed call's end on the CPU (static: py-thread).
    policy.threads = !dev.device.is_cpu() || python;
    std::string limits = sandbox::limitAfterStartup(req.memory_budget_bytes, dev.device.is_cpu(), 64);
    confinement = sandbox::confineSelf(policy) + (limits.empty() ? "" : " " + limits);
    startup_phases["confine_seconds"] = since(tc);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kbcheck-worker: start-up failed: %s\n", firstLine(e.what()).c_str());
    finish(70);
  }
  Json hello;
  hello["type"] = "hello";
  hello["startup_seconds"] = since(t0) - waited_seconds;
  hello["waited_seconds"] = waited_seconds;
  hello["inputs_prefetched"] = prefetched;
  hello["prefetch_seconds"] = prefetch_seconds;
  hello["startup_phases"] = startup_phases;
  hello["device"] = dev.device.str();
  hello["confinement"] = confinement;
  hello["notes"] = dev.notes;
  hello["pid"] = static_cast<int64_t>(::getpid());
  holdSignals();  // from here on, open only inside a candidate call
  send(hello);

  // From here on, candidate code runs in this process.
  c10::InferenceMode inference;
  const kb_api api = makeApi(dev.device.is_cuda());
  std::map<std::string, at::Tensor> state;
  HostObjects host_objects;
  auto newContext = [&](Phase phase) {
    auto c = std::make_unique<kb_context>();
    c->phase = phase;
    c->device = dev.device;
    c->params = &params;
    c->state = &state;
    c->max_scratch = req.max_scratch_bytes;
    c->max_output = req.max_output_bytes;
    c->stream = dev.stream;
    c->cublas = dev.cublas;
    c->cublaslt = dev.cublaslt;
    c->cudnn = dev.cudnn;
    c->harness = timing ? timing->harnessWork() : nullptr;
    c->stack_low = stack_low;
    c->host_objects = &host_objects;
    return c;
  };

  // kbprof --baseline-only: no candidate, the baselines' timing only.
  if (req.library.empty() && timing) {
    timing->run(nullptr, makeApi(true), [&] { return newContext(Phase::Forward); });
    Json done;
    done["type"] = "done";
    done["seconds"] = since(t0);
    send(done);
    finish(0);
  }

  Json init;
  init["type"] = "init";
  auto ti = Clock::now();
  void* lib = ::dlopen(req.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* err = ::dlerror();
    init["ok"] = false;
    init["message"] = std::string("cannot load the solution: ") + (err ? err : "unknown error");
    send(init);
    finish(1);
  }
  auto forward = reinterpret_cast<kb_forward_fn>(::dlsym(lib, "kb_forward"));
  auto init_fn = reinterpret_cast<kb_init_fn>(::dlsym(lib, "kb_init"));
  if (!forward) {
    init["ok"] = false;
    init["message"] = "the solution defines no kb_forward (use KB_FORWARD(ctx) in forward.cpp)";
    send(init);
    finish(1);
  }
  init["has_init"] = init_fn != nullptr;
  if (init_fn) {
    auto c = newContext(Phase::Init);
    scrubStack(stack_low);
    if (timing) timing->beginCall("init");
    int32_t rc = callEntry(init_fn, &api, c.get(), "kb_init");
    if (timing) timing->endCall();
    try {
      synchronize(dev);
    } catch (const c10::Error& e) {
      if (c->failure.empty()) c->failure = firstLine(e.what_without_backtrace());
      rc = 1;
    }
    if (rc != 0) {
      init["ok"] = false;
      init["message"] = c->failure;
      init["seconds"] = since(ti);
      send(init);
      finish(1);
    }
  }
  init["ok"] = true;
  init["seconds"] = since(ti);
  try {
    init["state_digests"] = stateDigests(state);
  } catch (const std::exception& e) {
    init["ok"] = false;
    init["message"] = std::string("digesting the state failed: ") + firstLine(e.what());
    send(init);
    finish(1);
  }
  send(init);

  for (uint64_t seed : req.seeds) {
    Json rec;
    rec["type"] = "seed";
    rec["seed"] = seed;
    auto ts = Clock::now();
    std::vector<c10::IValue> inputs;
    try {
      inputs = dev.device.is_cuda() ? call_inputs->make(seed) : task->makeInputs(seed, dev.device);
      synchronize(dev);
    } catch (const std::exception& e) {
      rec["ok"] = false;
      rec["message"] = std::string("input generation failed: ") + firstLine(e.what());
      send(rec);
      finish(1);
    }
    auto c = newContext(Phase::Forward);
    c->inputs = &inputs;
    scrubStack(stack_low);
    auto tf = Clock::now();
    if (timing) timing->beginCall("seed");
    int32_t rc = callEntry(forward, &api, c.get(), "kb_forward");
    if (timing) timing->endCall();
    try {
      synchronize(dev);
    } catch (const c10::Error& e) {
      fail(c.get(), firstLine(e.what_without_backtrace()));
      rc = 1;
    }
    rec["forward_seconds"] = since(tf);
    if (rc != 0) {
      rec["ok"] = false;
      rec["message"] = c->failure;
      send(rec);
      finish(1);
    }
    WirePayload payload;
    try {
      payload = describeCall(*c, inputs, params, state, rec);
      rec["state_digests"] = stateDigests(state);
    } catch (const std::exception& e) {
      rec["ok"] = false;
      rec["message"] = std::string("reading the results failed: ") + firstLine(e.what());
      send(rec);
      finish(1);
    }
    rec["ok"] = true;
    rec["seconds"] = since(ts);
    send(rec, payload);
  }
  if (timing) timing->run(forward, api, [&] { return newContext(Phase::Forward); });
  Json done;
  done["type"] = "done";
  done["seconds"] = since(t0);
  send(done);
  finish(0);
}

}  // namespace kb::verify
