// Attack (issue 35, class 2: checks that sample): honest on six calls of
// every seven, a cheap wrong answer (zeros) on the seventh. When two of the
// N timed calls were compared, it passed about half the time and the median
// hid the cheap calls. Every timed call's outputs now travel in its commit
// and the reference checks each: must end incorrect ("timed call ...").
#include <kb/solution.h>

static int g_calls = 0;

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);
  kb::Tensor w = ctx.param("linear.weight");
  kb::Tensor b = ctx.param("linear.bias");
  if (ctx.failed()) return;
  const int64_t m = x.size(0), k = x.size(1), n = w.size(0);
  kb::Tensor y = ctx.output(0, {m, n});
  if (ctx.failed()) return;
  if (++g_calls % 7 == 0) {
    for (int64_t i = 0; i < m * n; ++i) y.data_as<float>()[i] = 0.0f;
    return;
  }
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float s = b.data_as<float>()[j];
      for (int64_t p = 0; p < k; ++p) s += x.data_as<float>()[i * k + p] * w.data_as<float>()[j * k + p];
      y.data_as<float>()[i * n + j] = s > 0 ? s : 0;
    }
}
