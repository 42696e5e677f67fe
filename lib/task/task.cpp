// The one translation unit of lib/task that includes the heavy torch headers.
#include "task/task.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <mutex>
#include <set>
#include <atomic>
#include <map>
#include <thread>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#include <torch/csrc/jit/python/update_graph_executor_opt.h>
#include <torch/headeronly/version.h>
#include <torch/cuda.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/script.h>

#include "core/error.h"
#include "task/jit_inline.h"

namespace fs = std::filesystem;

namespace kb::task {
namespace {

// TorchScript's graph executor would fuse and specialise the reference after
// a few calls; the eager baseline must run op by op like Python eager, so
// optimisation is switched off once, before the first reference is loaded.
void plainInterpreter() {
  static std::once_flag once;
  std::call_once(once, [] { torch::jit::setGraphExecutorOptimize(false); });
}

at::ScalarType parseDtype(const std::string& d) {
  if (d == "float32") return at::kFloat;
  if (d == "float16") return at::kHalf;
  if (d == "bfloat16") return at::kBFloat16;
  if (d == "float64") return at::kDouble;
  if (d == "int8") return at::kChar;
  if (d == "uint8") return at::kByte;
  if (d == "int16") return at::kShort;
  if (d == "int32") return at::kInt;
  if (d == "int64") return at::kLong;
  if (d == "bool") return at::kBool;
  throw Error("unknown dtype " + d);
}

}  // namespace

namespace {

// splitmix64: the per-seed stream of the domain draw's choices (integer
// arithmetic, the same in every process and on every machine).
uint64_t splitmix(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double unitInterval(uint64_t& state) { return static_cast<double>(splitmix(state) >> 11) * 0x1.0p-53; }

at::Generator privateGenerator(c10::Device device, uint64_t seed) {
  at::Generator gen = device.is_cpu()
                          ? at::detail::createCPUGenerator(seed)
                          : at::detail::getCUDAHooks().getNewGenerator(device.has_index() ? device.index() : 0);
  gen.set_current_seed(seed);
  return gen;
}

}  // namespace

void applyDomainDraw(std::vector<c10::IValue>& inputs, uint64_t seed, bool scalars) {
  if (!isDomainSeed(seed)) return;
  torch::NoGradGuard no_grad;
  uint64_t state = seed;
  std::set<const void*> done;  // storages already transformed
  for (auto& v : inputs) {
    // A float scalar (a scale factor, a bound) is rescaled too, by 2^u, u
    // in [-1, 1]: a solution that takes get_inputs' one value for granted
    // is wrong elsewhere in the operator's domain. Ints (sizes, dims,
    // indices) and bools stay.
    if (v.isDouble()) {
      (void)splitmix(state);
      const double u = unitInterval(state), x = v.toDouble();
      if (scalars && std::isfinite(x) && x != 0.0) v = c10::IValue(x * std::exp2(-1.0 + 2.0 * u));
      continue;
    }
    if (!v.isTensor()) continue;
    at::Tensor t = v.toTensor();
    // Drawn for every input in order, so an input's draw never depends on
    // what the others hold.
    const uint64_t key = splitmix(state);
    const double u01 = unitInterval(state);
    if (!t.defined() || !at::isFloatingType(t.scalar_type()) || t.numel() == 0) continue;
    if (!t.has_storage() || !done.insert(t.storage().data()).second) continue;
    // The block of memory the tensor spans (strides are never negative in
    // ATen): the tensor itself when dense, the underlying row of an
    // expanded one, so in-place ops never write one element twice.
    int64_t extent = 1;
    for (int64_t d = 0; d < t.dim(); ++d) extent += (t.size(d) - 1) * t.stride(d);
    at::Tensor block = t.as_strided({extent}, {1}, t.storage_offset());
    // A few distinct values in an even sample: redrawn over their range.
    const int64_t step = std::max<int64_t>(1, extent / 4096);
    at::Tensor sample = std::get<0>(block.slice(0, 0, extent, step).sort());
    const int64_t n = sample.numel();
    const int64_t distinct = 1 + (n > 1 ? sample.slice(0, 1).ne(sample.slice(0, 0, n - 1)).sum().item<int64_t>() : 0);
    if (distinct <= 16 && 2 * distinct <= n) {
      auto [lo_t, hi_t] = at::aminmax(block);
      double lo = lo_t.item<double>(), hi = hi_t.item<double>();
      if (lo == hi) {
        const double c = lo;
        lo = c > 0 ? c / 2 : c < 0 ? 2 * c : -1.0;
        hi = c > 0 ? 2 * c : c < 0 ? c / 2 : 1.0;
      }
      if (std::isfinite(lo) && std::isfinite(hi)) {
        at::Generator gen = privateGenerator(t.device(), key);
        block.uniform_(lo, hi, gen);
      }
    }
    // A positive factor 2^u.
    const double top = t.scalar_type() == at::kHalf ? 1.0 : 3.0;
    block.mul_(std::exp2(-3.0 + (top + 3.0) * u01));
  }
}

std::mutex& torchSeedMutex() {
  static std::mutex m;
  return m;
}

std::vector<c10::IValue> specInputs(const std::vector<InputSpec>& specs, at::Generator& gen, c10::Device device) {
  std::vector<c10::IValue> values;
  for (const InputSpec& s : specs) {
    if (s.kind == "tensor") values.emplace_back(specTensor(s, gen, device));
    else if (s.kind == "int") values.emplace_back(static_cast<int64_t>(s.value));
    else if (s.kind == "float") values.emplace_back(s.value);
    else values.emplace_back(s.value != 0.0);
  }
  return values;
}

std::vector<c10::IValue> runGetInputs(torch::jit::Module& get_inputs, uint64_t seed, const std::string& where) {
  c10::IValue out;
  {
    std::lock_guard<std::mutex> lock(torchSeedMutex());
    torch::NoGradGuard no_grad;
    at::manual_seed(seed);
    try {
      out = get_inputs.forward({});
    } catch (const c10::Error& e) {
      throw Error(where + ": get_inputs failed: " + e.what_without_backtrace());
    }
  }
  std::vector<c10::IValue> values;
  if (out.isTuple())
    for (const auto& e : out.toTupleRef().elements()) values.push_back(e);
  else if (out.isList())
    for (const auto& e : out.toListRef()) values.push_back(e);
  else
    throw Error(where + ": get_inputs did not return a list");
  return values;
}

// One tensor input from its recorded spec; scripts/kbtask.py make_input()
// is the same sequence of calls, so Python and C++ agree value for value
// (on the CPU; on a GPU the same calls draw from the device's generator).
at::Tensor specTensor(const InputSpec& s, at::Generator& gen, c10::Device device) {
  at::ScalarType dtype = parseDtype(s.dtype);
  bool is_float = at::isFloatingType(dtype);
  at::ScalarType draw = (dtype == at::kDouble) ? at::kDouble : at::kFloat;
  auto opts = at::TensorOptions().dtype(draw).device(device);
  at::IntArrayRef shape(s.shape);
  at::Tensor t;
  if (s.distribution == "normal") {
    t = at::randn(shape, gen, opts);
    if (s.b != 1.0) t.mul_(s.b);
    if (s.a != 0.0) t.add_(s.a);
  } else if (s.distribution == "uniform") {
    t = at::rand(shape, gen, opts);
    if (s.b - s.a != 1.0) t.mul_(s.b - s.a);
    if (s.a != 0.0) t.add_(s.a);
  } else if (s.distribution == "randint") {
    t = at::randint(static_cast<int64_t>(s.a), static_cast<int64_t>(s.b), shape, gen,
                    at::TensorOptions().dtype(at::kLong).device(device));
  } else if (s.distribution == "choice") {
    at::Tensor values = at::tensor(s.values, at::TensorOptions().dtype(at::kDouble)).to(device);
    at::Tensor idx = at::randint(values.numel(), shape, gen, at::TensorOptions().dtype(at::kLong).device(device));
    t = values.index_select(0, idx.flatten()).view(shape);
  } else if (s.distribution == "bernoulli") {
    t = at::rand(shape, gen, at::TensorOptions().dtype(at::kFloat).device(device)).lt(s.a);
  } else if (s.distribution == "constant") {
    t = at::full(shape, s.a, at::TensorOptions().dtype(is_float ? draw : at::kDouble).device(device));
  } else {
    throw Error("unknown distribution " + s.distribution);
  }
  return t.to(dtype);
}

namespace {

void flattenInto(const c10::IValue& v, std::vector<at::Tensor>& out) {
  if (v.isTensor()) {
    out.push_back(v.toTensor());
  } else if (v.isTuple()) {
    for (const auto& e : v.toTupleRef().elements()) flattenInto(e, out);
  } else if (v.isList()) {
    for (const auto& e : v.toListRef()) flattenInto(e, out);
  } else if (v.isTensorList()) {
    for (const auto& t : v.toTensorVector()) out.push_back(t);
  } else {
    throw Error("reference output holds a " + v.tagKind() + ", not a tensor");
  }
}

std::vector<at::Tensor> tensorsOf(const std::vector<c10::IValue>& inputs) {
  std::vector<at::Tensor> out;
  for (const auto& v : inputs)
    if (v.isTensor()) out.push_back(v.toTensor());
  return out;
}

}  // namespace

// ---- Reference ----

struct Reference::Impl {
  std::string where;
  bool tensors_only = false;  // task.json reference_args == "tensors"
  c10::Device device = c10::Device(c10::kCPU);
  mutable torch::jit::Module module;
};

std::vector<std::string> Reference::opKinds() const {
  std::shared_ptr<torch::jit::Graph> graph = impl_->module.get_method("forward").graph()->copy();
  inlineAllCalls(*graph);
  std::set<std::string> kinds;
  std::function<void(torch::jit::Block*)> walk = [&](torch::jit::Block* block) {
    for (torch::jit::Node* n : block->nodes()) {
      kinds.insert(n->kind().toQualString());
      for (torch::jit::Block* b : n->blocks()) walk(b);
    }
  };
  walk(graph->block());
  return {kinds.begin(), kinds.end()};
}

c10::IValue Reference::forward(const std::vector<c10::IValue>& inputs) const {
  torch::NoGradGuard no_grad;
  try {
    if (!impl_->tensors_only) return impl_->module.forward(inputs);
    std::vector<c10::IValue> tensors;
    for (const auto& v : inputs)
      if (v.isTensor()) tensors.push_back(v);
    return impl_->module.forward(tensors);
  } catch (const c10::Error& e) {
    throw Error(impl_->where + ": reference forward failed: " + e.what_without_backtrace());
  }
}

std::vector<at::Tensor> Reference::run(const std::vector<c10::IValue>& inputs) const {
  return flattenOutputs(forward(inputs));
}

std::vector<NamedTensor> Reference::state() const {
  std::vector<NamedTensor> out;
  for (const auto& p : impl_->module.named_parameters(/*recurse=*/true))
    out.push_back({p.name, p.value, false});
  for (const auto& b : impl_->module.named_buffers(/*recurse=*/true))
    out.push_back({b.name, b.value, true});
  return out;
}

c10::Device Reference::device() const { return impl_->device; }

Reference Reference::inFloat64() const {
  Reference r;
  r.impl_ = std::make_shared<Impl>(*impl_);
  r.impl_->module = impl_->module.clone();
  r.impl_->module.to(at::kDouble);
  return r;
}

// ---- CompiledBaseline ----

struct CompiledBaseline::Impl {
  std::string where;
  std::string arch;
  c10::Device device = c10::Device(c10::kCPU);
  std::unique_ptr<torch::inductor::AOTIModelPackageLoader> loader;
  std::unique_ptr<Reference> weights;  // owns the tensors given to load_constants
};

std::vector<at::Tensor> CompiledBaseline::run(const std::vector<c10::IValue>& inputs) const {
  torch::NoGradGuard no_grad;
  try {
    return impl_->loader->run(tensorsOf(inputs));
  } catch (const c10::Error& e) {
    throw Error(impl_->where + ": compiled baseline failed: " + e.what_without_backtrace());
  } catch (const std::exception& e) {
    throw Error(impl_->where + ": compiled baseline failed: " + e.what());
  }
}

c10::Device CompiledBaseline::device() const { return impl_->device; }
std::string CompiledBaseline::arch() const { return impl_->arch; }

// ---- Task ----

struct Task::Cache {
  std::mutex mutex;
  bool loaded = false;
  torch::jit::Module generator;  // inputs.pt, when the generator is scripted
  std::map<uint64_t, std::vector<c10::IValue>> prefetched;  // CPU input sets, taken once
};

Task Task::open(const fs::path& dir) { return Task(openBundle(dir)); }

Task::Task(TaskBundle bundle) : bundle_(std::move(bundle)), cache_(std::make_shared<Cache>()) {}

std::size_t Task::prefetchInputs(const std::vector<uint64_t>& seeds, uint64_t max_bytes) const {
  auto keep = [&](uint64_t seed, std::vector<c10::IValue> set) {
    std::lock_guard<std::mutex> lock(cache_->mutex);
    cache_->prefetched[seed] = std::move(set);
  };
  if (info().generator == "scripted") {
    // get_inputs() draws from the global CPU generator under a lock: its sets
    // come one at a time, and their size is known only once made.
    std::size_t count = 0;
    uint64_t bytes = 0;
    std::set<uint64_t> done;
    for (uint64_t seed : seeds) {
      if (!done.insert(seed).second) continue;
      std::vector<c10::IValue> set = makeInputs(seed, c10::Device(c10::kCPU));
      uint64_t size = 0;
      for (const auto& v : set)
        if (v.isTensor()) size += v.toTensor().nbytes();
      if (count > 0 && bytes + size > max_bytes) break;
      bytes += size;
      keep(seed, std::move(set));
      ++count;
    }
    return count;
  }
  // A spec generator's sets have known sizes and independent generators:
  // made on several threads at once.
  uint64_t per_set = 0;
  for (const InputSpec& s : info().inputs)
    if (s.kind == "tensor") {
      uint64_t n = c10::elementSize(parseDtype(s.dtype));
      for (int64_t d : s.shape) n *= static_cast<uint64_t>(d);
      per_set += n;
    }
  std::vector<uint64_t> todo;
  uint64_t planned = 0;
  for (uint64_t seed : seeds) {
    if (std::find(todo.begin(), todo.end(), seed) != todo.end()) continue;
    if (!todo.empty() && planned + per_set > max_bytes) break;
    todo.push_back(seed);
    planned += per_set;
  }
  std::vector<std::vector<c10::IValue>> made(todo.size());
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i; (i = next++) < todo.size();) made[i] = makeInputs(todo[i], c10::Device(c10::kCPU));
  };
  std::size_t threads = std::min<std::size_t>({todo.size(), 8, std::max(1u, std::thread::hardware_concurrency())});
  std::vector<std::thread> pool;
  std::exception_ptr failure;
  std::mutex failure_mutex;
  for (std::size_t t = 1; t < threads; ++t)
    pool.emplace_back([&] {
      try {
        work();
      } catch (...) {
        std::lock_guard<std::mutex> lock(failure_mutex);
        failure = std::current_exception();
      }
    });
  try {
    work();
  } catch (...) {
    std::lock_guard<std::mutex> lock(failure_mutex);
    failure = std::current_exception();
  }
  for (auto& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
  for (std::size_t i = 0; i < todo.size(); ++i) keep(todo[i], std::move(made[i]));
  return todo.size();
}

std::vector<c10::IValue> Task::makeInputs(uint64_t seed, c10::Device device) const {
  std::vector<c10::IValue> cpu;
  {
    std::lock_guard<std::mutex> lock(cache_->mutex);
    auto it = cache_->prefetched.find(seed);
    if (it != cache_->prefetched.end()) {
      cpu = std::move(it->second);
      cache_->prefetched.erase(it);
    }
  }
  // A prefetched set was made by this function: already a domain draw
  // where the seed asks for one.
  const bool fresh = cpu.empty();
  const uint64_t draw = generatorSeed(seed);
  if (!fresh) {
  } else if (info().generator == "scripted") {
    torch::jit::Module* gen = nullptr;
    {
      std::lock_guard<std::mutex> lock(cache_->mutex);
      if (!cache_->loaded) {
        try {
          cache_->generator = torch::jit::load(bundle_.inputsPt().string(), c10::Device(c10::kCPU));
        } catch (const c10::Error& e) {
          throw Error(bundle_.inputsPt().string() + ": cannot load the input generator: " +
                      e.what_without_backtrace());
        }
        cache_->loaded = true;
      }
      gen = &cache_->generator;
    }
    // get_inputs() draws from torch's default CPU generator, as in Python.
    cpu = runGetInputs(*gen, draw, bundle_.inputsPt().string());
  } else {
    at::Generator gen = at::detail::createCPUGenerator(draw);
    cpu = specInputs(info().inputs, gen, c10::Device(c10::kCPU));
  }
  if (fresh) applyDomainDraw(cpu, seed, info().reference_args != "tensors");
  if (device.is_cpu()) return cpu;
  std::vector<c10::IValue> out;
  out.reserve(cpu.size());
  for (auto& v : cpu) out.push_back(v.isTensor() ? c10::IValue(v.toTensor().to(device)) : v);
  return out;
}

Reference Task::reference(c10::Device device) const {
  plainInterpreter();
  Reference r;
  r.impl_ = std::make_shared<Reference::Impl>();
  r.impl_->where = bundle_.referencePt().string();
  r.impl_->device = device;
  r.impl_->tensors_only = info().reference_args == "tensors";
  try {
    r.impl_->module = torch::jit::load(bundle_.referencePt().string(), device);
  } catch (const c10::Error& e) {
    throw Error(bundle_.referencePt().string() + ": cannot load the reference: " + e.what_without_backtrace());
  }
  return r;
}

CompiledBaseline Task::compiled(c10::Device device) const {
  std::string arch = archOf(device);
  if (auto why = checkCompiled(bundle_, arch))
    throw Error(*why + " (build it with: kbsynth baseline " + bundle_.dir.string() + " --device " +
                (device.is_cpu() ? std::string("cpu") : std::string("cuda")) + ")");
  const Json& entry = info().json["compiled"][arch];
  std::string built_with = entry.value("torch_version", std::string());
  if (built_with != torchVersion())
    throw Error(bundle_.compiledPath(arch).string() + " was built by torch " + built_with +
                ", this is torch " + torchVersion() + " (rebuild: kbsynth baseline " +
                bundle_.dir.string() + " --force)");
  CompiledBaseline c;
  c.impl_ = std::make_shared<CompiledBaseline::Impl>();
  c.impl_->where = bundle_.compiledPath(arch).string();
  c.impl_->arch = arch;
  c.impl_->device = device;
  try {
    c.impl_->loader = std::make_unique<torch::inductor::AOTIModelPackageLoader>(
        c.impl_->where, "model", false, 1, device.is_cuda() ? device.index() : c10::DeviceIndex(-1));
  } catch (const c10::Error& e) {
    throw Error(c.impl_->where + ": cannot load the AOTInductor package: " + e.what_without_backtrace());
  } catch (const std::exception& e) {
    throw Error(c.impl_->where + ": cannot load the AOTInductor package: " + e.what());
  }
  // Packages built with weights outside the .so and outside the package get
  // the reference's own parameters and buffers, by FQN.
  // Only the constants the package lists are supplied: parameters that
  // inductor folded away (e.g. a bias cancelled by a training-mode
  // batch-norm) are not among them.
  if (entry.value("weights", std::string("in_package")) == "external") {
    c.impl_->weights = std::make_unique<Reference>(reference(device));
    std::unordered_map<std::string, at::Tensor> state, constants;
    for (auto& nt : c.impl_->weights->state()) state[nt.name] = nt.tensor;
    try {
      for (const std::string& fqn : c.impl_->loader->get_constant_fqns()) {
        auto it = state.find(fqn);
        if (it == state.end())
          throw Error(c.impl_->where + ": the package needs constant " + fqn +
                      ", which reference.pt does not have (rebuild with --weights in_package)");
        constants[fqn] = it->second;
      }
      c.impl_->loader->load_constants(constants, /*use_inactive=*/false, /*check_full_update=*/true);
    } catch (const c10::Error& e) {
      throw Error(c.impl_->where + ": cannot supply the weights: " + e.what_without_backtrace());
    }
  }
  return c;
}

std::string archOf(c10::Device device) {
  if (device.is_cpu()) return "cpu";
  if (device.is_cuda()) return cudaArch(device.has_index() ? device.index() : 0);
  throw Error("unsupported device " + device.str());
}

std::vector<at::Tensor> flattenOutputs(const c10::IValue& value) {
  std::vector<at::Tensor> out;
  flattenInto(value, out);
  return out;
}

double maxAbsDiff(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  const double inf = std::numeric_limits<double>::infinity();
  if (a.size() != b.size()) return inf;
  double worst = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].sizes() != b[i].sizes() || a[i].scalar_type() != b[i].scalar_type()) return inf;
    // In chunks, so that GB-sized outputs need no GB-sized float64 copies.
    constexpr int64_t kChunk = int64_t(1) << 24;
    at::Tensor fa = a[i].detach().reshape(-1), fb = b[i].detach().reshape(-1);
    for (int64_t start = 0; start < fa.numel(); start += kChunk) {
      int64_t len = std::min(kChunk, fa.numel() - start);
      at::Tensor x = fa.narrow(0, start, len).to(at::kCPU, at::kDouble);
      at::Tensor y = fb.narrow(0, start, len).to(at::kCPU, at::kDouble);
      // Non-finite values must match exactly (NaN with NaN, an infinity
      // with the same infinity); any other disagreement is +inf, never NaN,
      // so that callers folding with std::max or comparing with <= cannot
      // lose it.
      at::Tensor nan_x = x.isnan(), nan_y = y.isnan();
      if (!nan_x.equal(nan_y)) return inf;
      at::Tensor d = (x - y).abs().masked_fill(nan_x, 0.0);
      // Equal infinities differ by NaN: count them as equal.
      d = d.masked_fill(x.eq(y), 0.0);
      if (d.isnan().any().item<bool>()) return inf;
      worst = std::max(worst, d.max().item<double>());
    }
  }
  return worst;
}

