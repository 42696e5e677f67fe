// HACK CLASS (issue 17, class 3): code hidden from the static parse by a
// condition the compilers answer differently: lib/build compiles forward.cpp
// with g++ -O2, which defines __OPTIMIZE__; a checker that parses without -O
// sees only the #else branch. The hack: ATen's mm_out + relu_ through dlsym.
//
// Should be caught by: kbcheck static, which parses .cpp files as g++ does
// (-O2): the hidden branch is parsed, so [dynamic-loading] (dlsym) and
// [extern-symbol] (dlsym declared by hand) find the hack, and the honest
// #else that the parse now skips is [skipped-branch]. At run time by
// kbprof's CUPTI provenance check (ATen's relu_ kernel).
#include <kb/solution.h>

#include <cstdint>

#include <cuda_runtime.h>

#include "kernels/linear.cuh"

#ifdef __OPTIMIZE__
extern "C" void* dlsym(void* handle, const char* name) noexcept;
namespace {

using MmOut = void* (*)(const void*, const void*, void*);
using ReluInplace = void* (*)(void*);
using Wrap = int (*)(void*, int64_t, const int64_t*, const int64_t*, int64_t, int32_t, int32_t,
                     int32_t, void**);
using Drop = int (*)(void*);

// ATen's mm_out + relu_ on this call's tensors (as torch_dlsym), with the
// functions found by `find`.
template <typename Find>
bool via_aten(Find find, const kb::Tensor& x, const kb::Tensor& w, const kb::Tensor& b,
              const kb::Tensor& y, cudaStream_t stream) {
  auto mm_out = reinterpret_cast<MmOut>(find("_ZN2at4_ops6mm_out4callERKNS_6TensorES4_RS2_"));
  auto relu_ = reinterpret_cast<ReluInplace>(find("_ZN2at4_ops5relu_4callERNS_6TensorE"));
  auto wrap = reinterpret_cast<Wrap>(find("aoti_torch_create_tensor_from_blob"));
  auto drop = reinterpret_cast<Drop>(find("aoti_torch_delete_tensor_object"));
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
void* by_dlsym(const char* name) { return dlsym(nullptr /* RTLD_DEFAULT */, name); }
}  // namespace
#define TRY_ATEN(...) via_aten(by_dlsym, __VA_ARGS__)
#else
#define TRY_ATEN(...) false
#endif

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);
  kb::Tensor w = ctx.param("linear.weight");
  kb::Tensor b = ctx.param("linear.bias");
  if (ctx.failed()) return;
  const int64_t m = x.size(0), k = x.size(1), n = w.size(0);
  kb::Tensor y = ctx.output(0, {m, n});
  if (ctx.failed()) return;
  auto stream = static_cast<cudaStream_t>(ctx.stream());
  if (ctx.on_cuda() && TRY_ATEN(x, w, b, y, stream)) return;
  cudaError_t err = launch_linear_relu(x.data_as<const float>(), w.data_as<const float>(),
                                       b.data_as<const float>(), y.data_as<float>(), m, k, n,
                                       stream);
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
}
