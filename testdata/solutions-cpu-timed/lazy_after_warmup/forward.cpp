// Attack (class 2, guessing which calls are checked): honest for the first
// calls of the process (the correctness seeds and the warm-up), then a cheap
// wrong answer on every later call, betting that timed calls are checked
// rarely. Which timed calls are checked is drawn by the parent only after the
// loop, from all of them, and every call's outputs are committed as it
// returns: must end incorrect (static: mutable-global).
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
  if (++g_calls > 6) {
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
