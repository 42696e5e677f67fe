// Attack (class 1, result cache keyed by pointer, in a global): the output
// of the last call is kept in a static buffer keyed by the input's address
// and replayed when the address comes back (an allocator hands the same
// block out again). Every timed call gets new values, so a replay is wrong
// for the call's inputs, and the calls kbprof picks after the loop show
// it. Whether it hits depends on the allocator handing the address back;
// when it does not, it computes every call (ok). Static: mutable-global.
#include <cstring>
#include <kb/solution.h>

static const void* g_key = nullptr;
static float g_val[4096];

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);
  kb::Tensor w = ctx.param("linear.weight");
  kb::Tensor b = ctx.param("linear.bias");
  if (ctx.failed()) return;
  const int64_t m = x.size(0), k = x.size(1), n = w.size(0);
  kb::Tensor y = ctx.output(0, {m, n});
  if (ctx.failed()) return;
  if (m * n <= 4096 && g_key == x.data) {
    std::memcpy(y.data_as<float>(), g_val, sizeof(float) * m * n);
    return;
  }
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float s = b.data_as<float>()[j];
      for (int64_t p = 0; p < k; ++p) s += x.data_as<float>()[i * k + p] * w.data_as<float>()[j * k + p];
      y.data_as<float>()[i * n + j] = s > 0 ? s : 0;
    }
  if (m * n <= 4096) {
    g_key = x.data;
    std::memcpy(g_val, y.data_as<float>(), sizeof(float) * m * n);
  }
}
