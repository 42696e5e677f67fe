// testdata/tasks-src/kernelbench/level1/1_ReLU_Scale with a bug: the scale
// by 2 is forgotten (the replay policy's wrong answer, variant v1, so that a
// GRPO group of the main job has rewards that differ).
#include <kb/solution.h>

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);
  if (ctx.failed()) return;
  kb::Tensor y = ctx.output(0, {x.size(0), x.size(1)});
  if (ctx.failed()) return;
  const float* X = x.data_as<float>();
  float* Y = y.data_as<float>();
  const int64_t n = x.size(0) * x.size(1);
  for (int64_t i = 0; i < n; ++i) Y[i] = X[i] > 0.0f ? X[i] : 0.0f;
}
