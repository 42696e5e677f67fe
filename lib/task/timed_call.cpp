// Timed calls' inputs and output digests (timed_call.h).
#include "task/timed_call.h"

#include <cstdio>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/detail/CUDAHooksInterface.h>

#include "core/error.h"

namespace kb {
namespace {

// splitmix64: the seed's derived numbers, so that both workers get the same
// mixing choices from the same seed with no generator state between calls.
uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

at::Generator generatorFor(c10::Device device, uint64_t seed) {
  at::Generator gen = device.is_cpu()
                          ? at::detail::createCPUGenerator(seed)
                          : at::detail::getCUDAHooks().getNewGenerator(device.has_index() ? device.index() : 0);
  gen.set_current_seed(seed);
  return gen;
}

// Logical right shift of int64 words (ATen's shift is arithmetic).
at::Tensor shiftRight(const at::Tensor& z, int bits) {
  return z.bitwise_right_shift(bits).bitwise_and(static_cast<int64_t>((~0ull) >> bits));
}

}  // namespace

CallInputs::CallInputs(const Task& task, c10::Device device, std::vector<uint64_t> base_seeds)
    : task_(&task), device_(device), base_seeds_(std::move(base_seeds)) {
  method_ = task.info().generator == "spec" ? "spec" : "mix";
  if (method_ == "spec") return;
  if (base_seeds_.size() < 2) throw Error("timed calls of a scripted task need at least two base seeds");
  for (uint64_t s : base_seeds_) bases_.push_back(task.makeInputs(s, device));
}

std::vector<c10::IValue> CallInputs::make(uint64_t seed) const {
  std::vector<c10::IValue> out;
  if (method_ == "spec") {
    at::Generator gen = generatorFor(device_, seed);
    for (const InputSpec& s : task_->info().inputs) {
      if (s.kind == "tensor") out.emplace_back(specTensor(s, gen, device_));
      else if (s.kind == "int") out.emplace_back(static_cast<int64_t>(s.value));
      else if (s.kind == "float") out.emplace_back(s.value);
      else out.emplace_back(s.value != 0.0);
    }
    return out;
  }
  uint64_t state = seed;
  std::size_t n = bases_.size();
  std::size_t a = splitmix64(state) % n;
  std::size_t b = (a + 1 + splitmix64(state) % (n - 1)) % n;
  double c = static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53;
  const auto& A = bases_[a];
  const auto& B = bases_[b];
  for (std::size_t i = 0; i < A.size(); ++i) {
    if (!A[i].isTensor()) {
      out.push_back(A[i]);
      continue;
    }
    const at::Tensor& x = A[i].toTensor();
    if (at::isFloatingType(x.scalar_type()))
      out.emplace_back(at::lerp(B[i].toTensor(), x, c));  // c*A + (1-c)*B
    else
      out.emplace_back(x.clone());
  }
  return out;
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

}  // namespace kb
