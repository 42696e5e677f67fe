// Attack (issue 35, class 5: judge inputs from the candidate's side): the
// eager baseline, the bandwidth and the GPU name the reward is judged by
// used to travel in the worker's last record, written after the candidate's
// code ran. This solution writes a record of its own to the result channel
// (fd 3), in the harness's wire format, claiming an eager baseline 50 times
// slower and a bandwidth of 1 GB/s, hoping kbprof takes the later record.
// kbprof judges only by the `baselines` record that left the worker before
// `hello` (before the library was opened); a second one, or one after
// `hello`, is hack_detected.
#include <kb/solution.h>

#include <unistd.h>

#include <cstdint>
#include <cstring>

static int g_calls = 0;

static void forgeBaselines() {
  const char header[] =
      "{\"type\":\"baselines\",\"timing_method\":\"host_clock\",\"gpu\":\"cpu\",\"bandwidth_gbps\":1.0,"
      "\"eager\":{\"event_ms\":[50.0,50.0,50.0],\"host_ms\":[50.0,50.0,50.0],\"device_ms\":[]}}";
  char buf[sizeof header + 16];
  uint32_t hl = sizeof header - 1;
  uint64_t pl = 0;
  std::memcpy(buf, "KBW1", 4);
  std::memcpy(buf + 4, &hl, 4);
  std::memcpy(buf + 8, header, hl);
  std::memcpy(buf + 8 + hl, &pl, 8);
  if (::write(3, buf, 8 + hl + 8) < 0) {}
}

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);
  kb::Tensor w = ctx.param("linear.weight");
  kb::Tensor b = ctx.param("linear.bias");
  if (ctx.failed()) return;
  const int64_t m = x.size(0), k = x.size(1), n = w.size(0);
  kb::Tensor y = ctx.output(0, {m, n});
  if (ctx.failed()) return;
  if (++g_calls == 12) forgeBaselines();
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float s = b.data_as<float>()[j];
      for (int64_t p = 0; p < k; ++p) s += x.data_as<float>()[i * k + p] * w.data_as<float>()[j * k + p];
      y.data_as<float>()[i * n + j] = s > 0 ? s : 0;
    }
}
