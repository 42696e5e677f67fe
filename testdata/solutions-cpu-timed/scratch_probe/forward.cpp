// Legitimate, and a probe of the harness: every call's scratch must arrive
// poisoned (every byte 0xFF), never holding what an earlier call wrote into
// it. The call fails if it finds anything else, then writes a marker over
// its scratch that a harness reusing scratch unpoisoned would hand back.
// Must be ok in kbcheck verify and kbprof --device cpu.
#include <cstring>
#include <kb/solution.h>

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);
  kb::Tensor w = ctx.param("linear.weight");
  kb::Tensor b = ctx.param("linear.bias");
  if (ctx.failed()) return;
  const int64_t m = x.size(0), k = x.size(1), n = w.size(0);
  const size_t bytes = sizeof(float) * m * n;
  auto* acc = static_cast<unsigned char*>(ctx.scratch(bytes));
  if (ctx.failed() || !acc) return;
  for (size_t i = 0; i < bytes; ++i)
    if (acc[i] != 0xFF) {
      ctx.fail("scratch was not poisoned: it still holds an earlier call's bytes");
      return;
    }
  float* a = reinterpret_cast<float*>(acc);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float s = b.data_as<float>()[j];
      for (int64_t p = 0; p < k; ++p) s += x.data_as<float>()[i * k + p] * w.data_as<float>()[j * k + p];
      a[i * n + j] = s;
    }
  kb::Tensor y = ctx.output(0, {m, n});
  if (ctx.failed()) return;
  for (int64_t i = 0; i < m * n; ++i) y.data_as<float>()[i] = a[i] > 0 ? a[i] : 0;
  std::memset(acc, 0x42, bytes);  // what a stale scratch would show the next call
}
