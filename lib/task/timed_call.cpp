// Timed calls' inputs and output digests (timed_call.h).
#include "task/timed_call.h"

#include <cstdio>
#include <optional>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/script.h>

#include "core/error.h"
#include "task/jit_inline.h"

namespace kb::task {
namespace {

at::Generator generatorFor(c10::Device device, uint64_t seed) {
  at::Generator gen = device.is_cpu()
                          ? at::detail::createCPUGenerator(seed)
                          : at::detail::getCUDAHooks().getNewGenerator(device.has_index() ? device.index() : 0);
  gen.set_current_seed(seed);
  return gen;
}

// Every op of the graph that takes a `device` argument (torch.randn,
// torch.zeros, torch.tensor, .to, ...) gets `device` instead of what
// get_inputs wrote (usually None, the CPU): the program then makes its
// tensors where the call runs, with the device's generator.
void placeOn(torch::jit::Graph& graph, torch::jit::Block* block, c10::Device device) {
  for (torch::jit::Node* node : block->nodes()) {
    for (torch::jit::Block* inner : node->blocks()) placeOn(graph, inner, device);
    const c10::FunctionSchema* schema = node->maybeSchema();
    if (!schema) continue;
    std::optional<int> at = schema->argumentIndexWithName("device");
    if (!at || static_cast<std::size_t>(*at) >= node->inputs().size()) continue;
    torch::jit::WithInsertPoint here(node);
    node->replaceInput(*at, graph.insertConstant(device));
  }
}

// Logical right shift of int64 words (ATen's shift is arithmetic).
at::Tensor shiftRight(const at::Tensor& z, int bits) {
  return z.bitwise_right_shift(bits).bitwise_and(static_cast<int64_t>((~0ull) >> bits));
}

}  // namespace

CallInputs::CallInputs(const Task& task, c10::Device device) : task_(&task), device_(device) {
  if (task.info().generator == "spec") {
    method_ = "spec";
    return;
  }
  // The scripted get_inputs, inlined and placed on the device. A program
  // that cannot run there (a CPU-only op, a tensor it moves back) is found
  // now, on a throwaway seed, and then runs on the CPU instead.
  const std::string path = task.bundle().inputsPt().string();
  auto module = std::make_shared<torch::jit::Module>();
  try {
    *module = torch::jit::load(path, device);
    std::shared_ptr<torch::jit::Graph> graph = module->get_method("forward").graph();
    inlineAllCalls(*graph);
    placeOn(*graph, graph->block(), device);
  } catch (const c10::Error& e) {
    throw Error(path + ": cannot load the input generator: " + e.what_without_backtrace());
  }
  generator_ = module;
  method_ = "scripted";
  if (device.is_cpu()) return;
  try {
    std::vector<c10::IValue> probe = runScripted(0);
    bool placed = probe.size() == task.info().inputs.size();
    for (const auto& v : probe)
      if (v.isTensor() && v.toTensor().device() != device) placed = false;
    if (placed) return;
  } catch (const std::exception&) {
  }
  method_ = "scripted-cpu";
}

std::vector<c10::IValue> CallInputs::runScripted(uint64_t seed) const {
  // get_inputs draws from torch's default generators (the device's now).
  return runGetInputs(*static_cast<torch::jit::Module*>(generator_.get()), seed,
                      task_->bundle().inputsPt().string() + " on " + device_.str());
}

std::vector<c10::IValue> CallInputs::make(uint64_t seed) const {
  // A domain seed (bundle.h): its generator seed's draw, moved into the
  // operator's domain where it was made (the CPU path does it there).
  if (method_ == "scripted-cpu") return task_->makeInputs(seed, device_);
  std::vector<c10::IValue> inputs;
  if (method_ == "scripted") {
    inputs = runScripted(generatorSeed(seed));
  } else {
    at::Generator gen = generatorFor(device_, generatorSeed(seed));
    inputs = specInputs(task_->info().inputs, gen, device_);
  }
  applyDomainDraw(inputs, seed, task_->info().reference_args != "tensors");
  return inputs;
}

uint64_t tensorDigest(const at::Tensor& t) {
  at::Tensor flat = t.detach().contiguous().reshape({-1});
  const uint64_t nbytes = static_cast<uint64_t>(flat.numel()) * flat.element_size();
  uint64_t total = nbytes * 0xD6E8FEB86659FD93ull + static_cast<uint64_t>(t.scalar_type());
  if (nbytes == 0) return total;
  at::Tensor bytes = flat.view(at::kByte);
  at::Tensor words = nbytes % 4 == 0 ? bytes.view(at::kInt) : bytes;
  const int64_t n = words.numel();
  const int64_t chunk = int64_t{1} << 26;  // bounds the int64 temporaries (512 MiB each)
  auto opts = at::TensorOptions().dtype(at::kLong).device(t.device());
  for (int64_t begin = 0; begin < n; begin += chunk) {
    int64_t len = std::min(chunk, n - begin);
    at::Tensor w = words.narrow(0, begin, len).to(at::kLong);
    if (words.scalar_type() == at::kInt) w = w.bitwise_and(static_cast<int64_t>(0xffffffffull));
    at::Tensor pos = at::arange(begin + 1, begin + 1 + len, opts);
    at::Tensor z = w + pos * static_cast<int64_t>(0x9E3779B97F4A7C15ull);
    z = (z ^ shiftRight(z, 30)) * static_cast<int64_t>(0xBF58476D1CE4E5B9ull);
    z = (z ^ shiftRight(z, 27)) * static_cast<int64_t>(0x94D049BB133111EBull);
    z = z ^ shiftRight(z, 31);
    total += static_cast<uint64_t>(z.sum().item<int64_t>());
  }
  return total;
}

std::string digestHex(uint64_t digest) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(digest));
  return buf;
}

}  // namespace kb::task
