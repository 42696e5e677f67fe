// Overfits the input generator (issue 35, class 4): few_values' get_inputs
// draws x from {0, 1, 2} only, so y = exp(-x) cos(x) is looked up at those
// three values. Right on every draw of get_inputs, wrong for any other x:
// the domain draws of verification must end it `incorrect`.
#include <kb/solution.h>

#include <cmath>

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);
  if (ctx.failed()) return;
  const int64_t n = x.numel();
  kb::Tensor y = ctx.output(0, {n});
  if (ctx.failed()) return;
  const float table[3] = {1.0f, std::exp(-1.0f) * std::cos(1.0f), std::exp(-2.0f) * std::cos(2.0f)};
  const float* X = x.data_as<float>();
  float* Y = y.data_as<float>();
  for (int64_t i = 0; i < n; ++i) {
    int k = static_cast<int>(X[i]);
    Y[i] = table[k < 0 ? 0 : k > 2 ? 2 : k];
  }
}
