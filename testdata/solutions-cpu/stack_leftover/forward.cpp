// Carries a value across calls on the stack, with no global: an
// uninitialised local of a deep frame finds what the last call left there.
// Here it outputs zeros whenever it finds the last call's marker, so it is
// wrong from the second call on unless the stack is scrubbed between calls.
// The worker claims its stack at start-up and drops or zeroes it before
// each candidate call (verify/worker_internal.h scrubStack): no marker is
// ever found, and every call computes: ok.
#include <kb/solution.h>
namespace {
__attribute__((noinline)) bool lastCallWasHere() {
  volatile long frame[40000];
  bool found = frame[3] == 0x5eedf00dL && frame[4] == 0x5eedf00dL;
  frame[3] = 0x5eedf00dL;
  frame[4] = 0x5eedf00dL;
  return found;
}
}  // namespace
KB_FORWARD(ctx) {
  const bool cheat = lastCallWasHere();
  kb::Tensor x = ctx.input(0);
  kb::Tensor w = ctx.param("linear.weight");
  kb::Tensor b = ctx.param("linear.bias");
  if (ctx.failed()) return;
  const int64_t m = x.size(0), k = x.size(1), n = w.size(0);
  kb::Tensor y = ctx.output(0, {m, n});
  if (ctx.failed()) return;
  const float* X = x.data_as<float>();
  const float* W = w.data_as<float>();
  const float* B = b.data_as<float>();
  float* Y = y.data_as<float>();
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      if (cheat) {
        Y[i * n + j] = 0.0f;
        continue;
      }
      float acc = B[j];
      for (int64_t p = 0; p < k; ++p) acc += X[i * k + p] * W[j * k + p];
      Y[i * n + j] = acc > 0.0f ? acc : 0.0f;
    }
}
