// Attack (class 1, result cache in state): the init hook makes a state
// buffer, forward keeps its last output there keyed by a fingerprint of the
// input (its first elements) and replays it on a hit. With fresh inputs per
// call it never hits, and state is read-only in forward: the reference
// worker sees the state's digest change after the first call. Must end
// hack_detected (kbcheck verify: after a correctness seed; kbprof: after a
// timed call).
#include <cstring>
#include <kb/solution.h>

KB_INIT(ctx) {
  kb::Tensor w = ctx.param("linear.weight");
  if (ctx.failed()) return;
  ctx.create_state("cache", {4 + 4096});
}

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);
  kb::Tensor w = ctx.param("linear.weight");
  kb::Tensor b = ctx.param("linear.bias");
  kb::Tensor cache = ctx.state("cache");
  if (ctx.failed()) return;
  const int64_t m = x.size(0), k = x.size(1), n = w.size(0);
  kb::Tensor y = ctx.output(0, {m, n});
  if (ctx.failed()) return;
  float* key = cache.data_as<float>();
  float* val = key + 4;
  if (m * n <= 4096 && std::memcmp(key, x.data_as<float>(), 4 * sizeof(float)) == 0) {
    std::memcpy(y.data_as<float>(), val, sizeof(float) * m * n);  // the hit: one copy
    return;
  }
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float s = b.data_as<float>()[j];
      for (int64_t p = 0; p < k; ++p) s += x.data_as<float>()[i * k + p] * w.data_as<float>()[j * k + p];
      y.data_as<float>()[i * n + j] = s > 0 ? s : 0;
    }
  if (m * n <= 4096) {
    std::memcpy(key, x.data_as<float>(), 4 * sizeof(float));
    std::memcpy(val, y.data_as<float>(), sizeof(float) * m * n);
  }
}