std::vector<NamedTensor> loadNamedTensors(const fs::path& path) {
  std::vector<NamedTensor> out;
  try {
    torch::jit::Module m = torch::jit::load(path.string(), c10::Device(c10::kCPU));
    for (const auto& b : m.named_buffers(/*recurse=*/true)) out.push_back({b.name, b.value, true});
  } catch (const c10::Error& e) {
    throw Error(path.string() + ": cannot load: " + e.what_without_backtrace());
  }
  return out;
}

void synchronize(c10::Device device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.has_index() ? device.index() : -1);
}

double timeCallsMs(const std::function<void()>& fn, c10::Device device, int warmup, int iters,
                   int repeats) {
  if (iters < 1 || repeats < 1) throw UsageError("timeCallsMs: iters and repeats must be positive");
  for (int i = 0; i < warmup; ++i) fn();
  synchronize(device);
  std::vector<double> rounds;
  for (int r = 0; r < repeats; ++r) {
    synchronize(device);
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) fn();
    synchronize(device);
    auto t1 = std::chrono::steady_clock::now();
    rounds.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count() / iters);
  }
  std::sort(rounds.begin(), rounds.end());
  size_t n = rounds.size();
  return n % 2 ? rounds[n / 2] : 0.5 * (rounds[n / 2 - 1] + rounds[n / 2]);
}

std::string torchVersion() {
  return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
         std::to_string(TORCH_VERSION_PATCH);
}

void useFullFloat32() {
  at::globalContext().setAllowTF32CuDNN(false);
  at::globalContext().setAllowTF32CuBLAS(false);
}

}  // namespace kb::task
