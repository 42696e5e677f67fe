// A task bundle, loaded through LibTorch: inputs for a seed on a device, the
// reference module (the eager baseline), the reference's parameters and
// buffers by state_dict name (what a solution sees through kb/solution.h),
// and the torch.compile baseline (an AOTInductor package).
//
// This header is kept light (ATen's IValue, about 3 s to parse); the heavy
// torch/script.h and the AOTInductor loader live in task.cpp only.
//
// Typical use (kbcheck verify):
//
//   kb::task::Task task = kb::task::Task::open("tasks/kernelbench/level1/19_ReLU");
//   c10::Device dev = c10::Device("cuda:0");
//   kb::task::Reference ref = task.reference(dev);
//   for (uint64_t seed : task.info().correctness_seeds) {
//     std::vector<c10::IValue> x = task.makeInputs(seed, dev);
//     std::vector<at::Tensor> want = ref.run(x);
//     ... give x and ref.state() to the solution, compare ...
//   }
//
// Threading: a Reference or CompiledBaseline may be used by one thread at a
// time. makeInputs() for a scripted generator reseeds torch's default CPU
// generator under a process-wide lock; spec generators use a private
// generator and are thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <ATen/core/Generator.h>
#include <ATen/core/ivalue.h>

#include "task/bundle.h"

namespace torch::jit {
struct Module;
}

namespace kb::task {

// A parameter or buffer of the reference module.
struct NamedTensor {
  std::string name;  // state_dict name, e.g. "conv.weight", "bn.running_mean"
  at::Tensor tensor;
  bool buffer = false;  // false: nn.Parameter
};

// The reference module (reference.pt) on one device: the eager baseline.
class Reference {
 public:
  // Runs forward and returns the outputs flattened (a tensor output gives
  // one element; tuples and lists are spread in order). Scalars in the
  // output are an error (kb::Error). No autograd is recorded.
  std::vector<at::Tensor> run(const std::vector<c10::IValue>& inputs) const;
  // forward() as the module returns it.
  c10::IValue forward(const std::vector<c10::IValue>& inputs) const;
  // The operators the forward graph calls, inlined through submodules
  // ("aten::linear", "aten::relu", ...), sorted and unique: what kbprof's
  // provenance check reads to decide which libraries the task's op class
  // allows (cuBLAS for GEMMs, cuDNN for convolutions).
  std::vector<std::string> opKinds() const;
  // Parameters then buffers, with their state_dict names, on device(). These
  // are the module's own tensors (not copies): do not write to them.
  std::vector<NamedTensor> state() const;
  c10::Device device() const;
  // A copy whose floating parameters and buffers are float64: run on
  // float64 inputs, it estimates the float32 reference's own rounding error
  // (verify/compare.cpp). Ops that insist on float32 make run() throw.
  Reference inFloat64() const;

 private:
  friend class Task;
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

// The torch.compile baseline: compiled/<arch>.pt2 loaded by
// torch::inductor::AOTIModelPackageLoader. Only tensor inputs are passed
// (scalars were specialised at export time); outputs come flattened.
class CompiledBaseline {
 public:
  std::vector<at::Tensor> run(const std::vector<c10::IValue>& inputs) const;
  c10::Device device() const;
  std::string arch() const;  // "cpu", "sm_90", ...

 private:
  friend class Task;
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

class Task {
 public:
  // openBundle(dir) (validation, clear errors), nothing loaded yet.
  static Task open(const std::filesystem::path& dir);
  explicit Task(TaskBundle bundle);

  const TaskBundle& bundle() const { return bundle_; }
  const TaskInfo& info() const { return bundle_.info; }
  const std::string& id() const { return bundle_.info.id; }

  // The inputs of get_inputs() for `seed`, in order, tensors on `device`
  // (made on the CPU, then copied, so the values do not depend on the
  // device). Fresh tensors every call. Same seed, same values. A domain
  // seed (bundle.h isDomainSeed) gives get_inputs' draw of its generator
  // seed moved into the operator's domain (applyDomainDraw, on the CPU).
  std::vector<c10::IValue> makeInputs(uint64_t seed, c10::Device device) const;

  // Makes the CPU input sets of `seeds` ahead of need, several at once on
  // CPU threads (the generators are single-threaded and a 2048x2048 pair
  // takes ~50 ms), keeping at most `max_bytes` of tensors (the first seed
  // always). makeInputs(seed, ...) then takes the set (once) instead of
  // making it; the values are the same. Returns how many sets were made.
  std::size_t prefetchInputs(const std::vector<uint64_t>& seeds, uint64_t max_bytes = 1ull << 30) const;

