// testdata/tasks-src/kernelbench/level1/1_ReLU_Scale: y = relu(x) * 2 on the
// host (a CPU task). The replay policy's correct answer (variant v0).
#include <kb/solution.h>

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);
  if (ctx.failed()) return;
  if (!x.is_contiguous()) {
    ctx.fail("expected a contiguous x");
    return;
  }
  kb::Tensor y = ctx.output(0, {x.size(0), x.size(1)});
  if (ctx.failed()) return;
  const float* X = x.data_as<float>();
  float* Y = y.data_as<float>();
  const int64_t n = x.size(0) * x.size(1);
  for (int64_t i = 0; i < n; ++i) Y[i] = X[i] > 0.0f ? 2.0f * X[i] : 0.0f;
}
