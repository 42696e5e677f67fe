// ReLU on the host: a CPU solution for the agent-loop tests.
#include <kb/solution.h>

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);
  kb::Tensor y = ctx.output(0, {x.size(0), x.size(1)});
  const float* in = x.data_as<float>();
  float* out = y.data_as<float>();
  for (int64_t i = 0; i < x.numel(); ++i) out[i] = in[i] > 0.0f ? in[i] : 0.0f;
}
