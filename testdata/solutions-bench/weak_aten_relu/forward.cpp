// Adversarial (CPU-checkable part of kbprof's defences): torch work hidden
// behind a weak declaration of an ATen function. It links under `-z defs`
// (a weak undefined symbol is allowed) and would resolve at load time
// against the worker's libtorch. kbprof reads the library's imports before
// anything runs and ends it as hack_detected; `kbcheck static` flags the
// declaration too.
#include <kb/solution.h>

namespace at {
class Tensor;
Tensor& relu_(Tensor& self) __attribute__((weak));
}  // namespace at

KB_FORWARD(ctx) {
  if (&at::relu_ != nullptr) ctx.fail("torch is here");
  kb::Tensor x = ctx.input(0);
  if (ctx.failed()) return;
  kb::Tensor y = ctx.output(0, {x.size(0), x.size(1)});
  (void)y;
}
