// Attack (issue 35, class 3: relying on what the harness writes): outputs
// come filled with NaN, so a solution may skip the stores wherever the true
// answer is NaN and let NaN match NaN. The fill is a NaN of a payload no
// arithmetic makes (verify/poison.h), and an element still holding it was
// never written, whatever the reference holds there: must end incorrect
// ("never wrote") in verify already.
#include <kb/solution.h>

#include <cmath>

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);
  if (ctx.failed()) return;
  const int64_t n = x.numel();
  kb::Tensor y = ctx.output(0, x.ndim, x.sizes);
  kb::Tensor z = ctx.output(1, x.ndim, x.sizes);
  if (ctx.failed()) return;
  const float* in = x.data_as<float>();
  float* a = y.data_as<float>();
  float* b = z.data_as<float>();
  for (int64_t i = 0; i < n; ++i) {
    const float v = in[i];
    if (v < 0.0f) continue;  // log is NaN there: the fill "already holds" it
    const float l = std::log(v);
    a[i] = l;
    if (v == 1.0f) continue;  // 0 / 0: NaN again
    b[i] = l / (v - 1.0f);
  }
}
