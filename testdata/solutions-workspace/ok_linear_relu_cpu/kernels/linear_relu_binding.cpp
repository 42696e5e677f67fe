// The torch side of kernels/linear_relu.cpp: checks, the output's
// allocation, and the registration in cuda_extension.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>

#include "../binding_registry.h"

extern "C" void linear_relu_launcher(float* y, const float* x, const float* w, const float* b, int64_t m,
                                     int64_t k, int64_t n);

static torch::Tensor linear_relu_forward(torch::Tensor x, torch::Tensor w, torch::Tensor b) {
  TORCH_CHECK(!x.is_cuda() && !w.is_cuda() && !b.is_cuda(), "CPU tensors only");
  TORCH_CHECK(x.dtype() == torch::kFloat32 && w.dtype() == torch::kFloat32 && b.dtype() == torch::kFloat32,
              "float32 only");
  TORCH_CHECK(x.is_contiguous() && w.is_contiguous() && b.is_contiguous(), "contiguous tensors only");
  TORCH_CHECK(x.dim() == 2 && w.dim() == 2 && x.size(1) == w.size(1) && b.size(0) == w.size(0), "shapes");
  auto y = torch::empty({x.size(0), w.size(0)}, x.options());
  linear_relu_launcher(y.data_ptr<float>(), x.data_ptr<float>(), w.data_ptr<float>(), b.data_ptr<float>(),
                       x.size(0), x.size(1), w.size(0));
  return y;
}

static void register_linear_relu(pybind11::module& m) {
  m.def("linear_relu_forward", &linear_relu_forward, pybind11::arg("x"), pybind11::arg("w"), pybind11::arg("b"));
}

REGISTER_BINDING(linear_relu, register_linear_relu);
