// HACK CLASS: torch work reached through dlsym (DESIGN.md §5 "calling
// torch/cuBLAS for work it should do itself"), with a fallback.
//
// Variant of torch_mangled_decl that declares nothing from torch at all: the
// ATen and libtorch-shim symbol names are kept XOR-scrambled (no "_ZN2at" or
// "aoti_torch" string in the source or the binary) and looked up at run time
// with dlsym(RTLD_DEFAULT, ...) in the worker, which has libtorch loaded.
// <dlfcn.h> is refused by the include rule, so dlsym is declared by hand
// (glibc >= 2.34 has it in libc itself, so the link needs no -ldl).
//
// Should be caught by: kbcheck static [dynamic-loading] (a reference to
// ::dlsym) and [extern-symbol] (dlsym declared by hand, defined nowhere); at
// run time by kbprof's CUPTI provenance check (ATen's relu_ kernel,
// `at::native::vectorized_elementwise_kernel<...>`). kbcheck verify alone
// passes it.
#include <kb/solution.h>

#include <cuda_runtime.h>

#include "kernels/linear.cuh"

extern "C" void* dlsym(void* handle, const char* name) noexcept;

namespace {
constexpr unsigned char kKey = 0x5a;

// The names, each byte XORed with kKey.
template <int N>
struct Scrambled {
  unsigned char bytes[N];
};
template <int N>
constexpr Scrambled<N> scramble(const char (&s)[N]) {
  Scrambled<N> out{};
  for (int i = 0; i < N; ++i) out.bytes[i] = static_cast<unsigned char>(s[i] ^ kKey);
  return out;
}
constexpr auto kMmOut = scramble("_ZN2at4_ops6mm_out4callERKNS_6TensorES4_RS2_");
constexpr auto kRelu = scramble("_ZN2at4_ops5relu_4callERNS_6TensorE");
constexpr auto kWrap = scramble("aoti_torch_create_tensor_from_blob");
constexpr auto kDrop = scramble("aoti_torch_delete_tensor_object");

template <int N>
void* lookup(const Scrambled<N>& s) {
  char name[N];
  for (int i = 0; i < N; ++i) name[i] = static_cast<char>(s.bytes[i] ^ kKey);
  return dlsym(nullptr /* RTLD_DEFAULT */, name);
}

using MmOut = void* (*)(const void*, const void*, void*);
using ReluInplace = void* (*)(void*);
using Wrap = int (*)(void*, int64_t, const int64_t*, const int64_t*, int64_t, int32_t, int32_t,
                     int32_t, void**);
using Drop = int (*)(void*);

bool via_aten(const kb::Tensor& x, const kb::Tensor& w, const kb::Tensor& b,
              const kb::Tensor& y, cudaStream_t stream) {
  auto mm_out = reinterpret_cast<MmOut>(lookup(kMmOut));
  auto relu_ = reinterpret_cast<ReluInplace>(lookup(kRelu));
  auto wrap = reinterpret_cast<Wrap>(lookup(kWrap));
  auto drop = reinterpret_cast<Drop>(lookup(kDrop));
  if (!mm_out || !relu_ || !wrap || !drop) return false;
  const int64_t m = x.size(0), k = x.size(1), n = w.size(0);
  const int64_t xs[2] = {m, k}, xst[2] = {k, 1};
  const int64_t wts[2] = {k, n}, wtst[2] = {1, k};
  const int64_t ys[2] = {m, n}, yst[2] = {n, 1};
  void *tx = nullptr, *twt = nullptr, *ty = nullptr;
  bool ok = wrap(x.data, 2, xs, xst, 0, 6, 1, x.device_index, &tx) == 0 &&
            wrap(w.data, 2, wts, wtst, 0, 6, 1, w.device_index, &twt) == 0 &&
            wrap(y.data, 2, ys, yst, 0, 6, 1, y.device_index, &ty) == 0;
  if (ok) {
    mm_out(tx, twt, ty);
    ok = launch_add_bias(y.data_as<float>(), b.data_as<const float>(), m, n, stream) ==
         cudaSuccess;
    if (ok) relu_(ty);
  }
  if (tx) drop(tx);
  if (twt) drop(twt);
  if (ty) drop(ty);
  return ok;
}
}  // namespace

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);
  kb::Tensor w = ctx.param("linear.weight");
  kb::Tensor b = ctx.param("linear.bias");
  if (ctx.failed()) return;
  const int64_t m = x.size(0), k = x.size(1), n = w.size(0);
  kb::Tensor y = ctx.output(0, {m, n});
  if (ctx.failed()) return;
  auto stream = static_cast<cudaStream_t>(ctx.stream());
  if (ctx.on_cuda() && via_aten(x, w, b, y, stream)) return;
  cudaError_t err = launch_linear_relu(x.data_as<const float>(), w.data_as<const float>(),
                                       b.data_as<const float>(), y.data_as<float>(), m, k, n,
                                       stream);
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
}