  // Loads reference.pt onto `device` (a fresh module each call). Throws
  // kb::Error with the bundle path when the file cannot be loaded.
  Reference reference(c10::Device device) const;

  // Loads compiled/<arch of device>.pt2. Throws kb::Error saying what to run
  // (`kbsynth baseline`) when the package is missing, stale (other torch
  // version) or built for another architecture.
  CompiledBaseline compiled(c10::Device device) const;

 private:
  struct Cache;  // the loaded input generator, shared by copies
  TaskBundle bundle_;
  std::shared_ptr<Cache> cache_;
};

// One tensor input drawn from its recorded spec with `gen` (a generator of
// `device`), made on `device`. On the CPU the same calls as
// scripts/kbtask.py make_input(), value for value.
at::Tensor specTensor(const InputSpec& spec, at::Generator& gen, c10::Device device);

// One input set drawn from recorded specs with `gen` (a generator of
// `device`): tensors by specTensor, in order; scalars as recorded.
std::vector<c10::IValue> specInputs(const std::vector<InputSpec>& specs, at::Generator& gen, c10::Device device);

// Inputs beyond the generator (bundle.h isDomainSeed): for a domain seed,
// moves every floating tensor of `inputs` (as get_inputs drew them from the
// seed's generator seed) into the operator's wider domain, in place, where
// the tensor lies (CPU or GPU, ATen ops only), the same values for the same
// seed, tensors and device. Per floating tensor, from the whole seed:
//   - a tensor of a few values (at most 16 distinct in an even sample of up
//     to 4096 elements, and at most half the sample) is redrawn uniformly
//     over [min, max] of its values ([c/2, 2c] for a constant c > 0, [2c,
//     c/2] for c < 0, [-1, 1] for zeros): signs and bounds are kept, the
//     values are continuous;
//   - every one is multiplied by 2^u, u uniform in [-3, 3] (in [-3, 1] for
//     float16, whose range ends at 65504): positive, so a sign or
//     positivity domain (log, sqrt) stays valid.
// The memory a tensor spans is transformed once: views of one storage
// (x and x.t(), an expanded row) keep their relation. Integer and bool
// tensors and scalars are untouched (indices, sizes, masks). No-op for a
// generator seed. The uniform draws use a private generator of the tensor's
// device seeded from the seed, never torch's global generators.
// `scalars`: float scalars are rescaled too (only where the reference takes
// them: a traced reference has get_inputs' scalars fixed inside it).
void applyDomainDraw(std::vector<c10::IValue>& inputs, uint64_t seed, bool scalars);

// A scripted get_inputs (inputs.pt) run once, with torch's default
// generators seeded with `seed` under torchSeedMutex(); its list or tuple
// as values. `where` names the program in errors.
std::vector<c10::IValue> runGetInputs(torch::jit::Module& get_inputs, uint64_t seed, const std::string& where);

// Held by whoever seeds torch's default generators and draws from them
// (a scripted get_inputs does), so that two threads never interleave.
std::mutex& torchSeedMutex();

// The arch name of compiled/<arch>.pt2 for a device: "cpu" or "sm_XY".
std::string archOf(c10::Device device);

// Flattens a forward() result into tensors (see Reference::run).
std::vector<at::Tensor> flattenOutputs(const c10::IValue& value);

// Largest |a - b| over all elements of matching outputs (compared in
// float64 on the CPU); +inf when the counts, shapes or dtypes differ, or
// when non-finite values disagree (a NaN in one and not the other, an
// infinity against anything but the same infinity). Never NaN.
double maxAbsDiff(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b);

// The buffers of a TorchScript file by name (what scripts/expected.py
// writes), on the CPU. Throws kb::Error naming the file.
std::vector<NamedTensor> loadNamedTensors(const std::filesystem::path& path);

// Waits for all work queued on `device` (no-op on the CPU).
void synchronize(c10::Device device);

// Times `fn` the way scripts/expected.py times Python: `warmup` calls, then
// `repeats` rounds of `iters` back-to-back calls between synchronisations;
// returns the median round's mean milliseconds per call.
double timeCallsMs(const std::function<void()>& fn, c10::Device device, int warmup, int iters,
                   int repeats);

// The torch version LibTorch was built as, e.g. "2.11.0".
std::string torchVersion();

// Full float32 in this process: no TF32 in cuBLAS or cuDNN (LibTorch lets
// cuDNN convolutions and RNNs use TF32 by default). The reference computes
// so, and so do the candidate's worker and the baselines timed there, so
// that a torch operation a candidate keeps computes what the reference's
// does (scripts/kbtask.py sets the same for the Python scripts).
void useFullFloat32();

}  // namespace kb::task
