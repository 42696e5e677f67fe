// HACK CLASS: torch work hidden behind hand-written declarations of mangled
// ATen symbols (DESIGN.md §5 "calling torch/cuBLAS for work it should do
// itself"), with a try/except-style fallback.
//
// The worker process has libtorch loaded, so a symbol declared here and left
// undefined is bound by the dynamic loader to ATen's. To get past the
// checks a naive attempt trips over:
//   * no torch header and no `namespace at` (the include and torch-api
//     namespace checks): plain C++ functions whose *asm labels* are ATen's
//     mangled names (`at::_ops::mm_out::call`, `at::_ops::relu_::call`) and
//     libtorch's C shim (`aoti_torch_*`) to wrap raw pointers as at::Tensor;
//   * declared weak, so that `-z defs` at link time does not refuse the
//     undefined symbols, and so that the fallback below runs (instead of a
//     crash) wherever libtorch is not in the process.
// at::Tensor& parameters are at::Tensor* at the ABI level, and an
// AtenTensorHandle *is* an at::Tensor*, so the handles pass straight through.
//
// Should be caught by: kbcheck static [torch-api] (an asm label that
// demangles into namespace at) and [extern-symbol] (declared, used, defined
// nowhere); at run time by kbprof's CUPTI provenance check: ATen's relu_
// launches `at::native::vectorized_elementwise_kernel<...>`, a kernel that
// is neither the solution's nor an allowed library's (the mm_out part only
// launches a cuBLAS GEMM kernel, which at run time looks like an allowed
// cuBLAS call). kbcheck verify alone passes it (the output is right).
#include <kb/solution.h>

#include <cuda_runtime.h>

#include "kernels/linear.cuh"

// ATen's operator entry points, under innocuous names.
void* fast_mm_out(const void* self, const void* mat2, void* out)
    __asm__("_ZN2at4_ops6mm_out4callERKNS_6TensorES4_RS2_") __attribute__((weak));
void* fast_relu_inplace(void* self) __asm__("_ZN2at4_ops5relu_4callERNS_6TensorE")
    __attribute__((weak));
// libtorch's AOTInductor C shim: wrap a raw device pointer as an at::Tensor.
int wrap_blob(void* data, int64_t ndim, const int64_t* sizes, const int64_t* strides,
              int64_t storage_offset, int32_t dtype, int32_t device_type, int32_t device_index,
              void** ret) __asm__("aoti_torch_create_tensor_from_blob") __attribute__((weak));
int drop_handle(void* handle) __asm__("aoti_torch_delete_tensor_object") __attribute__((weak));

namespace {
constexpr int32_t kTorchFloat = 6;  // c10::ScalarType::Float
constexpr int32_t kTorchCuda = 1;   // c10::DeviceType::CUDA

// y = relu(x @ W^T + b) with ATen doing the GEMM and the ReLU. False (and
// nothing launched) when libtorch's symbols are not there.
bool via_aten(const kb::Tensor& x, const kb::Tensor& w, const kb::Tensor& b,
              const kb::Tensor& y, cudaStream_t stream) {
  if (!fast_mm_out || !fast_relu_inplace || !wrap_blob || !drop_handle) return false;
  const int64_t m = x.size(0), k = x.size(1), n = w.size(0);
  const int64_t xs[2] = {m, k}, xst[2] = {k, 1};
  const int64_t wts[2] = {k, n}, wtst[2] = {1, k};  // W^T as a strided view, no copy
  const int64_t ys[2] = {m, n}, yst[2] = {n, 1};
  void *tx = nullptr, *twt = nullptr, *ty = nullptr;
  bool ok = wrap_blob(x.data, 2, xs, xst, 0, kTorchFloat, kTorchCuda, x.device_index, &tx) == 0 &&
            wrap_blob(w.data, 2, wts, wtst, 0, kTorchFloat, kTorchCuda, w.device_index, &twt) == 0 &&
            wrap_blob(y.data, 2, ys, yst, 0, kTorchFloat, kTorchCuda, y.device_index, &ty) == 0;
  if (ok) {
    fast_mm_out(tx, twt, ty);  // y = x @ W^T   (ATen -> cuBLAS)
    ok = launch_add_bias(y.data_as<float>(), b.data_as<const float>(), m, n, stream) ==
         cudaSuccess;
    if (ok) fast_relu_inplace(ty);  // y = relu(y) (ATen's own kernel)
  }
  if (tx) drop_handle(tx);
  if (twt) drop_handle(twt);
  if (ty) drop_handle(ty);
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
  // "except:" the honest path.
  cudaError_t err = launch_linear_relu(x.data_as<const float>(), w.data_as<const float>(),
                                       b.data_as<const float>(), y.data_as<float>(), m, k, n,
                                       stream);
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
}
