// testdata/tasks-src/kernelbench/level1/4_Sum_Scalar_Dim:
// y = log1p(x).sum(dim, keepdim=True) for x [8, 32, 16] and the scalar input
// dim (get_inputs gives 1), on the host, summed in double.
#include <kb/solution.h>

#include <cmath>

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);
  const int64_t dim = ctx.input_int(1);
  if (ctx.failed()) return;
  if (!x.is_contiguous() || x.ndim != 3 || dim < 0 || dim > 2) {
    ctx.fail("expected a contiguous 3-d x and dim in 0..2");
    return;
  }
  const int64_t s[3] = {x.size(0), x.size(1), x.size(2)};
  int64_t out[3] = {s[0], s[1], s[2]};
  out[dim] = 1;
  kb::Tensor y = ctx.output(0, {out[0], out[1], out[2]});
  if (ctx.failed()) return;
  const float* X = x.data_as<float>();
  float* Y = y.data_as<float>();
  for (int64_t a = 0; a < out[0]; ++a)
    for (int64_t b = 0; b < out[1]; ++b)
      for (int64_t c = 0; c < out[2]; ++c) {
        double acc = 0.0;
        for (int64_t r = 0; r < s[dim]; ++r) {
          int64_t i[3] = {a, b, c};
          i[dim] = r;
          acc += std::log1p(static_cast<double>(X[(i[0] * s[1] + i[1]) * s[2] + i[2]]));
        }
        Y[(a * out[1] + b) * out[2] + c] = static_cast<float>(acc);
      }
}
