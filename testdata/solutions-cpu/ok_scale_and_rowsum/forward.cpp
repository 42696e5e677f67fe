// Correct: (x * scale, x.sum(dim=1)) -- two outputs and a scalar input.
#include <kb/solution.h>

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);
  const double scale = ctx.input_float(1);
  if (ctx.failed()) return;
  const int64_t m = x.size(0), n = x.size(1);
  kb::Tensor scaled = ctx.output(0, {m, n});
  kb::Tensor sums = ctx.output(1, {m});
  if (ctx.failed()) return;
  for (int64_t i = 0; i < m; ++i) {
    float s = 0;
    for (int64_t j = 0; j < n; ++j) {
      float v = x.data_as<float>()[i * n + j];
      scaled.data_as<float>()[i * n + j] = static_cast<float>(v * scale);
      s += v;
    }
    sums.data_as<float>()[i] = s;
  }
}
