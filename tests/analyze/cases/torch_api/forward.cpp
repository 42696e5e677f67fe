// Evasions of "no torch": a hand-declared at::, using-directives, aliases,
// ADL, operators, macros, templates, lambdas, function pointers and a
// mangled-symbol extern.
#include <kb/solution.h>

namespace at {  // expect: [torch-api]
struct Tensor {
  void* impl;
};
Tensor relu(const Tensor& t);  // expect: [torch-api] [extern-symbol]
Tensor matmul(const Tensor& a, const Tensor& b);  // expect: [torch-api] [extern-symbol]
Tensor operator+(const Tensor& a, const Tensor& b);  // expect: [torch-api] [extern-symbol]
}  // namespace at

namespace T = at;  // expect: [torch-api]
using namespace at;  // expect: [torch-api]

#define MATMUL(a, b) at::matmul(a, b)

template <typename X>
X apply_relu(const X& x) {  // expect: [torch-api]
  return relu(x);  // expect: [torch-api]
}

extern "C" void* _ZN2at4_ops4relu4callERKNS_6TensorE(void*);  // expect: [torch-api] [extern-symbol]

KB_FORWARD(ctx) {
  T::Tensor a{nullptr}, b{nullptr};  // expect: [torch-api]
  Tensor c = MATMUL(a, b);  // expect: [torch-api]
  Tensor d = matmul(c, a);  // expect: [torch-api]
  Tensor e = a + d;  // expect: [torch-api]
  Tensor f = apply_relu(e);  // expect: [torch-api]
  auto lam = [](const at::Tensor& t) { return relu(t); };  // expect: [torch-api]
  Tensor (*fp)(const Tensor&) = &relu;  // expect: [torch-api]
  lam(fp(f));
  _ZN2at4_ops4relu4callERKNS_6TensorE(nullptr);
}
